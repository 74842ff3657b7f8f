package tools

import "testing"

var xargsFiles = map[string]string{
	"list":  "a.txt\nb.txt\n",
	"a.txt": "alpha\n",
	"b.txt": "beta\n",
	"args":  "x y\nz\n",
}

func xc(name, stdin string, args ...string) toolCase {
	return toolCase{name: name, args: append([]string{"xargs"}, args...), files: xargsFiles, stdin: stdin}
}

// TestXargsDiff needs the echo tool (another family's); cases that run
// other commands use this family's tools.
func TestXargsDiff(t *testing.T) {
	if _, ok := tools["echo"]; !ok {
		t.Skip("the echo tool is not registered in this build")
	}
	cases := []toolCase{
		xc("default echo", "a b\nc\n"),
		xc("explicit echo", "a b\nc\n", "echo", "pre"),
		xc("empty input", ""),
		xc("empty input -r", "", "-r", "echo", "hi"),
		xc("blank input", "  \n\n"),
		xc("quotes", "'a b' \"c d\" e\\ f\n", "-n1"),
		xc("unmatched single", "it's\n"),
		xc("unmatched double after arg", "a \"b\n"),
		xc("backslash newline", "a\\\nb\n", "-n1"),
		xc("-n 2", "1 2 3 4 5\n", "-n", "2"),
		xc("-n1 sed", "a.txt b.txt\n", "-n1", "sed", "-n", "p"),
		xc("-L 1", "a b\nc\nd e f\n", "-L", "1"),
		xc("-L 2", "a\nb\nc\n", "-L2", "echo"),
		xc("-L trailing blank", "a \nb\nc\n", "-L", "1", "echo"),
		xc("-L empty lines", "a\n\nb\nc\n", "-L", "2", "echo"),
		xc("-n then -L", "a b c d\n", "-n2", "-L1", "echo"),
		xc("-I", "one\ntwo\n", "-I", "{}", "echo", "[{}]"),
		xc("-I leading blanks", "  a b  \n c\n", "-I", "X", "echo", "X-X"),
		xc("-I empty", "", "-I", "{}", "echo", "{}"),
		xc("-i default", "q\n", "-i", "echo", "<{}>"),
		xc("-I in middle of word", "f\n", "-I", "@", "echo", "pre@post", "@"),
		xc("-0", "a b\x00c\x00", "-0", "-n1"),
		xc("-0 empty items", "a\x00\x00b\x00", "-0"),
		xc("--null", "a\x00b", "--null", "echo"),
		xc("-d comma", "a,b,c", "-d", ",", "-n1"),
		xc("-d newline escape", "a b\nc\n", "-d", "\\n", "-n1"),
		xc("-d tab keeps newline", "a\tb\n", "-d", "\\t", "echo"),
		xc("-d bad", "a", "-d", "ab"),
		xc("-a file", "", "-a", "list", "sed", "-n", "p"),
		xc("-a missing", "", "-a", "nope"),
		xc("-E eof", "a\nEOF\nb\n", "-E", "EOF", "echo"),
		xc("-e eof", "a b stop c\n", "-estop"),
		xc("-s limit", "1 2 3 4 5 6\n", "-s", "12", "echo"),
		xc("-s too small", "a\n", "-s", "3", "echo"),
		xc("-x with -s", "aaaa bbbb cccc\n", "-x", "-s", "15", "echo"),
		xc("-t", "a b\n", "-t", "-n1", "echo"),
		xc("-P sequential", "a\nb\n", "-P", "1", "-n1", "echo"),
		xc("exit 123", "x\ny\n", "-n1", "grep", "-q", "nomatch"),
		xc("exit 127", "x\n", "nosuchcommand"),
		xc("false", "x\n", "false"),
		xc("grep files", "a.txt\nb.txt\n", "grep", "-H", "a"),
		xc("options stop at command", "a.txt\n", "sed", "-n", "p"),
		xc("bad option", "", "--bogus"),
		xc("-n0", "a\n", "-n", "0"),
		xc("utf8", "héllo wörld\n", "-n1"),
		xc("many args", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20\n", "-n", "7"),
		xc("long input", "a\nb\nc\nd\ne\nf\ng\nh\n", "-L3", "echo", "L:"),
	}
	runSearchDiff(t, cases, false)
}

func TestXargsExitSizeDiff(t *testing.T) {
	if _, ok := tools["echo"]; !ok {
		t.Skip("the echo tool is not registered in this build")
	}
	runSearchDiff(t, []toolCase{
		xc("-x -n too long", "aaaa bbbb cccc\n", "-x", "-n", "3", "-s", "15", "echo"),
	}, false)
}
