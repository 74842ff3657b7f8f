package tools

import "testing"

func TestBasenameDirname(t *testing.T) {
	t.Parallel()
	var cases []toolCase
	for _, p := range []string{"/", "//", "a", "a/", "a/b", "a//b/", "/a", "/a/b", "", ".", "..", "../x", "//a", "a/b//", "dir/file.txt"} {
		cases = append(cases,
			toolCase{name: "basename " + p, args: []string{"basename", "--", p}},
			toolCase{name: "dirname " + p, args: []string{"dirname", "--", p}})
	}
	cases = append(cases,
		toolCase{name: "basename-suffix", args: []string{"basename", "a.txt", ".txt"}},
		toolCase{name: "basename-suffix-whole", args: []string{"basename", ".txt", ".txt"}},
		toolCase{name: "basename-s", args: []string{"basename", "-s", ".txt", "a.txt", "b/c.txt", "d.md"}},
		toolCase{name: "basename-a", args: []string{"basename", "-a", "x/y", "z/"}},
		toolCase{name: "basename-z", args: []string{"basename", "-z", "x/y"}},
		toolCase{name: "basename-extra", args: []string{"basename", "a", "b", "c"}},
		toolCase{name: "basename-none", args: []string{"basename"}},
		toolCase{name: "dirname-many", args: []string{"dirname", "a/b", "c", "/d/e/"}},
		toolCase{name: "dirname-z", args: []string{"dirname", "-z", "a/b", "c"}},
		toolCase{name: "dirname-none", args: []string{"dirname"}},
	)
	fuRunDiff(t, cases)
}

func TestReadlinkRealpath(t *testing.T) {
	t.Parallel()
	files := map[string]string{"f": "x", "d/sub/g": "y", "e/": ""}
	links := fuSetup(fuSymlink("f", "lf"), fuSymlink("d/sub", "ld"), fuSymlink("nowhere", "dangle"),
		fuSymlink("loop", "loop"), fuSymlink("lf", "chain"), fuSymlink("../f", "d/up"))
	var cases []toolCase
	for _, name := range []string{"lf", "ld", "dangle", "loop", "chain", "f", "nope", "d/up", "ld/g", "dangle/x", "nope/x", "f/x", "d/../f", "ld/../g", "."} {
		cases = append(cases,
			toolCase{name: "readlink " + name, args: []string{"readlink", name}, files: files, setup: links},
			toolCase{name: "readlink-f " + name, args: []string{"readlink", "-f", name}, files: files, setup: links},
			toolCase{name: "readlink-m " + name, args: []string{"readlink", "-m", name}, files: files, setup: links},
			toolCase{name: "realpath " + name, args: []string{"realpath", name}, files: files, setup: links},
			toolCase{name: "realpath-m " + name, args: []string{"realpath", "-m", name}, files: files, setup: links},
			toolCase{name: "realpath-s " + name, args: []string{"realpath", "-s", name}, files: files, setup: links},
		)
	}
	cases = append(cases,
		toolCase{name: "readlink-e", args: []string{"readlink", "-e", "lf", "dangle", "chain", "nope/x", "ld/g"}, files: files, setup: links},
		toolCase{name: "realpath-e", args: []string{"realpath", "-e", "lf", "dangle", "chain", "nope/x", "ld/g", "loop"}, files: files, setup: links},
		toolCase{name: "readlink-n", args: []string{"readlink", "-n", "lf"}, files: files, setup: links},
		toolCase{name: "readlink-n-multi", args: []string{"readlink", "-n", "lf", "ld"}, files: files, setup: links},
		toolCase{name: "readlink-z", args: []string{"readlink", "-z", "lf", "ld"}, files: files, setup: links},
		toolCase{name: "readlink-v", args: []string{"readlink", "-v", "f"}, files: files, setup: links},
		toolCase{name: "readlink-none", args: []string{"readlink"}},
		toolCase{name: "realpath-relative-to", args: []string{"realpath", "--relative-to=d/sub", "f", "e", "d/sub/g"}, files: files, setup: links},
		toolCase{name: "realpath-relative-to-self", args: []string{"realpath", "--relative-to=.", "."}, files: files, setup: links},
		toolCase{name: "realpath-relative-base", args: []string{"realpath", "--relative-base=d", "f", "d/sub/g", "ld"}, files: files, setup: links},
		toolCase{name: "realpath-both", args: []string{"realpath", "--relative-base=d", "--relative-to=d/sub", "d/sub/g", "d", "f"}, files: files, setup: links},
		toolCase{name: "realpath-z", args: []string{"realpath", "-z", "f", "e"}, files: files, setup: links},
		toolCase{name: "realpath-q", args: []string{"realpath", "-q", "nope/x", "f"}, files: files, setup: links},
		toolCase{name: "realpath-none", args: []string{"realpath"}},
		toolCase{name: "realpath-empty", args: []string{"realpath", ""}},
	)
	fuRunDiff(t, cases)
}
