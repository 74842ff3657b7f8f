package tools

import "testing"

// TestInteractive compares cp, mv and rm -i (prompt, answer read from
// standard input) with GNU's.
func TestInteractive(t *testing.T) {
	t.Parallel()
	files := map[string]string{"a": "new\n", "b": "old\n", "c": "", "d/x": "1"}
	cases := []toolCase{
		{name: "cp-i-eof", args: []string{"cp", "-i", "a", "b"}, files: files},
		{name: "cp-i-yes", args: []string{"cp", "-i", "a", "b"}, files: files, stdin: "yes\n"},
		{name: "cp-i-no", args: []string{"cp", "-i", "a", "b"}, files: files, stdin: "n\n"},
		{name: "cp-i-new", args: []string{"cp", "-i", "a", "new"}, files: files},
		{name: "cp-i-two", args: []string{"cp", "-i", "a", "b", "d"}, files: map[string]string{"a": "1", "b": "2", "d/a": "x", "d/b": "y"}, stdin: "y\nn\n"},
		{name: "cp-in", args: []string{"cp", "-i", "-n", "a", "b"}, files: files},
		{name: "cp-ni", args: []string{"cp", "-n", "-i", "a", "b"}, files: files, stdin: "Y\n"},
		{name: "mv-i-eof", args: []string{"mv", "-i", "a", "b"}, files: files},
		{name: "mv-i-yes", args: []string{"mv", "-i", "a", "b"}, files: files, stdin: "y\n"},
		{name: "mv-if", args: []string{"mv", "-i", "-f", "a", "b"}, files: files},
		{name: "rm-i-eof", args: []string{"rm", "-i", "a"}, files: files},
		{name: "rm-i-yes", args: []string{"rm", "-i", "a", "c"}, files: files, stdin: "y\nyes\n"},
		{name: "rm-i-empty-no", args: []string{"rm", "-i", "c"}, files: files, stdin: "no\n"},
		{name: "rm-i-missing", args: []string{"rm", "-i", "nosuch"}, files: files},
		{name: "rm-if", args: []string{"rm", "-i", "-f", "a"}, files: files},
	}
	for i := range cases {
		cases[i].exactStderr = true
	}
	runDiff(t, cases)
}
