package tools

import "testing"

func TestCsplit(t *testing.T) {
	t.Parallel()
	f := map[string]string{"f": "pre\n#1\na\n#2\nb\n#3\nc\n", "g": "#1\na\n#2\nb\n",
		"n": "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "nonl": "a\nb\nc"}
	c := func(name string, args ...string) toolCase { return toolCase{name: name, args: args, files: f} }
	runDiff(t, []toolCase{
		c("re-star", "csplit", "f", "/^#/", "{*}"),
		c("re-star-first-match", "csplit", "g", "/^#/", "{*}"),
		c("lines", "csplit", "n", "3", "7"),
		c("line-repeat", "csplit", "n", "3", "{2}"),
		c("re-offset-skip", "csplit", "n", "/5/+1", "%8%"),
		c("re-neg-offset", "csplit", "n", "/5/-1"),
		c("out-of-range", "csplit", "n", "20"),
		c("keep", "csplit", "-k", "n", "4", "20"),
		c("prefix-digits-quiet", "csplit", "-s", "-f", "part", "-n", "3", "n", "5"),
		c("elide", "csplit", "-z", "g", "/^#/", "{*}"),
		c("no-match", "csplit", "n", "/x/"),
		c("decreasing", "csplit", "n", "5", "3"),
		c("re-repeat", "csplit", "f", "/^#/", "{1}"),
		c("re-repeat-too-many", "csplit", "f", "/^#/", "{5}"),
		c("skip-only", "csplit", "n", "%4%"),
		c("nonl", "csplit", "nonl", "2"),
		c("missing-file", "csplit", "nope", "1"),
		c("missing-pattern", "csplit", "n"),
		c("bad-pattern", "csplit", "n", "x"),
		{name: "stdin", args: []string{"csplit", "-", "2"}, stdin: "a\nb\nc\n"},
		c("re-bracket", "csplit", "f", "/^[#]2/"),
	})
}
