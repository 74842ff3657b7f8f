package tools

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// diffStamp gives every file in both trees the same modification time,
// so that unified and context headers compare equal.
func diffStamp(t *testing.T, dir string) {
	t.Helper()
	stamp := time.Date(2024, 3, 5, 7, 9, 11, 123456789, time.UTC)
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir {
			os.Chtimes(p, stamp, stamp)
		}
		return nil
	})
}

const diffBase = `package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Println("usage")
		return
	}
	for _, a := range os.Args[1:] {
		fmt.Println(a)
	}
}

func helper(x int) int {
	if x > 0 {
		return x
	}
	return -x
}

func other() {
}
`

// diffEdits are realistic edits of diffBase.
func diffEdits() map[string]string {
	lines := strings.SplitAfter(diffBase, "\n")
	lines = lines[:len(lines)-1]
	join := func(ls []string) string { return strings.Join(ls, "") }
	with := func(f func([]string) []string) string {
		c := append([]string(nil), lines...)
		return join(f(c))
	}
	ins := func(at int, add ...string) string {
		return with(func(c []string) []string {
			return append(c[:at], append(add, c[at:]...)...)
		})
	}
	del := func(from, n int) string {
		return with(func(c []string) []string { return append(c[:from], c[from+n:]...) })
	}
	rep := func(at int, s string) string {
		return with(func(c []string) []string { c[at] = s; return c })
	}
	return map[string]string{
		"insert top":        ins(0, "// Package main.\n"),
		"insert middle":     ins(12, "\t// loop\n"),
		"insert end":        ins(len(lines), "\nfunc more() {}\n"),
		"delete first":      del(0, 1),
		"delete block":      del(17, 7),
		"delete last":       del(len(lines)-1, 1),
		"modify one":        rep(9, "\t\tfmt.Println(\"usage: prog args\")\n"),
		"modify two far":    rep(2, "import (\n") + "",
		"add brace func":    ins(24, "func extra() {\n", "}\n", "\n"),
		"dup closing brace": ins(15, "\t}\n"),
		"blank lines":       ins(7, "\n", "\n"),
		"remove blank":      del(16, 1),
		"rename":            strings.ReplaceAll(diffBase, "helper", "absInt"),
		"reorder funcs":     join(lines[:17]) + join(lines[24:]) + "\n" + join(lines[17:23]),
		"indent change":     strings.ReplaceAll(diffBase, "\t\t", "        "),
		"empty":             "",
		"no newline":        strings.TrimSuffix(diffBase, "\n"),
		"add import":        ins(5, "\t\"strings\"\n"),
		"wrap if":           with(func(c []string) []string { c[13] = "\t\tif a != \"\" {\n\t\t\tfmt.Println(a)\n\t\t}\n"; return c }),
		"multi hunks":       strings.Replace(strings.Replace(diffBase, "usage", "Usage", 1), "return -x", "return 0 - x", 1),
		"trailing spaces":   strings.Replace(diffBase, "return\n", "return  \n", 1),
		"case change":       strings.Replace(diffBase, "func other", "FUNC OTHER", 1),
		"all different":     "completely\ndifferent\ncontent\n",
		"repeat lines ins":  ins(20, "\t}\n\treturn -x\n"),
		"swap adjacent":     with(func(c []string) []string { c[3], c[4] = c[4], c[3]; return c }),
	}
}

func TestDiffEditsDiff(t *testing.T) {
	var cases []toolCase
	edits := diffEdits()
	for _, name := range sortedKeys(edits) {
		files := map[string]string{"old.go": diffBase, "new.go": edits[name]}
		for _, format := range [][]string{{}, {"-u"}, {"-c"}, {"-U1"}} {
			args := append(append([]string{"diff"}, format...), "old.go", "new.go")
			cases = append(cases, toolCase{name: fmt.Sprintf("%s %v", name, format), args: args, files: files, setup: diffStamp})
		}
	}
	runSearchDiff(t, cases, false)
}

