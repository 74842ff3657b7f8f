package tools

import (
	"os"
	"path/filepath"
	"testing"
)

// txFiles is a shared fixture for the text tools' differential tests.
var txFiles = map[string]string{
	"f3":     "a\nb\nc\n",
	"nonl":   "one\ntwo\nthree",
	"empty":  "",
	"d/":     "",
	"lines":  "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n",
	"utf":    "héllo wörld\n日本語 テキスト\nnaïve café\n",
	"bin":    "a\x00b\x01c\xff\xfe\n\x00\x00\n",
	"words":  "the quick  brown\tfox\n  jumps over\n\nthe lazy dog \n",
	"z":      "a\x00b\x00c\x00",
	"spaced": "  lead\ntrail  \n\t tab\n",
}

func TestHead(t *testing.T) {
	t.Parallel()
	runDiff(t, []toolCase{
		{name: "default", args: []string{"head", "lines"}, files: txFiles},
		{name: "n3", args: []string{"head", "-n", "3", "lines"}, files: txFiles},
		{name: "n0", args: []string{"head", "-n0", "lines"}, files: txFiles},
		{name: "n-neg", args: []string{"head", "-n", "-3", "lines"}, files: txFiles},
		{name: "n-neg-all", args: []string{"head", "-n", "-30", "lines"}, files: txFiles},
		{name: "n-neg0", args: []string{"head", "-n", "-0", "nonl"}, files: txFiles},
		{name: "c5", args: []string{"head", "-c", "5", "lines"}, files: txFiles},
		{name: "c-neg", args: []string{"head", "-c", "-4", "lines"}, files: txFiles},
		{name: "c-k", args: []string{"head", "-c", "1k", "lines"}, files: txFiles},
		{name: "obsolete", args: []string{"head", "-2", "lines"}, files: txFiles},
		{name: "obsolete-c", args: []string{"head", "-3c", "lines"}, files: txFiles},
		{name: "multi", args: []string{"head", "-n1", "f3", "lines"}, files: txFiles},
		{name: "multi-q", args: []string{"head", "-q", "-n1", "f3", "lines"}, files: txFiles},
		{name: "v", args: []string{"head", "-v", "-n1", "f3"}, files: txFiles},
		{name: "missing", args: []string{"head", "-n1", "f3", "nope", "lines"}, files: txFiles},
		{name: "dir", args: []string{"head", "d", "f3"}, files: txFiles},
		{name: "stdin", args: []string{"head", "-n2"}, stdin: "x\ny\nz\n"},
		{name: "stdin-dash", args: []string{"head", "-n2", "-", "f3"}, files: txFiles, stdin: "x\ny\nz\n"},
		{name: "nonl", args: []string{"head", "-n", "-1", "nonl"}, files: txFiles},
		{name: "nonl-all", args: []string{"head", "nonl"}, files: txFiles},
		{name: "zero", args: []string{"head", "-z", "-n2", "z"}, files: txFiles},
		{name: "bad-num", args: []string{"head", "-n", "x", "f3"}, files: txFiles},
		{name: "overflow", args: []string{"head", "-n", "99999999999999999999999", "f3"}, files: txFiles},
		{name: "devzero", args: []string{"head", "-c", "10", "/dev/zero"}},
		{name: "bad-opt", args: []string{"head", "--bogus", "f3"}, files: txFiles},
		{name: "empty", args: []string{"head", "empty"}, files: txFiles},
		{name: "long-lines", args: []string{"head", "--lines=2", "utf"}, files: txFiles},
		{name: "bytes-long", args: []string{"head", "--bytes=-2", "utf"}, files: txFiles},
	})
}

