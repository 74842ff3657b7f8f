package tools

import "testing"

func TestTree(t *testing.T) {
	t.Parallel()
	files := map[string]string{"a/b/c": "1", "a/g": "2", "c/": "", "f": "x", ".hid/x": "", "z/y/": "", "B": "", "a b": ""}
	setup := fuSetup(fuSymlink("a", "la"), fuSymlink("f", "lf"), fuSymlink("nowhere", "dangle"), fuMkfifo("p"))
	cases := []toolCase{
		{name: "default", args: []string{"tree"}, files: files, setup: setup},
		{name: "i", args: []string{"tree", "-i"}, files: files, setup: setup},
		{name: "i-f", args: []string{"tree", "-if", "a"}, files: files, setup: setup},
		{name: "F", args: []string{"tree", "-F"}, files: files, setup: fuSetup(setup, fuChmod("a/g", 0o755))},
		{name: "P", args: []string{"tree", "-P", "c|g"}, files: files, setup: setup},
		{name: "P-glob", args: []string{"tree", "-P", "*b*"}, files: files, setup: setup},
		{name: "l", args: []string{"tree", "-l"}, files: files, setup: setup},
		{name: "l-root", args: []string{"tree", "-l", "la"}, files: files, setup: setup},
		{name: "dot", args: []string{"tree", "."}, files: files, setup: setup},
		{name: "a", args: []string{"tree", "-a"}, files: files, setup: setup},
		{name: "d", args: []string{"tree", "-d"}, files: files, setup: setup},
		{name: "L1", args: []string{"tree", "-L", "1"}, files: files, setup: setup},
		{name: "L2", args: []string{"tree", "-L", "2", "a"}, files: files, setup: setup},
		{name: "L0", args: []string{"tree", "-L", "0"}, files: files, setup: setup},
		{name: "I", args: []string{"tree", "-I", "a|f*"}, files: files, setup: setup},
		{name: "I-glob", args: []string{"tree", "-I", "?"}, files: files, setup: setup},
		{name: "f", args: []string{"tree", "-f"}, files: files, setup: setup},
		{name: "f-sub", args: []string{"tree", "-f", "a"}, files: files, setup: setup},
		{name: "noreport", args: []string{"tree", "--noreport"}, files: files, setup: setup},
		{name: "dirsfirst", args: []string{"tree", "--dirsfirst"}, files: files, setup: setup},
		{name: "r", args: []string{"tree", "-r"}, files: files, setup: setup},
		{name: "multi", args: []string{"tree", "a", "c", "z"}, files: files, setup: setup},
		{name: "empty", args: []string{"tree", "c"}, files: files, setup: setup},
		{name: "missing", args: []string{"tree", "nope"}, files: files, setup: setup},
		{name: "file", args: []string{"tree", "f", "a"}, files: files, setup: setup},
		{name: "symlink-root", args: []string{"tree", "la"}, files: files, setup: setup},
		{name: "ad", args: []string{"tree", "-ad"}, files: files, setup: setup},
		{name: "n", args: []string{"tree", "-n", "a"}, files: files, setup: setup},
	}
	fuRunDiff(t, cases)
}
