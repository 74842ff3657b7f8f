package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"rung.dev/rung/shell"
)

// join: GNU join 9.1 (-1 -2 -j -t -a -v -e -o (incl. auto) -i --header
// --check-order --nocheck-order -z). Keys compare as bytes (C.UTF-8).

var joinOpts = NewOptions("a=", "e=", "i,ignore-case", "j=", "o=", "t=", "v=", "1=", "2=",
	"check-order", "nocheck-order", "header", "z,zero-terminated")

type joinLine struct {
	text   []byte
	fields [][]byte
}

type joinOut struct {
	file, field int // file 0 means the join field ("0")
}

type joiner struct {
	c         *shell.Call
	keys      [2]int // 0-based join fields
	tab       int    // -1 blanks
	icase     bool
	unpaired  [2]bool
	pairs     bool
	empty     []byte
	format    []joinOut
	auto      bool
	autoCount [2]int
	eol       byte
	out       *txOut
	order     txOrderCheck
	outSep    []byte
	names     [2]string
}

func (j *joiner) split(line []byte) joinLine {
	l := joinLine{text: line}
	if j.tab >= 0 {
		if len(line) == 0 {
			return l
		}
		l.fields = bytes.Split(line, []byte{byte(j.tab)})
		return l
	}
	for i := 0; i < len(line); {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i >= len(line) {
			break
		}
		s := i
		for i < len(line) && line[i] != ' ' && line[i] != '\t' {
			i++
		}
		l.fields = append(l.fields, line[s:i])
	}
	return l
}

func (j *joiner) key(l *joinLine, file int) []byte {
	if j.keys[file] < len(l.fields) {
		return l.fields[j.keys[file]]
	}
	return nil
}

func (j *joiner) cmp(a, b []byte) int {
	if j.icase {
		return bytes.Compare(bytes.ToLower(a), bytes.ToLower(b))
	}
	return bytes.Compare(a, b)
}

func parseJoinField(s string) (int, bool) {
	n, err := strconv.ParseUint(s, 10, 31)
	if err != nil || n == 0 {
		return 0, false
	}
	return int(n) - 1, true
}

func runJoin(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, joinOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	j := &joiner{c: c, tab: -1, pairs: true, eol: '\n', outSep: []byte(" ")}
	header := false
	for _, o := range opts {
		switch o.Key {
		case "a", "v":
			if o.Value != "1" && o.Value != "2" {
				c.Errorf("invalid field number: %s", locQuote(o.Value))
				return 1
			}
			j.unpaired[o.Value[0]-'1'] = true
			if o.Key == "v" {
				j.pairs = false
			}
		case "e":
			j.empty = []byte(o.Value)
		case "ignore-case":
			j.icase = true
		case "j", "1", "2":
			n, ok := parseJoinField(o.Value)
			if !ok {
				c.Errorf("invalid field number: %s", locQuote(o.Value))
				return 1
			}
			if o.Key != "2" {
				j.keys[0] = n
			}
			if o.Key != "1" {
				j.keys[1] = n
			}
		case "o":
			if o.Value == "auto" {
				j.auto = true
				continue
			}
			for _, spec := range strings.FieldsFunc(o.Value, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
				if spec == "0" {
					j.format = append(j.format, joinOut{})
					continue
				}
				f, n, ok := strings.Cut(spec, ".")
				fn, ok2 := parseJoinField(n)
				if !ok || (f != "1" && f != "2") || !ok2 {
					c.Errorf("invalid field specifier: %s", txQuote(spec))
					return 1
				}
				j.format = append(j.format, joinOut{file: int(f[0] - '0'), field: fn})
			}
		case "t":
			switch {
			case o.Value == "":
				j.tab = '\n' // the whole line is one field
			case o.Value == `\0`:
				j.tab = 0
			case len(o.Value) > 1:
				c.Errorf("multi-character tab %s", locQuote(o.Value))
				return 1
			default:
				j.tab = int(o.Value[0])
			}
			j.outSep = []byte{byte(j.tab)}
		case "check-order":
			j.order.mode = 1
		case "nocheck-order":
			j.order.mode = -1
		case "header":
			header = true
		case "zero-terminated":
			j.eol = 0
		}
	}
	if len(files) != 2 {
		if len(files) == 0 {
			return txUsageMsg(c, "missing operand")
		}
		if len(files) == 1 {
			return txUsageMsg(c, "missing operand after "+locQuote(files[0]))
		}
		return txUsageMsg(c, "extra operand "+txQuote(files[2]))
	}
	var lrs [2]*txLineReader
	for i, name := range files {
		j.names[i] = name
		r, err := txOpen(ctx, c, name)
		if err != nil {
			c.Errorf("%s: %s", name, txErr(err))
			return 1
		}
		defer r.Close()
		lrs[i] = newTxLineReader(c, r, j.eol)
	}
	j.out = newTxOut(c.Stdout)
	defer j.out.Flush()
	st = j.run(lrs, header)
	if j.out.Flush() != nil {
		return 1
	}
	return st
}

