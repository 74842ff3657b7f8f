package tools

import "testing"

var uniqFiles = map[string]string{
	"in":     "a\na\nb\nc\nc\nc\nA\na\nd\n",
	"fields": "1 x\n2 x\n3 y\n4  y\n5 z\n",
	"chars":  "xxa\nyya\nzzb\n",
	"nonl":   "a\na",
	"z":      "a\x00a\x00b\x00",
	"case":   "Foo\nfoo\nFOO\nbar\n",
	"empty":  "",
}

func TestUniq(t *testing.T) {
	t.Parallel()
	cases := []toolCase{
		{name: "default", args: []string{"uniq", "in"}},
		{name: "c", args: []string{"uniq", "-c", "in"}},
		{name: "d", args: []string{"uniq", "-d", "in"}},
		{name: "D", args: []string{"uniq", "-D", "in"}},
		{name: "u", args: []string{"uniq", "-u", "in"}},
		{name: "cd", args: []string{"uniq", "-cd", "in"}},
		{name: "cu", args: []string{"uniq", "-cu", "in"}},
		{name: "du", args: []string{"uniq", "-du", "in"}},
		{name: "i", args: []string{"uniq", "-i", "case"}},
		{name: "ic", args: []string{"uniq", "-ic", "case"}},
		{name: "f1", args: []string{"uniq", "-f1", "fields"}},
		{name: "f1c", args: []string{"uniq", "-c", "-f", "1", "fields"}},
		{name: "s2", args: []string{"uniq", "-s2", "chars"}},
		{name: "w1", args: []string{"uniq", "-w1", "chars"}},
		{name: "s1w1", args: []string{"uniq", "-s1", "-w1", "chars"}},
		{name: "all-sep", args: []string{"uniq", "--all-repeated=separate", "in"}},
		{name: "all-prepend", args: []string{"uniq", "--all-repeated=prepend", "in"}},
		{name: "group", args: []string{"uniq", "--group", "in"}},
		{name: "group-both", args: []string{"uniq", "--group=both", "in"}},
		{name: "group-append", args: []string{"uniq", "--group=append", "in"}},
		{name: "group-c", args: []string{"uniq", "--group", "-c", "in"}},
		{name: "Dc", args: []string{"uniq", "-D", "-c", "in"}},
		{name: "nonl", args: []string{"uniq", "nonl"}},
		{name: "z", args: []string{"uniq", "-z", "z"}},
		{name: "stdin", args: []string{"uniq", "-c"}, stdin: "x\nx\ny\n"},
		{name: "output", args: []string{"uniq", "in", "out"}},
		{name: "missing", args: []string{"uniq", "nope"}},
		{name: "extra", args: []string{"uniq", "a", "b", "c"}},
		{name: "empty", args: []string{"uniq", "-c", "empty"}},
		{name: "bad-f", args: []string{"uniq", "-f", "x", "in"}},
		{name: "uD", args: []string{"uniq", "-u", "-D", "in"}},
		{name: "duD", args: []string{"uniq", "-d", "-u", "-D", "in"}},
		{name: "iD", args: []string{"uniq", "-i", "-D", "case"}},
		{name: "uD-sep", args: []string{"uniq", "-u", "--all-repeated=separate", "in"}},
		{name: "big-count", args: []string{"uniq", "-c"}, stdin: txRepeat("same\n", 12345678/1000)},
	}
	for i := range cases {
		cases[i].files = uniqFiles
	}
	runDiff(t, cases)
}

func txRepeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}
