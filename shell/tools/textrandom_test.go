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
