package tools

import (
	"strings"
	"testing"
)

func TestCp(t *testing.T) {
	t.Parallel()
	files := map[string]string{"a": "alpha\n", "b": "beta\n", "d/x": "1", "d/sub/y": "2", "e/": "", "dst/": ""}
	links := fuSetup(fuSymlink("a", "la"), fuSymlink("d", "ld"), fuSymlink("none", "dangle"), fuChmod("a", 0o750))
	ls := []string{"ls", "-lR", "--time-style=+"}
	lsFull := []string{"ls", "-lR", "--full-time"}
	cases := []fuSeqCase{
		{name: "file", files: files, cmds: [][]string{{"cp", "a", "new"}, ls}},
		{name: "overwrite", files: files, cmds: [][]string{{"cp", "a", "b"}, ls}},
		{name: "into-dir", files: files, cmds: [][]string{{"cp", "a", "b", "dst"}, ls}},
		{name: "into-dir-slash", files: files, cmds: [][]string{{"cp", "a", "dst/"}, ls}},
		{name: "not-a-dir", files: files, cmds: [][]string{{"cp", "a", "b", "c"}}},
		{name: "missing-dest", files: files, cmds: [][]string{{"cp", "a"}}},
		{name: "no-args", files: files, cmds: [][]string{{"cp"}}},
		{name: "missing-src", files: files, cmds: [][]string{{"cp", "nope", "x"}}},
		{name: "dir-no-r", files: files, cmds: [][]string{{"cp", "d", "x"}}},
		{name: "r", files: files, cmds: [][]string{{"cp", "-r", "d", "copy"}, ls}},
		{name: "R-into", files: files, cmds: [][]string{{"cp", "-R", "d", "e"}, ls}},
		{name: "r-merge", files: files, cmds: [][]string{{"cp", "-r", "d", "copy"}, {"cp", "-r", "d/.", "copy"}, ls}},
		// GNU's result depends on directory order (it stops at its own copy);
		// a single entry per directory keeps the order fixed.
		{name: "into-itself", files: map[string]string{"d/sub/y": "2"}, cmds: [][]string{{"cp", "-r", "d", "d/sub"}},
			known: "GNU stops at its own copy in inode order, which differs between two trees made in parallel (TestCpIntoItself checks ours)"},
		{name: "same-file", files: files, cmds: [][]string{{"cp", "a", "a"}}},
		{name: "same-file-via-dir", files: files, cmds: [][]string{{"cp", "a", "."}}},
		{name: "dir-over-file", files: files, cmds: [][]string{{"cp", "-r", "d", "a"}}},
		{name: "file-over-dir", files: files, cmds: [][]string{{"cp", "a", "e"}, ls}},
		{name: "file-over-dir-T", files: files, cmds: [][]string{{"cp", "-T", "a", "e"}}},
		{name: "T", files: files, cmds: [][]string{{"cp", "-rT", "d", "e"}, ls}},
		{name: "T-extra", files: files, cmds: [][]string{{"cp", "-T", "a", "b", "e"}}},
		{name: "t", files: files, cmds: [][]string{{"cp", "-t", "dst", "a", "b"}, ls}},
		{name: "t-long", files: files, cmds: [][]string{{"cp", "--target-directory=dst", "-r", "d"}, ls}},
		{name: "t-not-dir", files: files, cmds: [][]string{{"cp", "-t", "a", "b"}}},
		{name: "v", files: files, cmds: [][]string{{"cp", "-v", "a", "b", "dst"}}},
		{name: "v-quoting", files: map[string]string{"q'uote": "", "x$y": "", "d/": ""}, cmds: [][]string{{"cp", "-v", "q'uote", "x$y", "d"}}},
		{name: "rv", files: map[string]string{"s/t/u": "x"}, cmds: [][]string{{"cp", "-rv", "s", "z"}}},
		{name: "n", files: files, cmds: [][]string{{"cp", "-n", "a", "b"}, {"cat", "b"}}},
		{name: "u-older", files: files, setup: fuSetup(fuMtime("a", fuOld), fuMtime("b", fuRecent)), cmds: [][]string{{"cp", "-u", "a", "b"}, {"cat", "b"}}},
		{name: "u-newer", files: files, setup: fuSetup(fuMtime("b", fuOld), fuMtime("a", fuRecent)), cmds: [][]string{{"cp", "-u", "a", "b"}, {"cat", "b"}}},
		{name: "p", files: files, setup: fuSetup(links, fuOldTimes), cmds: [][]string{{"cp", "-p", "a", "pa"}, lsFull}},
		{name: "mode-no-p", files: files, setup: links, cmds: [][]string{{"cp", "a", "pa"}, ls}},
		{name: "a", files: files, setup: fuSetup(links, fuOldTimes), cmds: [][]string{{"cp", "-a", "d", "ad"}, {"ls", "-lR", "--full-time", "ad"}}},
		{name: "a-symlinks", files: files, setup: links, cmds: [][]string{{"cp", "-a", "la", "ld", "dangle", "dst"}, {"ls", "-l", "--time-style=+", "dst"}}},
		{name: "r-symlinks", files: files, setup: links, cmds: [][]string{{"cp", "-r", "la", "ld", "dst"}, {"ls", "-l", "--time-style=+", "dst"}}},
		{name: "follow-symlink", files: files, setup: links, cmds: [][]string{{"cp", "la", "copy"}, ls}},
		{name: "L", files: files, setup: links, cmds: [][]string{{"cp", "-rL", "ld", "copy"}, ls}},
		{name: "P", files: files, setup: links, cmds: [][]string{{"cp", "-P", "la", "copy"}, ls}},
		{name: "d", files: files, setup: links, cmds: [][]string{{"cp", "-d", "la", "copy"}, ls}},
		{name: "l", files: files, cmds: [][]string{{"cp", "-l", "a", "hard"}, {"stat", "-c", "%h %n", "a", "hard"}}},
		{name: "l-exists", files: files, cmds: [][]string{{"cp", "-l", "a", "b"}}},
		{name: "lf-exists", files: files, cmds: [][]string{{"cp", "-lf", "a", "b"}, {"stat", "-c", "%h %n", "a", "b"}}},
		{name: "s", files: files, cmds: [][]string{{"cp", "-s", "a", "sym"}, ls}},
		{name: "s-relative-elsewhere", files: files, cmds: [][]string{{"cp", "-s", "a", "dst/sym"}}},
		{name: "preserve-links", files: files, cmds: [][]string{{"cp", "-l", "a", "d/hard"}, {"cp", "-a", "d", "copy"}, {"stat", "-c", "%h %n", "copy/hard", "copy/x"}}},
		{name: "preserve-mode", files: files, setup: links, cmds: [][]string{{"cp", "--preserve=mode", "a", "pm"}, ls}},
		{name: "no-preserve-mode", files: files, setup: links, cmds: [][]string{{"cp", "-a", "--no-preserve=mode", "a", "pm"}, ls}},
		{name: "f", files: files, setup: fuChmod("b", 0o444), cmds: [][]string{{"cp", "-f", "a", "b"}, {"cat", "b"}}},
		{name: "readonly-dest-root", files: files, setup: fuChmod("b", 0o444), cmds: [][]string{{"cp", "a", "b"}, {"cat", "b"}}},
		{name: "remove-destination", files: files, cmds: [][]string{{"cp", "--remove-destination", "a", "b"}, ls}},
		{name: "empty-file", files: map[string]string{"z": ""}, cmds: [][]string{{"cp", "z", "z2"}, {"ls", "-l", "--time-style=+"}}},
		{name: "big-file", files: map[string]string{"big": string(make([]byte, 3<<20))}, cmds: [][]string{{"cp", "big", "big2"}, {"ls", "-l", "--time-style=+"}}},
		{name: "fifo-refused", files: files, setup: fuMkfifo("p"), cmds: [][]string{{"cp", "p", "q"}}, known: "GNU blocks reading a FIFO; we refuse (exit 125)"},
		{name: "bad-option", files: files, cmds: [][]string{{"cp", "-Y", "a", "b"}}},
		{name: "dir-to-tmp-like", files: files, cmds: [][]string{{"cp", "-r", "d", "e/"}, {"ls", "-R", "e"}}},
		{name: "parents", files: map[string]string{"a/b/c.txt": "x", "dst/": ""}, cmds: [][]string{{"cp", "-v", "--parents", "a/b/c.txt", "dst"}, {"cp", "-v", "--parents", "a/b/c.txt", "dst"}, {"ls", "-lR", "--time-style=+", "dst"}}},
		{name: "parents-r-dot", files: map[string]string{"a/b/c.txt": "x", "dst/": ""}, cmds: [][]string{{"cp", "-rv", "--parents", "./a/b", "dst"}, {"ls", "-R", "dst"}}},
		{name: "parents-not-dir", files: map[string]string{"a/b/c.txt": "x"}, cmds: [][]string{{"cp", "--parents", "a/b/c.txt", "nodir"}}},
		{name: "parents-t", files: map[string]string{"a/b/c.txt": "x", "a/d": "y", "dst/": ""}, cmds: [][]string{{"cp", "--parents", "-t", "dst", "a/b/c.txt", "a/d"}, {"ls", "-R", "dst"}}},
		{name: "strip-trailing", files: files, cmds: [][]string{{"cp", "-r", "--strip-trailing-slashes", "d/", "z"}, ls}},
	}
	runDiffSeq(t, cases)
}

