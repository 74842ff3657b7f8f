package tools

import (
	"bytes"
	"context"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"rung.dev/rung/shell"
)

// cut: GNU cut 9.1 (-b, -c as bytes like GNU, -f -d -s --complement
// --output-delimiter -z -n).

var cutOpts = NewOptions("b,bytes=", "c,characters=", "f,fields=", "d,delimiter=", "s,only-delimited",
	"complement", "output-delimiter=", "z,zero-terminated", "n")

type cutRange struct{ lo, hi int } // 1-based, inclusive; hi may be MaxInt

// parseCutList parses "1,3-5,-2,7-" into sorted ranges merged where they
// overlap (GNU merges overlapping, not adjacent, ranges).
func parseCutList(list string, fields bool) ([]cutRange, string) {
	var rs []cutRange
	what := "byte/character position"
	if fields {
		what = "field value"
	}
	for _, part := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		lo, hi := 1, math.MaxInt
		a, b, isRange := strings.Cut(part, "-")
		var err error
		if !isRange {
			if lo, err = cutNum(a); err != nil {
				return nil, cutNumErr(a, what, err)
			}
			hi = lo
		} else {
			if a == "" && b == "" {
				return nil, "invalid range with no endpoint: -"
			}
			if a != "" {
				if lo, err = cutNum(a); err != nil {
					return nil, cutNumErr(a, what, err)
				}
			}
			if b != "" {
				if hi, err = cutNum(b); err != nil {
					return nil, cutNumErr(b, what, err)
				}
			}
			if lo == 0 || hi == 0 {
				return nil, map[bool]string{false: "byte/character positions", true: "fields"}[fields] + " are numbered from 1"
			}
			if hi < lo {
				return nil, "invalid decreasing range"
			}
		}
		if lo == 0 {
			return nil, map[bool]string{false: "byte/character positions", true: "fields"}[fields] + " are numbered from 1"
		}
		rs = append(rs, cutRange{lo, hi})
	}
	if len(rs) == 0 {
		return nil, "missing list of " + map[bool]string{false: "byte/character positions", true: "fields"}[fields]
	}
	slices.SortFunc(rs, func(x, y cutRange) int { return x.lo - y.lo })
	merged := rs[:1]
	for _, r := range rs[1:] {
		last := &merged[len(merged)-1]
		if r.lo <= last.hi {
			last.hi = max(last.hi, r.hi)
			continue
		}
		merged = append(merged, r)
	}
	return merged, ""
}

func cutNum(s string) (int, error) {
	for _, ch := range s {
		if ch < '0' || ch > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	n, err := strconv.ParseUint(s, 10, 63)
	if err != nil {
		return 0, strconv.ErrRange
	}
	return int(n), nil
}

func cutNumErr(s, what string, err error) string {
	if err == strconv.ErrRange {
		return what + " " + locQuote(s) + " is too large"
	}
	return "invalid " + what + " " + locQuote(s)
}

func cutComplement(rs []cutRange) []cutRange {
	var out []cutRange
	next := 1
	for _, r := range rs {
		if r.lo > next {
			out = append(out, cutRange{next, r.lo - 1})
		}
		if r.hi == math.MaxInt {
			return out
		}
		next = r.hi + 1
	}
	return append(out, cutRange{next, math.MaxInt})
}

type cutter struct {
	ranges   []cutRange
	fields   bool
	delim    byte
	outDelim []byte
	hasOut   bool
	onlyDel  bool
	eol      byte
}

func runCut(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, cutOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	cu := &cutter{delim: '\t', eol: '\n'}
	list, kinds := "", 0
	complement, delimSet := false, false
	for _, o := range opts {
		switch o.Key {
		case "bytes", "characters", "fields":
			kinds++
			list = o.Value
			cu.fields = o.Key == "fields"
		case "delimiter":
			if len(o.Value) > 1 {
				return txUsageMsg(c, "the delimiter must be a single character")
			}
			cu.delim, delimSet = 0, true
			if o.Value != "" {
				cu.delim = o.Value[0]
			}
		case "only-delimited":
			cu.onlyDel = true
		case "complement":
			complement = true
		case "output-delimiter":
			cu.outDelim, cu.hasOut = []byte(o.Value), true
		case "zero-terminated":
			cu.eol = 0
		}
	}
	switch {
	case kinds == 0:
		return txUsageMsg(c, "you must specify a list of bytes, characters, or fields")
	case kinds > 1:
		return txUsageMsg(c, "only one type of list may be specified")
	case delimSet && !cu.fields:
		return txUsageMsg(c, "an input delimiter may be specified only when operating on fields")
	case cu.onlyDel && !cu.fields:
		return txUsageMsg(c, "suppressing non-delimited lines makes sense\n\tonly when operating on fields")
	}
	rs, msg := parseCutList(list, cu.fields)
	if msg != "" {
		return txUsageMsg(c, msg)
	}
	if complement {
		rs = cutComplement(rs)
	}
	cu.ranges = rs
	if !cu.hasOut && cu.fields {
		cu.outDelim = []byte{cu.delim}
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	out := newTxOut(c.Stdout)
	defer out.Flush()
	status := 0
	for _, name := range files {
		r, err := txOpen(ctx, c, name)
		if err != nil {
			c.Errorf("%s: %s", name, txErr(err))
			status = 1
			continue
		}
		lr := newTxLineReader(c, r, cu.eol)
		for {
			line, err := lr.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if txIsCtx(err) {
					return txCtxStatus
				}
				out.Flush()
				c.Errorf("%s: %s", name, txErr(err))
				status = 1
				break
			}
			line = bytes.TrimSuffix(line, []byte{cu.eol})
			if cu.fields {
				cu.cutFields(out, line)
			} else {
				cu.cutBytes(out, line)
			}
		}
		r.Close()
		if out.err() != nil {
			return 1
		}
	}
	if out.Flush() != nil {
		return 1
	}
	return status
}

func (cu *cutter) cutBytes(out *txOut, line []byte) {
	first := true
	for _, r := range cu.ranges {
		if r.lo > len(line) {
			break
		}
		hi := min(r.hi, len(line))
		if !first && cu.hasOut {
			out.Write(cu.outDelim)
		}
		out.Write(line[r.lo-1 : hi])
		first = false
	}
	out.WriteByte(cu.eol)
}

func (cu *cutter) cutFields(out *txOut, line []byte) {
	if bytes.IndexByte(line, cu.delim) < 0 {
		if !cu.onlyDel {
			out.Write(line)
			out.WriteByte(cu.eol)
		}
		return
	}
	field, ri := 1, 0
	first := true
	for start := 0; start <= len(line); field++ {
		end := bytes.IndexByte(line[start:], cu.delim)
		if end < 0 {
			end = len(line)
		} else {
			end += start
		}
		for ri < len(cu.ranges) && cu.ranges[ri].hi < field {
			ri++
		}
		if ri == len(cu.ranges) {
			break
		}
		if field >= cu.ranges[ri].lo {
			if !first {
				out.Write(cu.outDelim)
			}
			out.Write(line[start:end])
			first = false
		}
		start = end + 1
	}
	out.WriteByte(cu.eol)
}
