package tools

import (
	"strconv"
	"testing"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	var seq700, seq100 string
	for i := 1; i <= 700; i++ {
		seq700 += strconv.Itoa(i) + "\n"
		if i <= 100 {
			seq100 += strconv.Itoa(i) + "\n"
		}
	}
	f := map[string]string{"s700": seq700, "s100": seq100, "small": "a\nbb\nccc\ndddd\n", "nonl": "1\n2\n3",
		"bin": "0123456789abcdefghij", "empty": "", "z": "a\x00b\x00c\x00"}
	c := func(name string, args ...string) toolCase { return toolCase{name: name, args: args, files: f} }
	runDiff(t, []toolCase{
		c("l-default", "split", "s100"),
		c("l1-widen", "split", "-l1", "s700"),
		c("l-d-widen", "split", "-l1", "-d", "s100"),
		c("l10", "split", "-l", "10", "s100"),
		c("b", "split", "-b", "7", "bin"),
		c("b-k", "split", "-b", "1K", "s700"),
		c("C", "split", "-C", "6", "small"),
		c("n3", "split", "-n", "3", "bin"),
		c("n-l", "split", "-n", "l/3", "small"),
		c("n-r", "split", "-n", "r/2", "small"),
		c("n-k", "split", "-n", "2/3", "bin"),
		c("n-lk", "split", "-n", "l/2/3", "small"),
		c("n-e", "split", "-e", "-n", "30", "small"),
		c("n-many", "split", "-n", "30", "small"),
		c("n-stdin", "split", "-n", "3"),
		c("a3", "split", "-a", "3", "-l", "50", "s100"),
		c("prefix", "split", "-l", "40", "s100", "part_"),
		c("extra-suffix", "split", "-l", "40", "--additional-suffix=.txt", "s100", "p"),
		c("numeric-from", "split", "-l", "40", "--numeric-suffixes=5", "s100"),
		c("hex", "split", "-x", "-l", "10", "s100"),
		c("verbose", "split", "--verbose", "-l", "40", "s100"),
		c("nonl", "split", "-l", "2", "nonl"),
		c("empty", "split", "empty"),
		c("t", "split", "-t", "\\0", "-l", "1", "z"),
		c("missing", "split", "nope"),
		c("bad-l", "split", "-l", "0", "s100"),
		c("bad-n", "split", "-n", "x", "s100"),
		c("stdin", "split", "-l", "2", "-", "in_"),
		c("suffix-exhausted", "split", "-a", "1", "-l", "1", "s100"),
	})
}
