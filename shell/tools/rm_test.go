package tools

import "testing"

func TestRm(t *testing.T) {
	t.Parallel()
	files := map[string]string{"f": "x", "g": "y", "d/sub/z": "1", "e/": "", "one/only": "1"}
	links := fuSetup(fuSymlink("d", "dl"), fuSymlink("loop", "loop"), fuSymlink("none", "dangle"), fuMkfifo("p"), fuSocket("s"))
	cases := []toolCase{
		{name: "file", args: []string{"rm", "f"}, files: files},
		{name: "many", args: []string{"rm", "f", "g"}, files: files},
		{name: "missing", args: []string{"rm", "nope"}, files: files},
		{name: "missing-f", args: []string{"rm", "-f", "nope", "f"}, files: files},
		{name: "dir-no-r", args: []string{"rm", "d"}, files: files},
		{name: "dir-d-empty", args: []string{"rm", "-d", "e"}, files: files},
		{name: "dir-d-full", args: []string{"rm", "-d", "d"}, files: files},
		{name: "r", args: []string{"rm", "-r", "d"}, files: files},
		{name: "R", args: []string{"rm", "-R", "d", "f"}, files: files},
		{name: "rf", args: []string{"rm", "-rf", "d", "nope"}, files: files},
		{name: "recursive-long", args: []string{"rm", "--recursive", "--force", "e"}, files: files},
		{name: "v", args: []string{"rm", "-v", "f", "g"}, files: files},
		{name: "rv-single", args: []string{"rm", "-rv", "one"}, files: files},
		{name: "dot", args: []string{"rm", "-rf", "."}, files: files},
		{name: "dotdot", args: []string{"rm", "-r", "d/.."}, files: files},
		{name: "root", args: []string{"rm", "-rf", "/"}, files: files},
		{name: "no-operand", args: []string{"rm"}, files: files},
		{name: "no-operand-f", args: []string{"rm", "-f"}, files: files},
		{name: "symlink-to-dir", args: []string{"rm", "dl"}, files: files, setup: links},
		{name: "symlink-loop", args: []string{"rm", "loop", "dangle"}, files: files, setup: links},
		{name: "fifo-socket", args: []string{"rm", "p", "s"}, files: files, setup: links},
		{name: "r-with-specials", args: []string{"rm", "-r", "d", "p", "s", "loop"}, files: files, setup: links},
		{name: "bad-opt", args: []string{"rm", "-k", "f"}, files: files},
		{name: "readonly", args: []string{"rm", "f"}, files: files, setup: fuChmod("f", 0o444)},
		{name: "dash-dash", args: []string{"rm", "--", "-x"}, files: map[string]string{"-x": ""}},
	}
	fuRunDiff(t, cases)
}

func TestRmdir(t *testing.T) {
	t.Parallel()
	files := map[string]string{"f": "x", "a/b/c/": "", "full/x": "1", "e/": ""}
	cases := []toolCase{
		{name: "one", args: []string{"rmdir", "e"}, files: files},
		{name: "non-empty", args: []string{"rmdir", "full"}, files: files},
		{name: "ignore", args: []string{"rmdir", "--ignore-fail-on-non-empty", "full", "e"}, files: files},
		{name: "file", args: []string{"rmdir", "f"}, files: files},
		{name: "missing", args: []string{"rmdir", "nope"}, files: files},
		{name: "p", args: []string{"rmdir", "-p", "a/b/c"}, files: files},
		{name: "pv", args: []string{"rmdir", "-pv", "a/b/c/"}, files: files},
		{name: "v", args: []string{"rmdir", "-v", "e"}, files: files},
		{name: "p-stops", args: []string{"rmdir", "-p", "full/x"}, files: files},
		{name: "dot", args: []string{"rmdir", "."}, files: files},
		{name: "symlink", args: []string{"rmdir", "l"}, files: files, setup: fuSymlink("e", "l")},
		{name: "no-operand", args: []string{"rmdir"}, files: files},
	}
	fuRunDiff(t, cases)
}
