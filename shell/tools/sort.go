package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"rung.dev/rung/shell"
)

// sort: GNU sort 9.1 in C.UTF-8, where collation is byte order (glibc's
// C.UTF-8 collates by code point, which for UTF-8 is byte order). Input is
// held in memory; -S, -T and --parallel are accepted and ignored.

var sortOpts = NewOptions("b,ignore-leading-blanks", "d,dictionary-order", "f,ignore-case",
	"g,general-numeric-sort", "h,human-numeric-sort", "i,ignore-nonprinting", "M,month-sort",
	"n,numeric-sort", "R,random-sort", "r,reverse", "V,version-sort", "sort=", "k,key=",
	"t,field-separator=", "u,unique", "s,stable", "o,output=", "c", "C", "check=?",
	"z,zero-terminated", "m,merge", "S,buffer-size=", "T,temporary-directory=", "parallel=",
	"batch-size=", "compress-program=", "files0-from=", "debug", "random-source=")

var sortUnimpl = []string{"random-sort", "compress-program", "files0-from", "debug", "random-source"}

// sorter holds one invocation's settings.
type sorter struct {
	keys    []*sortKey
	tab     int // field separator byte, or -1 for blank transitions
	unique  bool
	stable  bool
	reverse bool // global -r, for the last-resort comparison
	delim   byte
}

func sortCheck(args []string) error {
	if err := txCheck(sortOpts, sortUnimpl...)(args); err != nil {
		return err
	}
	opts, _, _ := sortOpts.Parse(args)
	for _, o := range opts {
		if o.Key == "sort" && o.Value == "random" || o.Key == "key" && bytes.ContainsRune([]byte(o.Value), 'R') {
			return fmt.Errorf("sort -R: %w", shell.ErrUnsupported)
		}
	}
	return nil
}