var diffFiles = map[string]string{
	"a":           "one\ntwo\nthree\nfour\nfive\n",
	"b":           "one\nTWO\nthree\nfive\nsix\n",
	"same":        "one\ntwo\nthree\nfour\nfive\n",
	"ws1":         "a b\nc  d\ne\t\n",
	"ws2":         "a  b\nc d\ne\n",
	"ws3":         "ab\ncd\ne\n",
	"case":        "ONE\nTWO\nthree\nfour\nfive\n",
	"blank1":      "x\n\ny\n",
	"blank2":      "x\ny\n\n",
	"noeol1":      "x\ny",
	"noeol2":      "x\nz",
	"eol":         "x\ny\n",
	"empty":       "",
	"bin1":        "a\x00b\n",
	"bin2":        "a\x00c\n",
	"d1/f":        "same\n",
	"d1/g":        "old\n",
	"d1/only1":    "1\n",
	"d1/sub/x":    "x1\n",
	"d1/sub/y":    "y\n",
	"d1/dirfile/": "",
	"d2/f":        "same\n",
	"d2/g":        "new\n",
	"d2/only2":    "2\n",
	"d2/sub/x":    "x2\n",
	"d2/dirfile":  "file\n",
	"d2/newsub/z": "z\n",
	"dir/a":       "one\ntwo\n",
}

func dc(name string, args ...string) toolCase {
	return toolCase{name: name, args: append([]string{"diff"}, args...), files: diffFiles, setup: diffStamp}
}

func TestDiffFlagsDiff(t *testing.T) {
	cases := []toolCase{
		dc("normal", "a", "b"),
		dc("identical", "a", "same"),
		dc("-s identical", "-s", "a", "same"),
		dc("-s differ", "-s", "a", "b"),
		dc("-q", "-q", "a", "b"),
		dc("-q same", "-q", "a", "same"),
		dc("-u", "-u", "a", "b"),
		dc("-U0", "-U0", "a", "b"),
		dc("-U 5", "-U", "5", "a", "b"),
		dc("--unified=1", "--unified=1", "a", "b"),
		dc("-c", "-c", "a", "b"),
		dc("-C0", "-C0", "a", "b"),
		dc("--context", "--context", "a", "b"),
		dc("--label", "--label", "L1", "--label", "L2", "-u", "a", "b"),
		dc("one label", "--label=only", "-u", "a", "b"),
		dc("-i", "-i", "a", "case"),
		dc("-i off", "a", "case"),
		dc("-w", "-w", "ws1", "ws3"),
		dc("-b", "-b", "ws1", "ws2"),
		dc("-b not w", "-b", "ws1", "ws3"),
		dc("-Z", "-Z", "ws1", "ws2"),
		dc("-B", "-B", "blank1", "blank2"),
		dc("-B real change", "-B", "blank1", "a"),
		dc("noeol both", "noeol1", "noeol2"),
		dc("noeol vs eol", "noeol1", "eol"),
		dc("eol vs noeol -u", "-u", "eol", "noeol1"),
		dc("noeol -c", "-c", "noeol1", "noeol2"),
		dc("empty vs file", "empty", "a"),
		dc("file vs empty -u", "-u", "a", "empty"),
		dc("empty -c", "-c", "empty", "a"),
		dc("binary", "bin1", "bin2"),
		dc("binary same", "bin1", "bin1"),
		dc("binary -a", "-a", "bin1", "bin2"),
		dc("binary -q", "-q", "bin1", "bin2"),
		dc("missing", "a", "nope"),
		dc("missing first", "nope", "a"),
		dc("-N missing", "-N", "a", "nope"),
		dc("-N missing -u", "-N", "-u", "nope", "a"),
		dc("file vs dir", "a", "dir"),
		dc("dir vs file", "dir", "a"),
		dc("dirs", "d1", "d2"),
		dc("-r", "-r", "d1", "d2"),
		dc("-ru", "-ru", "d1", "d2"),
		dc("-r -u separate", "-r", "-u", "d1", "d2"),
		dc("-rq", "-rq", "d1", "d2"),
		dc("-rN", "-rN", "d1", "d2"),
		dc("-r -x", "-r", "-x", "sub", "d1", "d2"),
		dc("-r --exclude", "-r", "--exclude=only*", "d1", "d2"),
		dc("-rs", "-rs", "d1", "d2"),
		dc("stdin", "a", "-"),
		dc("missing operand", "a"),
		dc("extra operand", "a", "b", "c"),
		dc("bad option", "--bogus", "a", "b"),
		dc("bad context", "-U", "x", "a", "b"),
		dc("-y refused", "-y", "a", "b"),
		dc("--normal", "--normal", "a", "b"),
		dc("--minimal", "-d", "a", "b"),
		dc("trailing slash dirs", "-r", "d1/", "d2/"),
	}
	for i := range cases {
		if cases[i].name == "stdin" {
			cases[i].stdin = "one\ntwo\n"
		}
		if cases[i].name == "-y refused" {
			cases[i].known = "side-by-side output is refused (exit 125) by design"
		}
	}
	runSearchDiff(t, cases, false)
}