func TestTail(t *testing.T) {
	t.Parallel()
	runDiff(t, []toolCase{
		{name: "default", args: []string{"tail", "lines"}, files: txFiles},
		{name: "n3", args: []string{"tail", "-n", "3", "lines"}, files: txFiles},
		{name: "n0", args: []string{"tail", "-n0", "lines"}, files: txFiles},
		{name: "plus", args: []string{"tail", "-n", "+13", "lines"}, files: txFiles},
		{name: "plus0", args: []string{"tail", "-n", "+0", "f3"}, files: txFiles},
		{name: "c3", args: []string{"tail", "-c", "3", "lines"}, files: txFiles},
		{name: "c-plus", args: []string{"tail", "-c", "+30", "lines"}, files: txFiles},
		{name: "obsolete", args: []string{"tail", "-2", "lines"}, files: txFiles},
		{name: "obsolete-plus", args: []string{"tail", "+14", "lines"}, files: txFiles},
		{name: "obsolete-c", args: []string{"tail", "-4c", "lines"}, files: txFiles},
		{name: "multi", args: []string{"tail", "-n1", "f3", "lines"}, files: txFiles},
		{name: "multi-q", args: []string{"tail", "-qn1", "f3", "lines"}, files: txFiles},
		{name: "v", args: []string{"tail", "-v", "-n1", "f3"}, files: txFiles},
		{name: "missing", args: []string{"tail", "-n1", "nope", "f3"}, files: txFiles},
		{name: "dir", args: []string{"tail", "d"}, files: txFiles},
		{name: "stdin", args: []string{"tail", "-n2"}, stdin: "x\ny\nz\n"},
		{name: "nonl", args: []string{"tail", "-n1", "nonl"}, files: txFiles},
		{name: "nonl2", args: []string{"tail", "-n2", "nonl"}, files: txFiles},
		{name: "zero", args: []string{"tail", "-z", "-n1", "z"}, files: txFiles},
		{name: "more-than", args: []string{"tail", "-n", "100", "f3"}, files: txFiles},
		{name: "follow-refused", args: []string{"tail", "-f", "f3"}, files: txFiles, known: "-f is refused (exit 125) rather than following"},
		{name: "bad", args: []string{"tail", "-n", "q", "f3"}, files: txFiles},
		{name: "empty", args: []string{"tail", "empty"}, files: txFiles},
		{name: "big", args: []string{"tail", "-n", "3", "big"}, files: map[string]string{"big": txBig(20000)}},
		{name: "big-nonl", args: []string{"tail", "-n", "2", "big"}, files: map[string]string{"big": txBig(20000) + "tail"}},
		{name: "big-c", args: []string{"tail", "-c", "7", "big"}, files: map[string]string{"big": txBig(20000)}},
	})
}

func TestWc(t *testing.T) {
	t.Parallel()
	runDiff(t, []toolCase{
		{name: "default", args: []string{"wc", "words"}, files: txFiles},
		{name: "l", args: []string{"wc", "-l", "words"}, files: txFiles},
		{name: "w", args: []string{"wc", "-w", "words"}, files: txFiles},
		{name: "c", args: []string{"wc", "-c", "utf"}, files: txFiles},
		{name: "m", args: []string{"wc", "-m", "utf"}, files: txFiles},
		{name: "L", args: []string{"wc", "-L", "utf", "words"}, files: txFiles},
		{name: "all", args: []string{"wc", "-lwmcL", "utf"}, files: txFiles},
		{name: "multi", args: []string{"wc", "f3", "words", "utf"}, files: txFiles},
		{name: "stdin", args: []string{"wc"}, stdin: "a b\nc\n"},
		{name: "stdin-l", args: []string{"wc", "-l"}, stdin: "a b\nc\n"},
		{name: "stdin-dash", args: []string{"wc", "-", "f3"}, stdin: "a b\nc\n", files: txFiles},
		{name: "missing", args: []string{"wc", "nope", "f3"}, files: txFiles},
		{name: "dir", args: []string{"wc", "d", "f3"}, files: txFiles},
		{name: "bin", args: []string{"wc", "bin"}, files: txFiles},
		{name: "bin-m", args: []string{"wc", "-mwL", "bin"}, files: txFiles},
		{name: "nonl", args: []string{"wc", "nonl"}, files: txFiles},
		{name: "empty", args: []string{"wc", "empty"}, files: txFiles},
		{name: "devnull", args: []string{"wc", "/dev/null", "f3"}, files: txFiles},
		{name: "tabs-L", args: []string{"wc", "-L"}, stdin: "a\tb\tc\n12345678\t\n\r\rxx\n"},
		{name: "nbsp", args: []string{"wc", "-w"}, stdin: "a\u00a0b c\u2003d e\u200bf\x01g\n"},
		{name: "wide-L", args: []string{"wc", "-L"}, stdin: "日本語テキスト\nabc\n"},
		{name: "big", args: []string{"wc", "big", "f3"}, files: map[string]string{"big": txBig(20000), "f3": "a\n"}},
		{name: "bad-opt", args: []string{"wc", "-x"}},
		{name: "long", args: []string{"wc", "--lines", "--words", "words"}, files: txFiles},
	})
}

