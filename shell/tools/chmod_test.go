package tools

import "testing"

func TestChmod(t *testing.T) {
	t.Parallel()
	files := map[string]string{"f": "x", "x": "#!/bin/sh\n", "d/sub/z": "1", "d/y": "2"}
	ls := []string{"ls", "-lR", "--time-style=+"}
	seq := func(args ...string) [][]string { return [][]string{args, ls} }
	setup := fuSetup(fuChmod("x", 0o755), fuSymlink("f", "lf"), fuSymlink("none", "dangle"))
	cases := []fuSeqCase{
		{name: "octal", files: files, cmds: seq("chmod", "600", "f")},
		{name: "octal-4", files: files, cmds: seq("chmod", "0750", "f")},
		{name: "u+x", files: files, cmds: seq("chmod", "u+x", "f")},
		{name: "go-r", files: files, cmds: seq("chmod", "go-r", "f")},
		{name: "a=r", files: files, cmds: seq("chmod", "a=r", "f")},
		{name: "plus-x", files: files, cmds: seq("chmod", "+x", "f")},
		{name: "X", files: files, setup: setup, cmds: seq("chmod", "-R", "a+X", "d", "f", "x")},
		{name: "multi-clause", files: files, cmds: seq("chmod", "u=rwx,g=rx,o=", "f")},
		{name: "copy-who", files: files, cmds: seq("chmod", "g=u", "f")},
		{name: "setuid", files: files, cmds: seq("chmod", "u+s,g+s", "x")},
		{name: "sticky", files: files, cmds: seq("chmod", "+t", "d")},
		{name: "octal-sticky", files: files, cmds: seq("chmod", "1777", "d")},
		{name: "R", files: files, cmds: seq("chmod", "-R", "700", "d")},
		{name: "v", files: files, cmds: seq("chmod", "-v", "644", "f", "d")},
		{name: "c", files: files, cmds: seq("chmod", "-c", "755", "f", "x")},
		{name: "minus-w-mode", files: files, cmds: seq("chmod", "-w", "f")},
		{name: "minus-x-mode", files: files, setup: setup, cmds: seq("chmod", "-x", "x")},
		{name: "equals-umask", files: files, cmds: seq("chmod", "=rwx", "f")},
		{name: "symlink-follow", files: files, setup: setup, cmds: seq("chmod", "600", "lf")},
		{name: "dangling", files: files, setup: setup, cmds: seq("chmod", "600", "dangle")},
		{name: "missing", files: files, cmds: seq("chmod", "600", "nope", "f")},
		{name: "missing-f", files: files, cmds: seq("chmod", "-f", "600", "nope")},
		{name: "bad-mode", files: files, cmds: seq("chmod", "u+q", "f")},
		{name: "no-file", files: files, cmds: seq("chmod", "600")},
		{name: "no-args", files: files, cmds: seq("chmod")},
		{name: "reference", files: files, setup: setup, cmds: seq("chmod", "--reference=x", "f")},
		{name: "dir-setgid-kept", files: files, cmds: [][]string{{"chmod", "2755", "d"}, {"chmod", "755", "d"}, ls}},
		{name: "R-symlinks", files: files, setup: fuSetup(fuSymlink("../f", "d/lnk")), cmds: seq("chmod", "-R", "o-r", "d")},
	}
	runDiffSeq(t, cases)
}
