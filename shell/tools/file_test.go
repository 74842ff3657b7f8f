package tools

import (
	"strings"
	"testing"
)

func TestFile(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"ascii": "hello\n", "utf8": "héllo\n", "empty": "", "nonl": "no newline", "crlf": "a\r\nb\r\n",
		"cr": "a\rb\r", "sh": "#!/bin/sh\necho hi\n", "bash": "#!/bin/bash\necho\n",
		"py": "#!/usr/bin/env python3\nprint(1)\n", "j.json": "{\"a\": 1, \"b\": [1,2]}\n", "arr.json": "[1, 2]\n",
		"bin": "\x00\x01\x02\xff", "long": strings.Repeat("x", 5000) + "\n", "tabs": "a\tb\n", "esc": "\x1b[31mred\n",
		"d/": "", "a b": "x\n", "gz-stdin": "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xcb\xc8\xe4\x02\x00\x7a\x7a\x6f\xed\x03\x00\x00\x00",
		"elf": "\x7fELF\x02\x01\x01", "latin1": "latin\xe9\n", "src.c": "#include <stdio.h>\nint main(){}\n",
	}
	setup := fuSetup(fuSymlink("ascii", "lnk"), fuSymlink("nowhere", "dangle"), fuMkfifo("fifo"), fuSocket("sock"), fuChmod("sh", 0o755),
		func(t *testing.T, dir string) {
			fuRun(t, dir, "sh", "-c", "printf 'hello gzip\\n' > named && touch -d @1600000000 named && gzip -9 named && mv named.gz named-gz")
		})
	cases := []toolCase{
		{name: "plain-types", args: []string{"file", "ascii", "utf8", "empty", "nonl", "crlf", "cr", "tabs", "esc", "long"}, files: files, setup: setup},
		{name: "scripts", args: []string{"file", "sh", "bash", "py"}, files: files, setup: setup},
		{name: "json", args: []string{"file", "j.json", "arr.json"}, files: files, setup: setup},
		{name: "special", args: []string{"file", "d", "lnk", "dangle", "fifo", "sock"}, files: files, setup: setup},
		{name: "L", args: []string{"file", "-L", "lnk"}, files: files, setup: setup},
		{name: "L-dangling", args: []string{"file", "-L", "dangle"}, files: files, setup: setup},
		{name: "b", args: []string{"file", "-b", "ascii", "d"}, files: files, setup: setup},
		{name: "N", args: []string{"file", "-N", "ascii", "utf8"}, files: files, setup: setup},
		{name: "binary-data", args: []string{"file", "bin"}, files: files, setup: setup},
		{name: "gzip-stdin", args: []string{"file", "gz-stdin"}, files: files, setup: setup},
		{name: "gzip-named", args: []string{"file", "named-gz"}, files: files, setup: setup},
		{name: "missing", args: []string{"file", "nope", "ascii"}, files: files, setup: setup},
		{name: "spaces", args: []string{"file", "a b"}, files: files, setup: setup},
		{name: "mime-type", args: []string{"file", "--mime-type", "ascii", "utf8", "bin", "empty", "d"}, files: files, setup: setup},
		{name: "mime", args: []string{"file", "-i", "ascii", "utf8", "bin", "empty", "d", "j.json"}, files: files, setup: setup},
		{name: "no-args", args: []string{"file"}, files: files, setup: setup},
	}
	fuRunDiff(t, cases)
}

func TestFileRefusesUnknown(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFiles(t, root+"/workspace", map[string]string{"elf": "\x7fELF\x02\x01\x01", "latin1": "latin\xe9\n", "src.c": "#include <stdio.h>\nint main(){}\n"})
	for _, f := range []string{"elf", "latin1", "src.c"} {
		out, _, status := runOurs(t, toolCase{args: []string{"file", "ascii", f}}, root)
		if status != 125 || out != "" {
			t.Errorf("file %s = %d %q, want 125 and no output", f, status, out)
		}
	}
}