var cmpFiles = map[string]string{
	"c1": "abc\n", "c2": "abd\nx\n", "c3": "ab", "k1": "a\x01\x81b\n", "k2": "a\x02\xffc\n",
	"em": "", "l1": "line1\nline2\nline3\n", "l2": "line1\nline2\nlineX\n",
}

func cc(name string, args ...string) toolCase {
	return toolCase{name: name, args: append([]string{"cmp"}, args...), files: cmpFiles}
}

func TestCmpDiff(t *testing.T) {
	cases := []toolCase{
		cc("differ", "c1", "c2"),
		cc("same", "c1", "c1"),
		cc("eof short", "c1", "c3"),
		cc("eof first", "c3", "c1"),
		cc("-l", "-l", "c1", "c2"),
		cc("-l -b", "-lb", "k1", "k2"),
		cc("-b", "-b", "k1", "k2"),
		cc("-s", "-s", "c1", "c2"),
		cc("-s same", "-s", "c1", "c1"),
		cc("missing", "c1", "nope"),
		cc("-n", "-n", "2", "c1", "c2"),
		cc("-i", "-i", "1", "c1", "c2"),
		cc("-i two", "-i", "1:2", "c1", "c2"),
		cc("skip operands", "c1", "c2", "1", "2"),
		cc("empty", "em", "c1"),
		cc("empty -l", "-l", "em", "c1"),
		cc("line number", "l1", "l2"),
		cc("stdin", "c1"),
		cc("-l -s", "-l", "-s", "c1", "c2"),
		cc("no operand"),
		cc("dir", "c1", "."),
	}
	runSearchDiff(t, cases, false)
}

// TestDiffRandomEditsDiff compares hunk choices with GNU on seeded random
// edits of source-like text full of repeated lines (braces, blanks,
// returns), where GNU's discarding and boundary shifting matter most.
func TestDiffRandomEditsDiff(t *testing.T) {
	if testing.Short() {
		t.Skip("80 random edits: skipped in -short")
	}
	pool := []string{"}\n", "\n", "\treturn nil\n", "\tif err != nil {\n", "\t}\n", "func f() {\n",
		"\tx++\n", "// comment\n", "\ty := 2\n", "\tdefer close()\n"}
	seed := uint32(12345)
	rnd := func(n int) int {
		seed = seed*1664525 + 1013904223
		return int(seed>>8) % n
	}
	var cases []toolCase
	for k := 0; k < 40; k++ {
		var old []string
		for i := 0; i < 20+rnd(60); i++ {
			old = append(old, pool[rnd(len(pool))])
		}
		nw := append([]string(nil), old...)
		for e := 0; e < 1+rnd(5); e++ {
			at := rnd(len(nw) + 1)
			switch rnd(3) {
			case 0:
				var add []string
				for i := 0; i < 1+rnd(4); i++ {
					add = append(add, pool[rnd(len(pool))])
				}
				nw = append(nw[:at], append(add, nw[at:]...)...)
			case 1:
				if at < len(nw) {
					n := min(1+rnd(4), len(nw)-at)
					nw = append(nw[:at], nw[at+n:]...)
				}
			default:
				if at < len(nw) {
					nw[at] = pool[rnd(len(pool))]
				}
			}
		}
		files := map[string]string{"old": strings.Join(old, ""), "new": strings.Join(nw, "")}
		for _, format := range [][]string{{}, {"-u"}} {
			args := append(append([]string{"diff"}, format...), "old", "new")
			cases = append(cases, toolCase{name: fmt.Sprintf("edit%02d %v", k, format), args: args, files: files, setup: diffStamp})
		}
	}
	runSearchDiff(t, cases, false)
}
