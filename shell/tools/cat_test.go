package tools

import "testing"

func TestCat(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"a": "one\ntwo\n", "b": "three", "blank": "x\n\n\n\ny\n\n", "tabs": "a\tb\t\n",
		"bin": "\x00\x01\x7f\x80\xff\xc3\xa9\n\x1b[m\n", "utf8": "héllo wörld\n日本\n", "empty": "", "dir/": "",
	}
	cases := []toolCase{
		{name: "one", args: []string{"cat", "a"}, files: files},
		{name: "two", args: []string{"cat", "a", "b"}, files: files},
		{name: "no-newline-join", args: []string{"cat", "-n", "b", "a"}, files: files},
		{name: "stdin", args: []string{"cat"}, files: files, stdin: "in\nput"},
		{name: "dash", args: []string{"cat", "a", "-", "b"}, files: files, stdin: "mid\n"},
		{name: "n", args: []string{"cat", "-n", "a", "blank"}, files: files},
		{name: "b", args: []string{"cat", "-b", "blank"}, files: files},
		{name: "bn", args: []string{"cat", "-bn", "blank"}, files: files},
		{name: "s", args: []string{"cat", "-s", "blank"}, files: files},
		{name: "sn", args: []string{"cat", "-sn", "blank", "blank"}, files: files},
		{name: "E", args: []string{"cat", "-E", "a", "b"}, files: files},
		{name: "T", args: []string{"cat", "-T", "tabs"}, files: files},
		{name: "v", args: []string{"cat", "-v", "bin"}, files: files},
		{name: "A", args: []string{"cat", "-A", "bin", "tabs"}, files: files},
		{name: "e", args: []string{"cat", "-e", "bin"}, files: files},
		{name: "t", args: []string{"cat", "-t", "bin", "tabs"}, files: files},
		{name: "u", args: []string{"cat", "-u", "a"}, files: files},
		{name: "utf8-v", args: []string{"cat", "-v", "utf8"}, files: files},
		{name: "empty", args: []string{"cat", "empty"}, files: files},
		{name: "empty-n", args: []string{"cat", "-n", "empty", "a"}, files: files},
		{name: "missing", args: []string{"cat", "nope", "a"}, files: files},
		{name: "dir", args: []string{"cat", "dir"}, files: files},
		{name: "dir-and-file", args: []string{"cat", "a", "dir", "b"}, files: files},
		{name: "bad-opt", args: []string{"cat", "-z"}, files: files},
		{name: "long-opts", args: []string{"cat", "--number", "--show-ends", "a"}, files: files},
		{name: "long-line", args: []string{"cat", "-n", "long"}, files: map[string]string{"long": string(make([]byte, 200000)) + "\nend\n"}},
		{name: "dev-null", args: []string{"cat", "/dev/null"}},
		{name: "symlink", args: []string{"cat", "l"}, files: files, setup: fuSymlink("a", "l")},
		{name: "loop", args: []string{"cat", "loop"}, files: files, setup: fuSymlink("loop", "loop")},
	}
	fuRunDiff(t, cases)
}

func TestTee(t *testing.T) {
	t.Parallel()
	cases := []toolCase{
		{name: "stdout-only", args: []string{"tee"}, stdin: "abc\n"},
		{name: "one-file", args: []string{"tee", "out"}, stdin: "abc\ndef"},
		{name: "two-files", args: []string{"tee", "o1", "o2"}, stdin: "x\n"},
		{name: "truncate", args: []string{"tee", "old"}, stdin: "new\n", files: map[string]string{"old": "old old old\n"}},
		{name: "append", args: []string{"tee", "-a", "old"}, stdin: "new\n", files: map[string]string{"old": "old\n"}},
		{name: "append-long", args: []string{"tee", "--append", "old", "fresh"}, stdin: "new\n", files: map[string]string{"old": "old\n"}},
		{name: "missing-dir", args: []string{"tee", "nodir/x", "ok"}, stdin: "data\n"},
		{name: "dir", args: []string{"tee", "d"}, stdin: "data\n", files: map[string]string{"d/": ""}},
		{name: "ignore-interrupts", args: []string{"tee", "-i", "f"}, stdin: "q\n"},
		{name: "empty", args: []string{"tee", "e"}},
		{name: "binary", args: []string{"tee", "b"}, stdin: "\x00\xff\x01"},
		{name: "bad-opt", args: []string{"tee", "-q"}},
	}
	fuRunDiff(t, cases)
}
