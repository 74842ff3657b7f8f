package tools

import "testing"

// TestLsQuoting compares ls's filters, quoting styles, -m and
// dereferencing with GNU ls.
func TestLsQuoting(t *testing.T) {
	t.Parallel()
	tree := map[string]string{
		"my file.txt": "x", "it's": "", "tab\tname": "", "q\"x": "", "a$b": "", "#h": "", "x#": "",
		"bak~": "", ".dot~": "", "star*": "", "plain.md": "", "d/a.txt": "1", "d/b.md": "22",
		"é.txt": "", "eq=x": "", "br[1]": "", "cur{l}": "", "caret^": "", "bang!": "", "pct%": "",
		"d/.h.txt": "",
	}
	links := fuSetup(fuSymlink("d", "dl"), fuSymlink("plain.md", "pl"), fuSymlink("nowhere", "broken"), fuOldTimes)
	nl := map[string]string{"nl\nname": "", "tab\tx": "", "ctl\x01y": "", "bad\xffz": "", "it's\nx": ""}
	cases := []toolCase{
		{name: "nl-literal", args: []string{"ls"}, files: nl},
		{name: "nl-q", args: []string{"ls", "-q"}, files: nl},
		{name: "nl-b", args: []string{"ls", "-b"}, files: nl},
		{name: "nl-Q", args: []string{"ls", "-Q"}, files: nl},
		{name: "nl-shell", args: []string{"ls", "--quoting-style=shell"}, files: nl},
		{name: "nl-shell-escape", args: []string{"ls", "--quoting-style=shell-escape"}, files: nl},
		{name: "nl-shell-escape-always", args: []string{"ls", "--quoting-style=shell-escape-always"}, files: nl},
		{name: "I", args: []string{"ls", "-I", "*.txt"}, files: tree},
		{name: "I-two", args: []string{"ls", "-I", "*.txt", "-I", "*.md", "d"}, files: tree},
		{name: "ignore-dot", args: []string{"ls", "-a", "--ignore=*.txt", "d"}, files: tree},
		{name: "hide", args: []string{"ls", "--hide=*.txt"}, files: tree},
		{name: "hide-A", args: []string{"ls", "-A", "--hide=*.txt", "d"}, files: tree},
		{name: "B", args: []string{"ls", "-B"}, files: tree},
		{name: "B-a", args: []string{"ls", "-aB"}, files: tree},
		{name: "w", args: []string{"ls", "-w", "20", "d"}, files: tree},
		{name: "w-C", args: []string{"ls", "-C", "-w", "30"}, files: tree},
		{name: "w-bad", args: []string{"ls", "-w", "x"}, files: tree},
		{name: "T", args: []string{"ls", "-T", "4", "d"}, files: tree},
		{name: "hyperlink-never", args: []string{"ls", "-1", "--hyperlink=never", "d"}, files: tree},
		{name: "m", args: []string{"ls", "-m"}, files: tree},
		{name: "m-narrow", args: []string{"ls", "-m", "-w", "25"}, files: tree},
		{name: "m-F", args: []string{"ls", "-mF"}, files: tree, setup: links},
		{name: "format-commas", args: []string{"ls", "--format=commas", "d"}, files: tree},
		{name: "format-single", args: []string{"ls", "--format=single-column", "d"}, files: tree},
		{name: "format-bad", args: []string{"ls", "--format=bogus"}, files: tree},
		{name: "indicator-slash", args: []string{"ls", "--indicator-style=slash"}, files: tree, setup: links},
		{name: "indicator-classify", args: []string{"ls", "--indicator-style=classify"}, files: tree, setup: links},
		{name: "N", args: []string{"ls", "-N"}, files: tree},
		{name: "literal", args: []string{"ls", "--literal"}, files: tree},
		{name: "q", args: []string{"ls", "-q"}, files: tree},
		{name: "b", args: []string{"ls", "-b"}, files: tree},
		{name: "Q", args: []string{"ls", "-Q"}, files: tree},
		{name: "Q-l", args: []string{"ls", "-lQ"}, files: tree, setup: links},
		{name: "style-shell", args: []string{"ls", "--quoting-style=shell"}, files: tree},
		{name: "style-shell-q", args: []string{"ls", "-q", "--quoting-style=shell"}, files: tree},
		{name: "style-shell-always", args: []string{"ls", "--quoting-style=shell-always"}, files: tree},
		{name: "style-shell-escape", args: []string{"ls", "--quoting-style=shell-escape"}, files: tree},
		{name: "style-shell-escape-always", args: []string{"ls", "--quoting-style=shell-escape-always"}, files: tree},
		{name: "style-c", args: []string{"ls", "--quoting-style=c"}, files: tree},
		{name: "style-escape", args: []string{"ls", "--quoting-style=escape"}, files: tree},
		{name: "style-literal", args: []string{"ls", "--quoting-style=literal", "my file.txt"}, files: tree},
		{name: "style-bad", args: []string{"ls", "--quoting-style=bogus"}, files: tree},
		{name: "Z", args: []string{"ls", "-Z", "d"}, files: tree},
		{name: "L-dir", args: []string{"ls", "-L", "dl"}, files: tree, setup: links},
		{name: "L-broken", args: []string{"ls", "-L", "broken"}, files: tree, setup: links},
		{name: "lL", args: []string{"ls", "-lL", "pl", "dl"}, files: tree, setup: links},
		{name: "ldL", args: []string{"ls", "-ldL", "dl"}, files: tree, setup: links},
		{name: "lL-listing", args: []string{"ls", "-lL"}, files: tree, setup: links},
		{name: "lH", args: []string{"ls", "-lH", "dl"}, files: tree, setup: links},
		{name: "l-dereference", args: []string{"ls", "-l", "--dereference", "pl"}, files: tree, setup: links},
	}
	runDiff(t, cases)
}
