package mcp

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"rung.dev/rung"
)

func TestCutMiddle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		max      int
		want     string
		cut      int
	}{
		{name: "fits", in: "hello", max: 5, want: "hello"},
		{name: "cut", in: "0123456789", max: 4, want: "01\n[... 6 bytes cut here by rung ...]\n89", cut: 6},
		{name: "odd", in: "0123456789", max: 5, want: "01\n[... 5 bytes cut here by rung ...]\n789", cut: 5},
		// "é" is two bytes: neither cut splits it.
		{name: "runes", in: "aéééééb", max: 4, want: "a\n[... 10 bytes cut here by rung ...]\nb", cut: 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := cutMiddle(tc.in, tc.max)
			if got != tc.want || cut != tc.cut {
				t.Errorf("cutMiddle(%q, %d) = %q, %d; want %q, %d", tc.in, tc.max, got, cut, tc.want, tc.cut)
			}
			if !utf8.ValidString(got) {
				t.Errorf("cutMiddle(%q, %d) = %q: not UTF-8", tc.in, tc.max, got)
			}
		})
	}
}

func TestReplaceExact(t *testing.T) {
	t.Parallel()
	const file = "def f():\n    return 1\n\ndef g():\n    return 1\n"
	tests := []struct {
		name, content, old, new string
		all                     bool
		want                    string
		n                       int
		err                     string // a substring of the error; "" for none
	}{
		{name: "unique", content: file, old: "def f():\n    return 1", new: "def f():\n    return 2",
			want: "def f():\n    return 2\n\ndef g():\n    return 1\n", n: 1},
		{name: "twice", content: file, old: "return 1", new: "return 2", err: "occurs 2 times (first at line 2)"},
		{name: "all", content: file, old: "return 1", new: "return 2", all: true,
			want: "def f():\n    return 2\n\ndef g():\n    return 2\n", n: 2},
		{name: "missing", content: file, old: "return 3", new: "x", err: "old_string not found;"},
		{name: "indentation", content: file, old: "def g():\n  return 1", new: "x",
			err: "lines 4-5 match it but for indentation"},
		{name: "crlf", content: "a\r\nb\r\n", old: "a\nb", new: "x", err: "CRLF line endings"},
		{name: "empty", content: file, old: "", new: "x", err: "old_string is empty"},
		{name: "same", content: file, old: "f", new: "f", err: "the same"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := replaceExact(tc.content, tc.old, tc.new, tc.all)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, rung.ErrInvalid) {
					t.Fatalf("replaceExact(%q) err = %v; want invalid_argument containing %q", tc.old, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || n != tc.n {
				t.Errorf("replaceExact(%q, %q) = %q, %d, %v; want %q, %d", tc.old, tc.new, got, n, err, tc.want, tc.n)
			}
		})
	}
}

func TestReadLines(t *testing.T) {
	t.Parallel()
	const five = "1\n2\n3\n4\n5\n"
	tests := []struct {
		name, in           string
		start, count, max  int
		content            string
		first, last, total int
		more, long         bool
	}{
		{name: "all", in: five, start: 1, count: 10, max: 100, content: five, first: 1, last: 5, total: 5},
		{name: "exactly all", in: five, start: 1, count: 5, max: 100, content: five, first: 1, last: 5, total: 5},
		{name: "middle", in: five, start: 2, count: 2, max: 100, content: "2\n3\n", first: 2, last: 3, more: true},
		{name: "tail", in: five, start: 4, count: 10, max: 100, content: "4\n5\n", first: 4, last: 5, total: 5},
		{name: "no final newline", in: "a\nb", start: 1, count: 10, max: 100, content: "a\nb", first: 1, last: 2, total: 2},
		{name: "past the end", in: five, start: 9, count: 10, max: 100, content: "", first: 9, last: 8, total: 5},
		{name: "byte budget", in: five, start: 1, count: 10, max: 4, content: "1\n2\n", first: 1, last: 2, more: true},
		{name: "long line", in: "abcdefgh\nz\n", start: 1, count: 10, max: 3, content: "abc", first: 1, last: 1, more: true, long: true},
		{name: "empty", in: "", start: 1, count: 10, max: 100, content: "", first: 1, last: 0, total: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lr, err := readLines(strings.NewReader(tc.in), tc.start, tc.count, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			got := []any{lr.content, lr.start, lr.end, lr.total, lr.more, lr.longLines}
			want := []any{tc.content, tc.first, tc.last, tc.total, tc.more, tc.long}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("readLines(%q, %d, %d, %d) (-want +got):\n%s", tc.in, tc.start, tc.count, tc.max, diff)
			}
		})
	}
}

func TestParseGrep(t *testing.T) {
	t.Parallel()
	out := "/workspace/a:b.py\x0012:x = 1\n/workspace/c.py\x003:y = 2\nBinary file matches\n/workspace/d.py\x007:z\n"
	ms, n := parseGrep(out, 2)
	want := []match{{Path: "/workspace/a:b.py", Line: 12, Text: "x = 1"}, {Path: "/workspace/c.py", Line: 3, Text: "y = 2"}}
	if diff := cmp.Diff(want, ms); diff != "" || n != 3 {
		t.Errorf("parseGrep: n = %d, want 3; matches (-want +got):\n%s", n, diff)
	}
}

// shellQuote's words reach a program unchanged through bash.
func TestShellQuote(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, s := range []string{"plain", "it's", `a "b" $HOME \n`, "*.py", "", "a\nb", "'''"} {
		out, err := exec.Command(bash, "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("bash printf %s = %q, %v; want %q", shellQuote(s), out, err, s)
		}
	}
}
