package tools

import (
	"strings"
	"testing"
)

func TestDu(t *testing.T) {
	t.Parallel()
	files := map[string]string{"f": "hello", "big": strings.Repeat("x", 100000), "d/x": "1", "d/sub/y": strings.Repeat("y", 9000), "e/": "", ".h/z": "z"}
	setup := fuSetup(fuSymlink("f", "lf"), fuSymlink("loop", "loop"), fuMkfifo("p"), fuSocket("s"),
		func(t *testing.T, dir string) {
			// A hard link is counted once.
			fuRun(t, dir, "ln", "big", "d/hard")
		})
	cases := []toolCase{
		{name: "default", args: []string{"du"}, files: files, setup: setup},
		{name: "a", args: []string{"du", "-a"}, files: files, setup: setup},
		{name: "s", args: []string{"du", "-s"}, files: files, setup: setup},
		{name: "sh", args: []string{"du", "-sh", ".", "d"}, files: files, setup: setup},
		{name: "h", args: []string{"du", "-h"}, files: files, setup: setup},
		{name: "c", args: []string{"du", "-c", "d", "e"}, files: files, setup: setup},
		{name: "b", args: []string{"du", "-b"}, files: files, setup: setup},
		{name: "ab", args: []string{"du", "-ab", "d"}, files: files, setup: setup},
		{name: "apparent", args: []string{"du", "--apparent-size", "-a", "d"}, files: files, setup: setup},
		{name: "k", args: []string{"du", "-k", "big"}, files: files, setup: setup},
		{name: "m", args: []string{"du", "-m", "big", "d"}, files: files, setup: setup},
		{name: "d1", args: []string{"du", "-d", "1"}, files: files, setup: setup},
		{name: "max-depth-0", args: []string{"du", "--max-depth=0", "d"}, files: files, setup: setup},
		{name: "a-d1", args: []string{"du", "-a", "-d1", "d"}, files: files, setup: setup},
		{name: "x", args: []string{"du", "-x", "-s"}, files: files, setup: setup},
		{name: "file-args", args: []string{"du", "f", "big", "lf", "p", "s", "loop"}, files: files, setup: setup},
		{name: "hardlink-args", args: []string{"du", "big", "d/hard"}, files: files, setup: setup},
		{name: "null", args: []string{"du", "-0", "-s", "d"}, files: files, setup: setup},
		{name: "missing", args: []string{"du", "nope", "f"}, files: files, setup: setup},
		{name: "trailing-slash", args: []string{"du", "d/"}, files: files, setup: setup},
		{name: "s-a-conflict", args: []string{"du", "-sa"}, files: files, setup: setup},
		{name: "bad-depth", args: []string{"du", "-d", "x"}, files: files, setup: setup},
		{name: "empty-dir", args: []string{"du", "e"}, files: files, setup: setup},
	}
	runSame(t, cases)
}

func TestDfRefused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFiles(t, root+"/workspace", map[string]string{"f": ""})
	out, _, status := runOurs(t, toolCase{args: []string{"df", "-h"}}, root)
	if status != 125 || out != "" {
		t.Errorf("df -h = %d %q, want 125 and no output (storage.Root has no Statfs)", status, out)
	}
	if err := tools["df"].Check([]string{"-h"}); err == nil {
		t.Errorf("df Check = nil, want unsupported")
	}
}