func TestCpUnsupported(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"cp", "p", "q"}, {"cp", "-r", "d", "q"}, {"cp", "-b", "a", "b"}, {"cp", "--reflink", "a", "b"}} {
		tc := toolCase{args: args}
		root := t.TempDir()
		writeFiles(t, root+"/workspace", map[string]string{"a": "x", "d/": ""})
		fuMkfifo("p")(t, root+"/workspace")
		fuMkfifo("d/p")(t, root+"/workspace")
		writeFiles(t, root+"/tmp", map[string]string{"k": ""})
		out, _, status := runOurs(t, tc, root)
		if status != 125 || out != "" {
			t.Errorf("%q = %d %q, want 125 and no output", args, status, out)
		}
		if err := tools["cp"].Check(args[1:]); err == nil && (args[1] == "-b" || args[1] == "--reflink") {
			t.Errorf("Check(%q) = nil, want unsupported", args)
		}
	}
}

func TestMv(t *testing.T) {
	t.Parallel()
	files := map[string]string{"a": "alpha\n", "b": "beta\n", "d/x": "1", "d/sub/y": "2", "e/": "", "dst/": ""}
	ls := []string{"ls", "-lR", "--time-style=+"}
	cases := []fuSeqCase{
		{name: "rename", files: files, cmds: [][]string{{"mv", "a", "new"}, ls}},
		{name: "overwrite", files: files, cmds: [][]string{{"mv", "a", "b"}, ls}},
		{name: "into-dir", files: files, cmds: [][]string{{"mv", "a", "b", "dst"}, ls}},
		{name: "dir-rename", files: files, cmds: [][]string{{"mv", "d", "z"}, ls}},
		{name: "dir-into-dir", files: files, cmds: [][]string{{"mv", "d", "e"}, ls}},
		{name: "into-own-child", files: files, cmds: [][]string{{"mv", "d", "d/sub"}}},
		{name: "into-itself-T", files: files, cmds: [][]string{{"mv", "-T", "d", "d/sub/q"}}},
		{name: "same", files: files, cmds: [][]string{{"mv", "a", "a"}}},
		{name: "missing", files: files, cmds: [][]string{{"mv", "nope", "x"}}},
		{name: "missing-dest-operand", files: files, cmds: [][]string{{"mv", "a"}}},
		{name: "not-a-dir", files: files, cmds: [][]string{{"mv", "a", "b", "c"}}},
		{name: "dir-over-file", files: files, cmds: [][]string{{"mv", "d", "a"}}},
		{name: "file-over-dir-T", files: files, cmds: [][]string{{"mv", "-T", "a", "e"}}},
		{name: "dir-over-empty-dir-T", files: files, cmds: [][]string{{"mv", "-T", "d", "e"}, ls}},
		{name: "dir-over-full-dir-T", files: files, cmds: [][]string{{"mv", "-T", "e", "d"}}},
		{name: "t", files: files, cmds: [][]string{{"mv", "-t", "dst", "a", "b"}, ls}},
		{name: "v", files: files, cmds: [][]string{{"mv", "-v", "a", "b", "dst"}}},
		{name: "n", files: files, cmds: [][]string{{"mv", "-n", "a", "b"}, ls}},
		{name: "f", files: files, cmds: [][]string{{"mv", "-f", "a", "b"}, ls}},
		{name: "u-older", files: files, setup: fuSetup(fuMtime("a", fuOld), fuMtime("b", fuRecent)), cmds: [][]string{{"mv", "-u", "a", "b"}, {"cat", "b"}}},
		{name: "u-newer", files: files, setup: fuSetup(fuMtime("b", fuOld), fuMtime("a", fuRecent)), cmds: [][]string{{"mv", "-u", "a", "b"}, {"cat", "b"}}},
		{name: "symlink", files: files, setup: fuSymlink("a", "la"), cmds: [][]string{{"mv", "la", "dst"}, ls}},
		{name: "fifo", files: files, setup: fuMkfifo("p"), cmds: [][]string{{"mv", "p", "q"}, ls}},
		{name: "trailing-slash", files: files, cmds: [][]string{{"mv", "d/", "z"}, ls}},
		{name: "bad-option", files: files, cmds: [][]string{{"mv", "-Y", "a", "b"}}},
	}
	runDiffSeq(t, cases)
}

// TestCpIntoItself checks that cp -r d d/sub ends, fails and says why.
func TestCpIntoItself(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root+"/workspace", map[string]string{"d/sub/y": "2", "d/x": "1"})
	out, errOut, status := runOurs(t, toolCase{args: []string{"cp", "-r", "d", "d/sub"}}, root)
	if status != 1 || out != "" || !strings.Contains(errOut, "into itself") {
		t.Errorf("cp -r d d/sub = %d %q %q, want 1 and an 'into itself' error", status, out, errOut)
	}
}
