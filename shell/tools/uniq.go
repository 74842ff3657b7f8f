package tools

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strconv"

	"rung.dev/rung/shell"
)

// uniq: GNU uniq 9.1 (-c -d -D --all-repeated -u -i -f -s -w -z --group).

var uniqOpts = NewOptions("c,count", "d,repeated", "D", "all-repeated=?", "u,unique", "i,ignore-case",
	"f,skip-fields=", "s,skip-chars=", "w,check-chars=", "z,zero-terminated", "group=?")

type uniqer struct {
	count, repeated, unique, icase bool
	allRepeated                    string // "", "none", "prepend", "separate"
	group                          string // "", "separate", "prepend", "append", "both"
	skipFields, skipChars          uint64
	checkChars                     uint64
	delim                          byte
}

func runUniq(ctx context.Context, c *shell.Call) int {
	opts, args, st, ok := txParse(c, uniqOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	u := &uniqer{checkChars: ^uint64(0), delim: '\n'}
	for _, o := range opts {
		var err bool
		switch o.Key {
		case "count":
			u.count = true
		case "repeated":
			u.repeated = true
		case "D":
			u.allRepeated = "none"
		case "all-repeated":
			u.allRepeated = o.Value
			if !o.HasArg {
				u.allRepeated = "none"
			}
			err = u.allRepeated != "none" && u.allRepeated != "prepend" && u.allRepeated != "separate"
		case "group":
			u.group = o.Value
			if !o.HasArg {
				u.group = "separate"
			}
			err = u.group != "separate" && u.group != "prepend" && u.group != "append" && u.group != "both"
		case "unique":
			u.unique = true
		case "ignore-case":
			u.icase = true
		case "skip-fields", "skip-chars", "check-chars":
			n, perr := strconv.ParseUint(o.Value, 10, 64)
			if perr != nil && !errors.Is(perr, strconv.ErrRange) {
				what := map[string]string{"skip-fields": "number of fields to skip",
					"skip-chars": "number of bytes to skip", "check-chars": "number of bytes to compare"}[o.Key]
				c.Errorf("%s: %s", o.Value, "invalid "+what)
				return 1
			}
			if perr != nil {
				n = ^uint64(0)
			}
			switch o.Key {
			case "skip-fields":
				u.skipFields = n
			case "skip-chars":
				u.skipChars = n
			default:
				u.checkChars = n
			}
		case "zero-terminated":
			u.delim = 0
		}
		if err {
			c.Errorf("invalid argument %s for '%s'", txQuote(o.Value), o.Name)
			return 1
		}
	}
	if u.group != "" && (u.count || u.repeated || u.unique || u.allRepeated != "") {
		return txUsageMsg(c, "--group is mutually exclusive with -c/-d/-D/-u")
	}
	if u.count && u.allRepeated != "" {
		return txUsageMsg(c, "printing all duplicated lines and repeat counts is meaningless")
	}
	if len(args) > 2 {
		return txUsageMsg(c, "extra operand "+locQuote(args[2]))
	}
	in := "-"
	if len(args) > 0 {
		in = args[0]
	}
	r, err := txOpen(ctx, c, in)
	if err != nil {
		c.Errorf("%s: %s", in, txErr(err))
		return 1
	}
	defer r.Close()
	w := c.Stdout
	if len(args) > 1 && args[1] != "-" {
		f, err := c.Create(args[1], os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		if err != nil {
			c.Errorf("%s: %s", args[1], txErr(err))
			return 1
		}
		defer f.Close()
		w = f
	}
	out := newTxOut(w)
	defer out.release()
	lr := newTxLineReader(c, r, u.delim)
	defer lr.release()
	err = u.run(lr, out)
	if ferr := out.Flush(); ferr != nil {
		return 1
	}
	if err != nil {
		if txIsCtx(err) {
			return txCtxStatus
		}
		c.Errorf("%s: %s", in, txErr(err))
		return 1
	}
	return 0
}

// key returns the part of line (without delimiter) that uniq compares.
func (u *uniqer) key(line []byte) []byte {
	i := 0
	for n := u.skipFields; n > 0 && i < len(line); n-- {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\n') {
			i++
		}
		for i < len(line) && !(line[i] == ' ' || line[i] == '\t' || line[i] == '\n') {
			i++
		}
	}
	i += int(min(u.skipChars, uint64(len(line)-i)))
	k := line[i:]
	if uint64(len(k)) > u.checkChars {
		k = k[:u.checkChars]
	}
	return k
}

func (u *uniqer) equal(a, b []byte) bool {
	ka, kb := u.key(a), u.key(b)
	if u.icase {
		return len(ka) == len(kb) && uniqFoldEq(ka, kb)
	}
	return bytes.Equal(ka, kb)
}

func uniqFoldEq(a, b []byte) bool {
	for i := range a {
		x, y := a[i], b[i]
		if x >= 'a' && x <= 'z' {
			x -= 32
		}
		if y >= 'a' && y <= 'z' {
			y -= 32
		}
		if x != y {
			return false
		}
	}
	return true
}

// run mirrors GNU check_file: a line is written when its group ends (or,
// with -D, as soon as it is known to repeat), and the group's count
// decides whether that kind of line is wanted.
func (u *uniqer) run(lr *txLineReader, out *txOut) error {
	unique := !u.repeated && u.allRepeated == ""
	firstRep := !u.unique
	laterRep := u.allRepeated != ""
	want := func(match bool, count uint64) bool {
		switch {
		case count == 0:
			return unique
		case !match:
			return firstRep
		}
		return laterRep
	}
	var prev []byte
	var count uint64
	have, firstDelim := false, true
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		line = bytes.TrimSuffix(line, []byte{u.delim})
		if u.group != "" {
			if have && u.equal(prev, line) {
				u.writeLine(out, line, 0)
				continue
			}
			if have || u.group == "prepend" || u.group == "both" {
				out.WriteByte(u.delim)
			}
			u.writeLine(out, line, 0)
			prev = append(prev[:0], line...)
			have = true
			continue
		}
		match := have && u.equal(prev, line)
		if match {
			count++
		}
		if laterRep && u.allRepeated != "none" {
			if !match {
				if count > 0 {
					firstDelim = false
				}
			} else if count == 1 && (u.allRepeated == "prepend" || !firstDelim) {
				out.WriteByte(u.delim)
			}
		}
		if have && (!match || laterRep) && want(match, count) {
			u.writeLine(out, prev, uniqCount(u.count, count))
		}
		if !have || !match || laterRep {
			prev = append(prev[:0], line...)
		}
		if !match {
			count = 0
		}
		have = true
		if out.err() != nil {
			return nil
		}
	}
	if !have {
		return nil
	}
	if u.group != "" {
		if u.group == "append" || u.group == "both" {
			out.WriteByte(u.delim)
		}
		return nil
	}
	if want(false, count) {
		u.writeLine(out, prev, uniqCount(u.count, count))
	}
	return nil
}

// uniqCount is the count to print: the group size with -c, else none.
func uniqCount(on bool, matches uint64) uint64 {
	if on {
		return matches + 1
	}
	return 0
}

func (u *uniqer) writeLine(out *txOut, line []byte, count uint64) {
	if count > 0 {
		s := strconv.FormatUint(count, 10)
		for i := len(s); i < 7; i++ {
			out.WriteByte(' ')
		}
		out.WriteString(s)
		out.WriteByte(' ')
	}
	out.Write(line)
	out.WriteByte(u.delim)
}
