package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"rung.dev/rung/shell"
)

// comm: GNU comm 9.1 (-1 -2 -3, --check-order, --nocheck-order,
// --output-delimiter, --total, -z). Lines compare as bytes (C.UTF-8).

var commOpts = NewOptions("1", "2", "3", "check-order", "nocheck-order", "output-delimiter=", "total", "z,zero-terminated")

// txOrderCheck reports disorder the way comm and join do by default: only
// once unpairable lines were seen, unless checking is forced.
type txOrderCheck struct {
	mode     int // 0 default, 1 enabled, -1 disabled
	warned   [2]bool
	unpaired bool
	// msg, when set, words the complaint about file (join names the
	// file, line number and line).
	msg func(file int) string
}

func (o *txOrderCheck) check(c *shell.Call, prev, cur []byte, file int, cmp func(a, b []byte) int) bool {
	if o.mode < 0 || o.mode == 0 && !o.unpaired || o.warned[file] || prev == nil {
		return true
	}
	if cmp(prev, cur) > 0 {
		if o.msg != nil {
			c.Errorf("%s", o.msg(file))
		} else {
			c.Errorf("file %d is not in sorted order", file+1)
		}
		o.warned[file] = true
		return o.mode != 1
	}
	return true
}

func runComm(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, commOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	var hide [3]bool
	var oc txOrderCheck
	delim, total, eol := []byte("\t"), false, byte('\n')
	delimSet := false
	for _, o := range opts {
		switch o.Key {
		case "1", "2", "3":
			hide[o.Key[0]-'1'] = true
		case "check-order":
			oc.mode = 1
		case "nocheck-order":
			oc.mode = -1
		case "output-delimiter":
			if delimSet && string(delim) != o.Value {
				c.Errorf("multiple output delimiters specified")
				return 1
			}
			delim, delimSet = []byte(o.Value), true
			if o.Value == "" {
				delim = []byte{0}
			}
		case "total":
			total = true
		case "zero-terminated":
			eol = 0
		}
	}
	if len(files) < 2 {
		if len(files) == 0 {
			return txUsageMsg(c, "missing operand")
		}
		return txUsageMsg(c, "missing operand after "+locQuote(files[0]))
	}
	if len(files) > 2 {
		return txUsageMsg(c, "extra operand "+locQuote(files[2]))
	}
	var lrs [2]*txLineReader
	for i, name := range files {
		r, err := txOpen(ctx, c, name)
		if err != nil {
			c.Errorf("%s: %s", name, txErr(err))
			return 1
		}
		defer r.Close()
		lrs[i] = newTxLineReader(c, r, eol)
	}
	out := newTxOut(c.Stdout)
	defer out.Flush()
	var cur, prev [2][]byte
	var counts [3]uint64
	read := func(i int) error {
		b, err := lrs[i].next()
		if err == io.EOF {
			prev[i], cur[i] = cur[i], nil
			return nil
		}
		if err != nil {
			return err
		}
		prev[i], cur[i] = cur[i], append([]byte(nil), bytes.TrimSuffix(b, []byte{eol})...)
		if cur[i] == nil {
			cur[i] = []byte{}
		}
		if !oc.check(c, prev[i], cur[i], i, bytes.Compare) {
			return errCommOrder
		}
		return nil
	}
	for i := range 2 {
		if err := read(i); err != nil {
			return commFail(c, out, err)
		}
	}
	for cur[0] != nil || cur[1] != nil {
		var order int
		switch {
		case cur[0] == nil:
			order = 1
		case cur[1] == nil:
			order = -1
		default:
			order = bytes.Compare(cur[0], cur[1])
		}
		col, line := 2, cur[0]
		switch {
		case order < 0:
			col = 0
			oc.unpaired = true
		case order > 0:
			col, line = 1, cur[1]
			oc.unpaired = true
		}
		counts[col]++
		if !hide[col] {
			for k := 0; k < col; k++ {
				if !hide[k] {
					out.Write(delim)
				}
			}
			out.Write(line)
			out.WriteByte(eol)
		}
		for i := range 2 {
			if order == 0 || order < 0 && i == 0 || order > 0 && i == 1 {
				if err := read(i); err != nil {
					return commFail(c, out, err)
				}
			}
		}
	}
	if total {
		fmt.Fprintf(out, "%d%s%d%s%d%stotal%c", counts[0], delim, counts[1], delim, counts[2], delim, eol)
	}
	out.Flush()
	if oc.warned[0] || oc.warned[1] {
		c.Errorf("input is not in sorted order")
		return 1
	}
	return 0
}

var errCommOrder = fmt.Errorf("order")

func commFail(c *shell.Call, out *txOut, err error) int {
	out.Flush()
	if err == errCommOrder {
		return 1
	}
	if txIsCtx(err) {
		return txCtxStatus
	}
	c.Errorf("%s", txErr(err))
	return 1
}
