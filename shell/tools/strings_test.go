package tools

import "testing"

func TestStrings(t *testing.T) {
	t.Parallel()
	bin := "abcd\x00\x01efghij\tkl\nmnop\x00ab\x00cde\x80fghi\xffxyz"
	cases := []toolCase{
		{name: "default", args: []string{"strings"}},
		{name: "n3", args: []string{"strings", "-n", "3"}},
		{name: "num-short", args: []string{"strings", "-3"}},
		{name: "radix-x", args: []string{"strings", "-t", "x"}},
		{name: "radix-d", args: []string{"strings", "-td"}},
		{name: "radix-o", args: []string{"strings", "-o"}},
		{name: "all-space", args: []string{"strings", "-w"}},
		{name: "separator", args: []string{"strings", "-s", ","}},
		{name: "file-name", args: []string{"strings", "-f", "b.bin"}, files: map[string]string{"b.bin": bin}},
		{name: "short-tail", args: []string{"strings"}, stdin: "hello"},
		{name: "missing", args: []string{"strings", "nofile"}},
		{name: "bad-min", args: []string{"strings", "-n", "0"}},
	}
	for i := range cases {
		if cases[i].stdin == "" {
			cases[i].stdin = bin
		}
	}
	runDiff(t, cases)
}
