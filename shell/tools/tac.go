package tools

import (
	"bytes"
	"context"
	"io"
	"unicode/utf8"

	"rung.dev/rung/shell"
)

// tac (-s SEP, -b; -r refused) and rev (util-linux: reverses the
// characters of each line, stopping at an invalid multibyte sequence as
// util-linux does in a UTF-8 locale). Both hold one input in memory.

var tacOpts = NewOptions("b,before", "r,regex", "s,separator=")

func tacCheck(args []string) error { return txCheck(tacOpts, "regex")(args) }

func runTac(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, tacOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	if o, bad := txRefused(opts, "regex"); bad {
		return txFail(c, o)
	}
	sep, before := []byte("\n"), false
	for _, o := range opts {
		switch o.Key {
		case "before":
			before = true
		case "separator":
			if o.Value == "" {
				c.Errorf("separator cannot be empty")
				return 1
			}
			sep = []byte(o.Value)
		}
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
			c.Errorf("failed to open %s for reading: %s", txQuote(name), txErr(err))
			status = 1
			continue
		}
		data, err := c.ReadAll(r)
		r.Close()
		if err != nil {
			if txIsCtx(err) {
				return txCtxStatus
			}
			c.Errorf("%s: read error: %s", txQuote(name), txErr(err))
			status = 1
			continue
		}
		tacWrite(out, data, sep, before)
	}
	if out.Flush() != nil {
		return 1
	}
	return status
}

// tacWrite prints data's records last first; a record owns the separator
// that ends it (or, with before, the one that starts it).
func tacWrite(out *txOut, data, sep []byte, before bool) {
	var recs [][]byte
	if before {
		cut := 0
		for off := 0; ; {
			i := bytes.Index(data[off:], sep)
			if i < 0 {
				break
			}
			if off+i > cut {
				recs = append(recs, data[cut:off+i])
				cut = off + i
			}
			off += i + len(sep)
		}
		recs = append(recs, data[cut:])
	} else {
		for len(data) > 0 {
			i := bytes.Index(data, sep)
			if i < 0 {
				recs = append(recs, data)
				break
			}
			recs = append(recs, data[:i+len(sep)])
			data = data[i+len(sep):]
		}
	}
	for i := len(recs) - 1; i >= 0; i-- {
		out.Write(recs[i])
	}
}

func runRev(ctx context.Context, c *shell.Call) int {
	files := c.Args[1:]
	for _, f := range files {
		if len(f) > 1 && f[0] == '-' {
			return usage(c, &UsageError{"invalid option -- '" + f[1:2] + "'"}, 1)
		}
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
			out.Flush()
			c.Errorf("cannot open %s: %s", name, txErr(err))
			status = 1
			continue
		}
		lr := newTxLineReader(c, r, '\n')
		for n := 1; ; n++ {
			line, err := lr.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if txIsCtx(err) {
					return txCtxStatus
				}
				status = 1
				break
			}
			nl := bytes.HasSuffix(line, []byte("\n"))
			line = bytes.TrimSuffix(line, []byte("\n"))
			if !utf8.Valid(line) {
				out.Flush()
				c.Errorf("%s: %d: Invalid or incomplete multibyte or wide character", txName(name), n)
				status = 1
				break
			}
			rs := []rune(string(line))
			for i := len(rs) - 1; i >= 0; i-- {
				out.WriteRune(rs[i])
			}
			if nl {
				out.WriteByte('\n')
			}
		}
		r.Close()
	}
	if out.Flush() != nil {
		return 1
	}
	return status
}