// reader yields lines of one file and checks their order.
type joinReader struct {
	j    *joiner
	lr   *txLineReader
	file int
	prev *joinLine
	err  error
	n    int    // lines read
	text []byte // the line read last
}

func (r *joinReader) next() *joinLine {
	b, err := r.lr.next()
	if err != nil {
		if err != io.EOF {
			r.err = err
		}
		return nil
	}
	l := r.j.split(append([]byte(nil), bytes.TrimSuffix(b, []byte{r.j.eol})...))
	r.n, r.text = r.n+1, l.text
	if r.prev != nil && !r.j.order.check(r.j.c, r.j.key(r.prev, r.file), r.j.key(&l, r.file), r.file, r.j.cmp) {
		r.err = errCommOrder
		return nil
	}
	r.prev = &l
	return &l
}

func (j *joiner) run(lrs [2]*txLineReader, header bool) int {
	rd := [2]*joinReader{{j: j, lr: lrs[0], file: 0}, {j: j, lr: lrs[1], file: 1}}
	j.order.msg = func(file int) string {
		return fmt.Sprintf("%s:%d: is not sorted: %s", j.names[file], rd[file].n, rd[file].text)
	}
	cur := [2]*joinLine{rd[0].next(), rd[1].next()}
	if j.auto {
		for i := range 2 {
			if cur[i] != nil {
				j.autoCount[i] = len(cur[i].fields)
			}
		}
	}
	if header && (cur[0] != nil || cur[1] != nil) {
		j.print(cur[0], cur[1])
		rd[0].prev, rd[1].prev = nil, nil
		cur = [2]*joinLine{rd[0].next(), rd[1].next()}
	}
	for cur[0] != nil && cur[1] != nil {
		diff := j.cmp(j.key(cur[0], 0), j.key(cur[1], 1))
		if diff != 0 {
			i := 0
			if diff > 0 {
				i = 1
			}
			j.order.unpaired = true
			if j.unpaired[i] {
				j.printUnpaired(cur[i], i)
			}
			cur[i] = rd[i].next()
			continue
		}
		var groups [2][]*joinLine
		for i := range 2 {
			k := j.key(cur[i], i)
			for cur[i] != nil && j.cmp(j.key(cur[i], i), k) == 0 {
				groups[i] = append(groups[i], cur[i])
				cur[i] = rd[i].next()
			}
		}
		if j.pairs {
			for _, a := range groups[0] {
				for _, b := range groups[1] {
					j.print(a, b)
				}
			}
		}
		if j.out.err() != nil {
			return 1
		}
	}
	for i := range 2 {
		for cur[i] != nil {
			if j.unpaired[i] {
				j.printUnpaired(cur[i], i)
			}
			cur[i] = rd[i].next()
		}
	}
	for i := range 2 {
		if rd[i].err != nil {
			j.out.Flush()
			if rd[i].err == errCommOrder {
				return 1
			}
			if txIsCtx(rd[i].err) {
				return txCtxStatus
			}
			j.c.Errorf("%s", txErr(rd[i].err))
			return 1
		}
	}
	if j.order.warned[0] || j.order.warned[1] {
		j.out.Flush()
		j.c.Errorf("input is not in sorted order")
		return 1
	}
	return 0
}

func (j *joiner) printUnpaired(l *joinLine, file int) {
	if file == 0 {
		j.print(l, nil)
	} else {
		j.print(nil, l)
	}
}

func (j *joiner) field(l *joinLine, n int) ([]byte, bool) {
	if l != nil && n < len(l.fields) {
		return l.fields[n], true
	}
	return nil, false
}

func (j *joiner) print(a, b *joinLine) {
	first := true
	put := func(f []byte, ok bool) {
		if !first {
			j.out.Write(j.outSep)
		}
		first = false
		if !ok {
			f = j.empty
		}
		j.out.Write(f)
	}
	joinField := func() ([]byte, bool) {
		if a != nil {
			return j.field(a, j.keys[0])
		}
		return j.field(b, j.keys[1])
	}
	switch {
	case len(j.format) > 0:
		for _, o := range j.format {
			switch o.file {
			case 0:
				put(joinField())
			case 1:
				put(j.field(a, o.field))
			default:
				put(j.field(b, o.field))
			}
		}
	case j.auto:
		put(joinField())
		for i, l := range []*joinLine{a, b} {
			for n := 0; n < j.autoCount[i]; n++ {
				if n != j.keys[i] {
					put(j.field(l, n))
				}
			}
		}
	default:
		f, ok := joinField()
		if ok || !first {
			put(f, true)
		} else {
			first = false
		}
		for i, l := range []*joinLine{a, b} {
			if l == nil {
				continue
			}
			for n, f := range l.fields {
				if n != j.keys[i] {
					put(f, true)
				}
			}
		}
	}
	j.out.WriteByte(j.eol)
}
