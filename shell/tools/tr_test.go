package tools

import "testing"

func TestTr(t *testing.T) {
	t.Parallel()
	in := "Hello, World! 123\nfoo   bar\t\tbaz\naaabbbccc\n\x00\xff\xc3\xa9\n"
	cases := []toolCase{
		{name: "upper", args: []string{"tr", "a-z", "A-Z"}},
		{name: "classes", args: []string{"tr", "[:lower:]", "[:upper:]"}},
		{name: "classes-rev", args: []string{"tr", "[:upper:]", "[:lower:]"}},
		{name: "delete", args: []string{"tr", "-d", "lo"}},
		{name: "delete-class", args: []string{"tr", "-d", "[:digit:][:punct:]"}},
		{name: "delete-comp", args: []string{"tr", "-cd", "[:alnum:]\n"}},
		{name: "squeeze", args: []string{"tr", "-s", " \t"}},
		{name: "squeeze-class", args: []string{"tr", "-s", "[:alpha:]"}},
		{name: "squeeze-translate", args: []string{"tr", "-s", "a-c", "x"}},
		{name: "cs-words", args: []string{"tr", "-cs", "[:alpha:]", "\\n"}},
		{name: "ds", args: []string{"tr", "-ds", "0-9", "a-z"}},
		{name: "pad", args: []string{"tr", "a-f", "xy"}},
		{name: "truncate", args: []string{"tr", "-t", "a-f", "xy"}},
		{name: "repeat", args: []string{"tr", "a-e", "[x*2]yz"}},
		{name: "fill", args: []string{"tr", "a-z", "[_*]"}},
		{name: "fill-mid", args: []string{"tr", "a-j", "A[-*]J"}},
		{name: "octal-count", args: []string{"tr", "a-j", "[x*010]Y"}},
		{name: "escapes", args: []string{"tr", "\\n\\t", "\\040_"}},
		{name: "octal", args: []string{"tr", "\\101-\\132", "\\141-\\172"}},
		{name: "backslash", args: []string{"tr", "\\\\", "/"}, stdin: "a\\b\\c\n"},
		{name: "equiv", args: []string{"tr", "[=a=]", "A"}},
		{name: "comp-translate", args: []string{"tr", "-c", "a-z\\n", "."}},
		{name: "rot13", args: []string{"tr", "A-Za-z", "N-ZA-Mn-za-m"}},
		{name: "literal-bracket", args: []string{"tr", "[]", "()"}, stdin: "[x]\n"},
		{name: "dash-last", args: []string{"tr", "a-", "xy"}, stdin: "a-b\n"},
		{name: "missing", args: []string{"tr"}},
		{name: "one-set", args: []string{"tr", "abc"}},
		{name: "extra", args: []string{"tr", "-d", "a", "b"}},
		{name: "extra3", args: []string{"tr", "a", "b", "c"}},
		{name: "reverse-range", args: []string{"tr", "z-a", "x"}},
		{name: "bad-class", args: []string{"tr", "[:foo:]", "x"}},
		{name: "empty-set2", args: []string{"tr", "a", ""}},
		{name: "bytes-high", args: []string{"tr", "\\200-\\377", "?"}},
		{name: "space-class", args: []string{"tr", "[:space:]", "_"}},
		{name: "xdigit", args: []string{"tr", "-d", "[:xdigit:]"}},
		{name: "class-in-set2", args: []string{"tr", "a-z", "[:punct:]"}},
		{name: "equiv-in-set2", args: []string{"tr", "a-z", "[=e=]"}},
		{name: "set2-ends-class", args: []string{"tr", "-c", "[:punct:]", "[:lower:]"}},
		{name: "comp-class-many", args: []string{"tr", "-c", "[:alnum:]", "abc"}},
		{name: "misaligned", args: []string{"tr", "0-9", "[:lower:]"}},
		{name: "repeat-in-set1", args: []string{"tr", "[a*3]", "a-c"}},
		{name: "fill-in-set1", args: []string{"tr", "[a*]", "b"}},
		{name: "empty-input", args: []string{"tr", "a", "b"}, stdin: "-"},
	}
	for i := range cases {
		if cases[i].stdin == "" {
			cases[i].stdin = in
		}
	}
	runDiff(t, cases)
}
