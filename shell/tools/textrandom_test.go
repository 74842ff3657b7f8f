package tools

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// TestRandomText runs sort, uniq, wc and cut with random option mixes over
// random lines (fixed seed) against GNU.
func TestRandomText(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("random differential cases skipped in -short mode")
	}
	r := rand.New(rand.NewSource(42))
	words := []string{"a", "B", "b", "10", "9", "-3", "1.5", "1e3", "2K", "1M", "é", "x y", " lead", "tab\there", "", "0", "-0", "abc", "ABC", "v1.10", "v1.9", "Jan", "feb", "~", "a,b", "1,5", ",", "\xff", "  7", "+5", "nan", "inf"}
	line := func() string {
		n := 1 + r.Intn(4)
		var parts []string
		for range n {
			parts = append(parts, words[r.Intn(len(words))])
		}
		seps := []string{" ", ",", "\t", "  "}
		return strings.Join(parts, seps[r.Intn(len(seps))])
	}
	var cases []toolCase
	sortOpts := []string{"-n", "-r", "-f", "-u", "-b", "-d", "-i", "-g", "-h", "-V", "-M", "-s", "-t,", "-k2", "-k2,2", "-k1.2", "-k2n", "-k1,1r", "-k2,2b", "-k3", "-t\t", "-k2.2,2.3", "-k1,1f", "-k2V", "-k2h"}
	for i := range 40 {
		var in []string
		for range 3 + r.Intn(10) {
			in = append(in, line())
		}
		args := []string{"sort"}
		for range r.Intn(4) {
			args = append(args, sortOpts[r.Intn(len(sortOpts))])
		}
		cases = append(cases, toolCase{name: fmt.Sprintf("sort%d", i), args: args, stdin: strings.Join(in, "\n") + "\n"})
		uargs := []string{"uniq"}
		for _, o := range []string{"-c", "-d", "-u", "-i", "-f1", "-s1", "-w2", "-D"} {
			if r.Intn(4) == 0 {
				uargs = append(uargs, o)
			}
		}
		sorted := append([]string(nil), in...)
		for j := range sorted {
			if r.Intn(3) == 0 && j > 0 {
				sorted[j] = sorted[j-1]
			}
		}
		cases = append(cases, toolCase{name: fmt.Sprintf("uniq%d", i), args: uargs, stdin: strings.Join(sorted, "\n") + "\n"})
		wargs := []string{"wc"}
		for _, o := range []string{"-l", "-w", "-c", "-m", "-L"} {
			if r.Intn(3) == 0 {
				wargs = append(wargs, o)
			}
		}
		cases = append(cases, toolCase{name: fmt.Sprintf("wc%d", i), args: wargs, stdin: strings.Join(in, "\n")})
		cargs := [][]string{{"cut", "-d,", "-f2"}, {"cut", "-c2-4"}, {"cut", "-f1,3", "-s"}, {"cut", "-d", " ", "-f", "2-", "--complement"}}[r.Intn(4)]
		cases = append(cases, toolCase{name: fmt.Sprintf("cut%d", i), args: cargs, stdin: strings.Join(in, "\n") + "\n"})
	}
	runDiff(t, cases)
}

// TestRandomFormats runs printf, seq and tr with random formats, operands
// and sets (fixed seed) against GNU.
func TestRandomFormats(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("random differential cases skipped in -short mode")
	}
	r := rand.New(rand.NewSource(7))
	pick := func(xs []string) string { return xs[r.Intn(len(xs))] }
	var cases []toolCase
	nums := []string{"0", "1", "-1", "3.14159", "2.5", "0.5", "1e10", "-0", "255", "0x1f", "1e-7", "123456789", "99.995", "-2.675", "7", "1000000", ".5", "5.", "+3"}
	fmts := []string{"%d", "%5d", "%-5d|", "%05d", "%+d", "% d", "%x", "%#X", "%o", "%#o", "%u", "%f", "%.2f", "%10.3f", "%-10.1f|", "%e", "%.3E", "%g", "%.3g", "%#g", "%G", "%10g", "%.0f", "%.0e", "%s", "%.2s", "%c", "%5.1s|", "%i", "%08.3f", "%+.2e", "%.10g"}
	for i := range 50 {
		f := pick(fmts) + " " + pick(fmts) + "\\n"
		cases = append(cases, toolCase{name: fmt.Sprintf("printf%d", i), args: []string{"printf", f, pick(nums), pick(nums), pick(nums)}})
		small := []string{"0", "1", "-1", "2.5", "0.5", "-0", "7", ".5", "5.", "+3", "1e1", "0.25", "3", "-2.75", "10"}
		a, b, c := pick(small), pick(small), pick(small)
		if b == "0" || b == "-0" {
			b = "1"
		}
		args := []string{"seq"}
		if r.Intn(3) == 0 {
			args = append(args, "-w")
		}
		if r.Intn(4) == 0 {
			args = append(args, "-f", pick([]string{"%g", "%.3f", "%e", "%05.1f", "x%gy"}))
			if args[1] == "-w" {
				args = append(args[:1], args[2:]...)
			}
		}
		args = append(args, a, b, c)
		cases = append(cases, toolCase{name: fmt.Sprintf("seq%d", i), args: args})
		sets := []string{"a-z", "A-Z", "[:lower:]", "[:upper:]", "[:digit:]", "[:space:]", "[:punct:]", "abc", "\\n", "a-c", "x", "[a*3]", "[:alnum:]", "0-9", "[=e=]", "\\t "}
		targs := []string{"tr"}
		switch r.Intn(4) {
		case 0:
			targs = append(targs, "-d", pick(sets))
		case 1:
			targs = append(targs, "-s", pick(sets))
		case 2:
			targs = append(targs, "-c", pick(sets), pick(sets))
		default:
			targs = append(targs, pick(sets), pick(sets))
		}
		cases = append(cases, toolCase{name: fmt.Sprintf("tr%d", i), args: targs, stdin: "Hello World 123\n\taaa  bbb!!\nxyz\n"})
	}
	runDiff(t, cases)
}
