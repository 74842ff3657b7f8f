package tools

import "testing"

var cutFiles = map[string]string{
	"tsv":  "a\tb\tc\td\n1\t2\t3\t4\nno-tab-here\n\t\tx\n",
	"csv":  "name,age,city\nbob,30,NYC\nalice,,LA\nplain\n",
	"txt":  "abcdefghij\n12345\n\nxy\n",
	"utf":  "héllo\n日本語\n",
	"nonl": "a:b:c",
	"z":    "a,b\x00c,d\x00",
}

func TestCut(t *testing.T) {
	t.Parallel()
	cases := []toolCase{
		{name: "f2", args: []string{"cut", "-f2", "tsv"}},
		{name: "f1,3", args: []string{"cut", "-f1,3", "tsv"}},
		{name: "f2-", args: []string{"cut", "-f", "2-", "tsv"}},
		{name: "f-2", args: []string{"cut", "-f-2", "tsv"}},
		{name: "f-s", args: []string{"cut", "-s", "-f2", "tsv"}},
		{name: "d", args: []string{"cut", "-d,", "-f2", "csv"}},
		{name: "d-multi", args: []string{"cut", "-d", ",", "-f1,3", "csv"}},
		{name: "d-out", args: []string{"cut", "-d,", "-f1,3", "--output-delimiter=|", "csv"}},
		{name: "d-complement", args: []string{"cut", "-d,", "--complement", "-f2", "csv"}},
		{name: "f-beyond", args: []string{"cut", "-d,", "-f5", "csv"}},
		{name: "f-overlap", args: []string{"cut", "-d,", "-f1-2,2-3", "csv"}},
		{name: "f-unsorted", args: []string{"cut", "-d,", "-f3,1", "csv"}},
		{name: "b", args: []string{"cut", "-b1-3", "txt"}},
		{name: "b-list", args: []string{"cut", "-b", "1,3,5-", "txt"}},
		{name: "b-out", args: []string{"cut", "-b1-2,4-5", "--output-delimiter=:", "txt"}},
		{name: "b-adjacent-out", args: []string{"cut", "-b1-2,3-4", "--output-delimiter=:", "txt"}},
		{name: "b-complement", args: []string{"cut", "--complement", "-b2-3", "txt"}},
		{name: "c", args: []string{"cut", "-c2-4", "utf"}},
		{name: "c-open", args: []string{"cut", "-c", "-2", "txt"}},
		{name: "nonl", args: []string{"cut", "-d:", "-f2", "nonl"}},
		{name: "z", args: []string{"cut", "-z", "-d,", "-f2", "z"}},
		{name: "stdin", args: []string{"cut", "-d", " ", "-f2"}, stdin: "a b c\nd e f\n"},
		{name: "no-list", args: []string{"cut", "txt"}},
		{name: "two-lists", args: []string{"cut", "-b1", "-f1", "txt"}},
		{name: "zero", args: []string{"cut", "-f0", "txt"}},
		{name: "decreasing", args: []string{"cut", "-f3-1", "txt"}},
		{name: "bad-list", args: []string{"cut", "-f", "x", "txt"}},
		{name: "d-bytes", args: []string{"cut", "-d,", "-b1", "txt"}},
		{name: "multi-delim", args: []string{"cut", "-d", "ab", "-f1", "txt"}},
		{name: "missing", args: []string{"cut", "-f1", "nope", "txt"}},
		{name: "s-with-b", args: []string{"cut", "-s", "-b1", "txt"}},
		{name: "n-ignored", args: []string{"cut", "-n", "-b1-2", "txt"}},
		{name: "empty-field-delim", args: []string{"cut", "-d,", "-f2", "--output-delimiter=", "csv"}},
		{name: "f-complement-open", args: []string{"cut", "-f", "-2", "--complement", "tsv"}},
	}
	for i := range cases {
		cases[i].files = cutFiles
	}
	runDiff(t, cases)
}