func runSort(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, sortOpts, c.Args[1:], 2)
	if !ok {
		return st
	}
	if o, bad := txRefused(opts, sortUnimpl...); bad {
		return txFail(c, o)
	}
	s := &sorter{tab: -1, delim: '\n'}
	g := &sortKey{sword: -1, eword: -1}
	var output string
	check, quiet, merge := false, false, false
	for _, o := range opts {
		switch o.Key {
		case "ignore-leading-blanks":
			g.skipSBlanks, g.skipEBlanks = true, true
		case "dictionary-order", "ignore-case", "general-numeric-sort", "human-numeric-sort",
			"ignore-nonprinting", "month-sort", "numeric-sort", "reverse", "version-sort":
			g.setOrdering(o.Name[1:2], false)
		case "sort":
			letter := map[string]string{"general-numeric": "g", "human-numeric": "h", "month": "M",
				"numeric": "n", "version": "V"}[o.Value]
			if o.Value == "random" {
				return c.Fail("option --sort=random")
			}
			if letter == "" {
				c.Errorf("invalid argument %s for '--sort'", txQuote(o.Value))
				return 2
			}
			g.setOrdering(letter, false)
		case "key":
			k, err := parseSortKey(o.Value)
			if err == errSortRandom {
				return c.Fail("option -k with R")
			}
			if err != nil {
				c.Errorf("%s", err)
				return 2
			}
			s.keys = append(s.keys, k)
		case "field-separator":
			v := o.Value
			switch {
			case v == "":
				c.Errorf("empty tab")
				return 2
			case v == `\0`:
				v = "\x00"
			case len(v) > 1:
				c.Errorf("multi-character tab %s", txQuote(v))
				return 2
			}
			if s.tab >= 0 && s.tab != int(v[0]) {
				c.Errorf("incompatible tabs")
				return 2
			}
			s.tab = int(v[0])
		case "unique":
			s.unique = true
		case "stable":
			s.stable = true
		case "output":
			output = o.Value
		case "c":
			check = true
		case "C":
			check, quiet = true, true
		case "check":
			check = true
			switch o.Value {
			case "", "diagnose-first":
			case "quiet", "silent":
				quiet = true
			default:
				c.Errorf("invalid argument %s for '--check'", txQuote(o.Value))
				return 2
			}
		case "zero-terminated":
			s.delim = 0
		case "merge":
			merge = true
		}
	}
	s.reverse = g.reverse
	for _, k := range s.keys {
		if k.defaultOrder() && !k.reverse {
			*k = sortKey{sword: k.sword, schar: k.schar, eword: k.eword, echar: k.echar,
				skipSBlanks: g.skipSBlanks, skipEBlanks: g.skipEBlanks, ignore: g.ignore, fold: g.fold,
				numeric: g.numeric, general: g.general, human: g.human, month: g.month,
				version: g.version, reverse: g.reverse}
		}
	}
	if len(s.keys) == 0 && !g.defaultOrder() {
		s.keys = []*sortKey{g}
	}
	for _, k := range s.keys {
		if opts := k.incompatible(); opts != "" {
			c.Errorf("options '-%s' are incompatible", opts)
			return 2
		}
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	if check {
		if len(files) > 1 {
			c.Errorf("extra operand %s not allowed with -%s", txQuote(files[1]), map[bool]string{false: "c", true: "C"}[quiet])
			return 2
		}
		return s.check(ctx, c, files[0], quiet)
	}
	var inputs [][][]byte
	for _, name := range files {
		lines, st := s.read(ctx, c, name)
		if st != 0 {
			return st
		}
		inputs = append(inputs, lines)
	}
	var all [][]byte
	if merge {
		all = s.merge(inputs)
	} else {
		if len(inputs) == 1 {
			all = inputs[0] // the common case: no copy
		} else {
			for _, in := range inputs {
				all = append(all, in...)
			}
		}
		s.sortLines(all)
	}
	if ctx.Err() != nil {
		return txCtxStatus
	}
	w := c.Stdout
	if output != "" {
		f, err := c.Create(output, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		if err != nil {
			c.Errorf("open failed: %s: %s", output, txErr(err))
			return 2
		}
		defer f.Close()
		w = f
	}
	out := newTxOut(w)
	defer out.release()
	for i, line := range all {
		if s.unique && i > 0 && s.compare(all[i-1], line) == 0 {
			continue
		}
		out.Write(line)
		out.WriteByte(s.delim)
	}
	if err := out.Flush(); err != nil {
		if output != "" {
			c.Errorf("write failed: %s: %s", output, txErr(err))
		}
		return 2
	}
	return 0
}

// read loads every record of one input.
func (s *sorter) read(ctx context.Context, c *shell.Call, name string) ([][]byte, int) {
	r, err := txOpen(ctx, c, name)
	if err != nil {
		c.Errorf("cannot read: %s: %s", name, txErr(err))
		return nil, 2
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		if txIsCtx(err) {
			return nil, txCtxStatus
		}
		c.Errorf("read failed: %s: %s", name, txErr(err))
		return nil, 2
	}
	return txSplit(data, s.delim), 0
}

// txSplit splits data into delim-terminated records (without delimiter).
func txSplit(data []byte, delim byte) [][]byte {
	n := bytes.Count(data, []byte{delim})
	lines := make([][]byte, 0, n+1)
	for len(data) > 0 {
		i := bytes.IndexByte(data, delim)
		if i < 0 {
			lines = append(lines, data)
			break
		}
		lines = append(lines, data[:i:i])
		data = data[i+1:]
	}
	return lines
}

func (s *sorter) merge(inputs [][][]byte) [][]byte {
	var out [][]byte
	pos := make([]int, len(inputs))
	for {
		best := -1
		for i, in := range inputs {
			if pos[i] >= len(in) {
				continue
			}
			if best < 0 || s.compare(in[pos[i]], inputs[best][pos[best]]) < 0 {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, inputs[best][pos[best]])
		pos[best]++
	}
}

func (s *sorter) check(ctx context.Context, c *shell.Call, name string, quiet bool) int {
	lines, st := s.read(ctx, c, name)
	if st != 0 {
		return st
	}
	for i := 1; i < len(lines); i++ {
		d := s.compare(lines[i-1], lines[i])
		if d > 0 || s.unique && d == 0 {
			if !quiet {
				fmt.Fprintf(c.Stderr, "%s: %s:%d: disorder: %s\n", c.Name(), name, i+1, lines[i])
			}
			return 1
		}
	}
	return 0
}

// sortLines sorts in place. Without -s or -u the comparison ends with the
// whole line, so equal elements are identical and an unstable sort gives
// GNU's output; a single numeric key is parsed once per line.
func (s *sorter) sortLines(all [][]byte) {
	if len(s.keys) == 1 && s.keys[0].numeric && s.keys[0].ignore == nil && !s.keys[0].fold && len(all) < 1<<31 {
		k := s.keys[0]
		type dec struct {
			line []byte
			num  sortNumber
		}
		ds := make([]dec, len(all))
		for i, l := range all {
			ds[i] = dec{l, parseSortNumber(s.keyText(l, k))}
		}
		cmp := func(i, j int32) int {
			a, b := &ds[i], &ds[j]
			d := sortNumCompareParsed(a.num, b.num)
			if k.reverse {
				d = -d
			}
			if d != 0 || s.unique || s.stable {
				return d
			}
			d = bytes.Compare(a.line, b.line)
			if s.reverse {
				return -d
			}
			return d
		}
		// Sorting indices moves 4 bytes per swap instead of the whole record.
		idx := make([]int32, len(ds))
		for i := range idx {
			idx[i] = int32(i)
		}
		if s.unique || s.stable {
			slices.SortStableFunc(idx, cmp)
		} else {
			slices.SortFunc(idx, cmp)
		}
		for i, k := range idx {
			all[i] = ds[k].line
		}
		return
	}
	if s.unique || s.stable {
		slices.SortStableFunc(all, s.compare)
		return
	}
	slices.SortFunc(all, s.compare)
}

// incompatible is GNU check_ordering_compatibility for one key: the key's
// option letters (without b and r) when it mixes ordering kinds.
func (k *sortKey) incompatible() string {
	n := 0
	for _, on := range []bool{k.numeric, k.general, k.human, k.month, k.version || k.ignore != nil} {
		if on {
			n++
		}
	}
	if n < 2 {
		return ""
	}
	var b []byte
	for _, f := range []struct {
		on bool
		c  byte
	}{{k.ignore == &sortDict, 'd'}, {k.fold, 'f'}, {k.general, 'g'}, {k.human, 'h'},
		{k.ignore == &sortNonPrint, 'i'}, {k.month, 'M'}, {k.numeric, 'n'}, {k.version, 'V'}} {
		if f.on {
			b = append(b, f.c)
		}
	}
	return string(b)
}