// TestWcFiles0 is wc --files0-from with a list in a regular file.
func TestWcFiles0(t *testing.T) {
	t.Parallel()
	files := map[string]string{"x": "a b\nc\n", "y": "hello world\n", "big": txBig(20000), "d/": "",
		"list": "x\x00y\x00", "nonul": "x\x00y", "zero": "x\x00\x00y\x00", "zerolast": "x\x00\x00",
		"zeroonly": "\x00", "missing": "x\x00nope\x00", "empty": "", "one": "x\x00", "dash": "-\x00x\x00",
		"withbig": "big\x00x\x00y\x00", "withdir": "d\x00x\x00", "nl": "x\n\x00", "space": "sp ace\x00x\x00",
		"sp ace": "1 2 3\n", "dup": "x\x00x\x00x\x00", "self": "self\x00"}
	c := func(name string, args ...string) toolCase {
		return toolCase{name: name, args: args, files: files, stdin: "from stdin\n"}
	}
	runDiff(t, []toolCase{
		c("list", "wc", "--files0-from=list"),
		c("list-l", "wc", "-l", "--files0-from=list"),
		c("list-c", "wc", "--files0-from", "list", "-c"),
		c("list-all", "wc", "-lwmcL", "--files0-from=list"),
		c("no-final-nul", "wc", "-l", "--files0-from=nonul"),
		c("zero-length", "wc", "--files0-from=zero"),
		c("zero-length-last", "wc", "--files0-from=zerolast"),
		c("zero-length-only", "wc", "--files0-from=zeroonly"),
		c("missing-name", "wc", "--files0-from=missing"),
		c("empty-list", "wc", "--files0-from=empty"),
		c("one", "wc", "--files0-from=one"),
		c("one-l", "wc", "-l", "--files0-from=one"),
		c("dash-in-list", "wc", "--files0-from=dash"),
		c("big", "wc", "--files0-from=withbig"),
		c("big-L", "wc", "-L", "--files0-from=withbig"),
		c("dir", "wc", "--files0-from=withdir"),
		c("newline-name", "wc", "--files0-from=nl"),
		c("space-name", "wc", "--files0-from=space"),
		c("dup", "wc", "-w", "--files0-from=dup"),
		c("self", "wc", "--files0-from=self"),
		c("list-missing", "wc", "--files0-from=nope"),
		c("list-dir", "wc", "--files0-from=d"),
		c("with-operand", "wc", "--files0-from=list", "x"),
		c("abbrev", "wc", "--files0=list"),
	})
}

// txBig returns n numbered lines.
func txBig(n int) string {
	b := make([]byte, 0, n*8)
	for i := range n {
		b = append(b, "line "...)
		b = append(b, byte('0'+i%10), byte('a'+i%26), '\n')
	}
	return string(b)
}

func txMkdir(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
}
