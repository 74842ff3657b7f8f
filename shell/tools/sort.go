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
// held in memory while it fits in the exec's memory budget and -S, and
// spills to sorted runs in -T's directory (first one), $TMPDIR or /tmp
// past that (sortspill.go); --parallel is accepted and ignored.

var sortOpts = NewOptions("b,ignore-leading-blanks", "d,dictionary-order", "f,ignore-case",
	"g,general-numeric-sort", "h,human-numeric-sort", "i,ignore-nonprinting", "M,month-sort",
	"n,numeric-sort", "R,random-sort", "r,reverse", "V,version-sort", "sort=", "k,key=",
	"t,field-separator=", "u,unique", "s,stable", "o,output=", "c", "C", "check=?",
	"z,zero-terminated", "m,merge", "S,buffer-size=", "T,temporary-directory=", "parallel=",
	"batch-size=", "compress-program=", "files0-from=", "debug", "random-source=")

// sortLetters are the one-letter orderings of the long options (the
// short and long spelling of one option share its Key).
var sortLetters = map[string]string{"dictionary-order": "d", "ignore-case": "f", "general-numeric-sort": "g",
	"human-numeric-sort": "h", "ignore-nonprinting": "i", "month-sort": "M", "numeric-sort": "n",
	"reverse": "r", "version-sort": "V"}

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
	var output, size, tmpDir string
	check, quiet, merge := false, false, false
	for _, o := range opts {
		switch o.Key {
		case "ignore-leading-blanks":
			g.skipSBlanks, g.skipEBlanks = true, true
		case "dictionary-order", "ignore-case", "general-numeric-sort", "human-numeric-sort",
			"ignore-nonprinting", "month-sort", "numeric-sort", "reverse", "version-sort":
			g.setOrdering(sortLetters[o.Key], false)
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
				c.Errorf("multi-character tab %s", locQuote(v))
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
		case "buffer-size":
			size = o.Value
		case "temporary-directory":
			if tmpDir == "" {
				tmpDir = o.Value
			}
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
	// Without -S, sort holds at most half of what the exec's memory budget
	// has free when it starts, leaving the rest to the rest of the exec.
	bufMax := int64(-1) // a Call with no budget: no bound but -S
	if free := c.MemoryFree(); free >= 0 {
		bufMax = max(free/2, sortMinBuf)
	}
	if size != "" {
		n, msg := sortSize(size, c.MemoryFree())
		if msg != "" {
			c.Errorf("%s", msg)
			return 2
		}
		bufMax = max(n, 1<<10)
	}
	sp := &spill{c: c, dir: sortTempDir(c, tmpDir)}
	defer sp.cleanup()
	if merge {
		return s.mergeFiles(ctx, sp, files, output)
	}
	lines, st := s.readAll(ctx, sp, files, bufMax)
	if st != 0 {
		return st
	}
	if len(sp.runs) > 0 {
		// What is left joins the runs on disk; the merge writes the output.
		if st := sp.write(ctx, s, lines); st != 0 {
			return st
		}
		return s.mergeFiles(ctx, sp, nil, output)
	}
	s.sortLines(lines)
	if ctx.Err() != nil {
		return txCtxStatus
	}
	out, closeOut, st := s.openOutput(c, output)
	if st != 0 {
		return st
	}
	for i, line := range lines {
		if s.unique && i > 0 && s.compare(lines[i-1], line) == 0 {
			continue
		}
		out.Write(line)
		out.WriteByte(s.delim)
	}
	return closeOut()
}

// openOutput opens -o's file, or stdout. closeOut flushes and closes it
// and returns the status.
func (s *sorter) openOutput(c *shell.Call, output string) (out *txOut, closeOut func() int, status int) {
	w := c.Stdout
	var f io.Closer
	if output != "" {
		of, err := c.Create(output, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		if err != nil {
			c.Errorf("open failed: %s: %s", output, txErr(err))
			return nil, nil, 2
		}
		w, f = of, of
	}
	out = newTxOut(w)
	return out, func() int {
		defer out.release()
		err := out.Flush()
		if f != nil {
			f.Close()
		}
		if err != nil {
			if output != "" {
				c.Errorf("write failed: %s: %s", output, txErr(err))
			}
			return 2
		}
		return 0
	}, 0
}

// readAll reads every input into memory while it fits (see sortspill.go),
// writing sorted runs to sp when it does not, and returns what is left.
func (s *sorter) readAll(ctx context.Context, sp *spill, files []string, bufMax int64) ([][]byte, int) {
	in := &sortInput{s: s, sp: sp, max: bufMax}
	defer func() { sp.c.Release(in.reserved) }()
	for _, name := range files {
		if st := in.read(ctx, name); st != 0 {
			return nil, st
		}
	}
	return txSplit(in.data, s.delim), 0
}

// sortInput is the input sort holds in memory: raw bytes, split into
// records only to be sorted (as io.ReadAll and one split did before the
// budget: the common small sort costs what it did).
type sortInput struct {
	s        *sorter
	sp       *spill
	max      int64  // -S in bytes, or -1
	data     []byte // records not yet written to a run; the last may be incomplete
	records  int64  // delimiters in data
	reserved int64  // bytes reserved for data through the Call
}

// cost is what data holds, records' slices and sort keys included.
func (in *sortInput) cost(capacity int) int64 {
	return int64(capacity) + in.records*sortLineCost
}

// read adds one input to in.data, spilling as needed. A last record
// without a delimiter ends with its file, as in GNU sort.
func (in *sortInput) read(ctx context.Context, name string) int {
	c := in.sp.c
	r, err := txOpen(ctx, c, name)
	if err != nil {
		c.Errorf("cannot read: %s: %s", name, txErr(err))
		return 2
	}
	defer r.Close()
	for {
		if len(in.data) == cap(in.data) {
			if st := in.grow(ctx); st != 0 {
				return st
			}
		}
		n, err := r.Read(in.data[len(in.data):cap(in.data)])
		if n > 0 {
			in.records += int64(bytes.Count(in.data[len(in.data):len(in.data)+n], []byte{in.s.delim}))
			in.data = in.data[:len(in.data)+n]
			if in.cost(cap(in.data)) > in.reserved {
				if st := in.grow(ctx); st != 0 {
					return st
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			if txIsCtx(err) {
				return txCtxStatus
			}
			c.Errorf("read failed: %s: %s", name, txErr(err))
			return 2
		}
	}
	if len(in.data) > 0 && in.data[len(in.data)-1] != in.s.delim {
		in.data = append(in.data, in.s.delim)
		in.records++
	}
	return 0
}

// grow makes in.data's cost fit its reservation and leaves room to read:
// it reserves more when the budget and -S allow, and otherwise writes the
// complete records as a run, keeping only the incomplete last one.
func (in *sortInput) grow(ctx context.Context) int {
	c := in.sp.c
	for {
		newCap := cap(in.data)
		if len(in.data) == newCap {
			newCap = max(2*newCap, 4<<10)
		}
		need := in.cost(newCap) - in.reserved
		if need <= 0 || (in.max < 0 || in.reserved+need <= in.max) && c.TryReserve(need) {
			in.reserved += max(need, 0)
			if newCap > cap(in.data) {
				in.data = append(make([]byte, 0, newCap), in.data...)
			}
			return 0
		}
		complete := bytes.LastIndexByte(in.data, in.s.delim) + 1
		if complete == 0 || in.cost(cap(in.data)) < sortMinBuf {
			// One record longer than the room, or too little to sort in
			// pieces: hold it all, within the exec's budget or not at all.
			if c.Reserve(need) != nil {
				return txCtxStatus
			}
			in.reserved += need
			in.data = append(make([]byte, 0, newCap), in.data...)
			return 0
		}
		if st := in.sp.write(ctx, in.s, txSplit(in.data[:complete], in.s.delim)); st != 0 {
			return st
		}
		rest := in.data[complete:]
		in.data = append(make([]byte, 0, max(2*len(rest), 4<<10)), rest...)
		in.records = 0
		c.Release(in.reserved)
		in.reserved = 0
	}
}

// mergeFiles merges the named inputs (-m) or, with none, sp's runs, into
// the output. An input that is also -o's file is copied to a temporary
// file first, since opening the output truncates it.
func (s *sorter) mergeFiles(ctx context.Context, sp *spill, files []string, output string) int {
	c := sp.c
	names := files
	if files == nil {
		if st := s.mergeRuns(ctx, sp); st != 0 {
			return st
		}
		names = sp.runs
	} else if output != "" {
		names = slices.Clone(files)
		for i, name := range names {
			if st := sp.copyIfSame(ctx, name, output, &names[i]); st != 0 {
				return st
			}
		}
	}
	srcs, st := openSources(ctx, c, names, s.delim)
	if st != 0 {
		return st
	}
	out, closeOut, st := s.openOutput(c, output)
	if st != 0 {
		closeSources(srcs)
		return st
	}
	// Messages name the inputs, not the copies.
	shown := names
	if files != nil {
		shown = files
	}
	if st := s.mergeTo(ctx, c, srcs, shown, out); st != 0 {
		out.release()
		return st
	}
	return closeOut()
}

// check reads one input, comparing each record with the one before.
func (s *sorter) check(ctx context.Context, c *shell.Call, name string, quiet bool) int {
	r, err := txOpen(ctx, c, name)
	if err != nil {
		c.Errorf("cannot read: %s: %s", name, txErr(err))
		return 2
	}
	defer r.Close()
	rd := newSortReader(r, s.delim)
	defer rd.release()
	var prev []byte
	for i := 0; rd.next(); i++ {
		if i > 0 {
			d := s.compare(prev, rd.rec)
			if d > 0 || s.unique && d == 0 {
				if !quiet {
					fmt.Fprintf(c.Stderr, "%s: %s:%d: disorder: %s\n", c.Name(), name, i+1, rd.rec)
				}
				return 1
			}
		}
		prev = append(prev[:0], rd.rec...)
	}
	if rd.err != nil {
		if txIsCtx(rd.err) {
			return txCtxStatus
		}
		c.Errorf("read failed: %s: %s", name, txErr(rd.err))
		return 2
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
