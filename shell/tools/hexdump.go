package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"

	"rung.dev/rung/shell"
)

// hexdump: util-linux hexdump's default (16-bit words) and -C canonical
// formats, with -n, -s and -v; -e/-f format strings are refused.

var hexdumpOpts = NewOptions("C,canonical", "n,length=", "s,skip=", "v,no-squeezing", "b,one-byte-octal",
	"c,one-byte-char", "d,two-bytes-decimal", "o,two-bytes-octal", "x,two-bytes-hex", "e,format=", "f,format-file=", "L,color=?")

var hexdumpUnimpl = []string{"one-byte-octal", "one-byte-char", "two-bytes-decimal", "two-bytes-octal",
	"two-bytes-hex", "format", "format-file", "color"}

func runHexdump(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, hexdumpOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	if o, bad := txRefused(opts, hexdumpUnimpl...); bad {
		return txFail(c, o)
	}
	canonical, verbose := false, false
	length, skip := int64(-1), int64(0)
	for _, o := range opts {
		switch o.Key {
		case "canonical":
			canonical = true
		case "no-squeezing":
			verbose = true
		case "length", "skip":
			n, ok := odSize(o.Value)
			if !ok || n > math.MaxInt64 {
				c.Errorf("invalid %s argument: '%s'", o.Name, o.Value)
				return 1
			}
			if o.Key == "length" {
				length = int64(n)
			} else {
				skip = int64(n)
			}
		}
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	var readers []io.Reader
	status := 0
	for _, name := range files {
		r, err := txOpen(ctx, c, name)
		if err != nil {
			c.Errorf("%s: %s", name, txErr(err))
			status = 1
			continue
		}
		defer r.Close()
		readers = append(readers, r)
	}
	if len(readers) == 0 {
		c.Errorf("all input file arguments failed")
		return 1
	}
	in := io.MultiReader(readers...)
	if skip > 0 {
		n, err := io.CopyN(io.Discard, in, skip)
		if err != nil && err != io.EOF {
			c.Errorf("%s", txErr(err))
			return 1
		}
		skip = n
	}
	if length >= 0 {
		in = io.LimitReader(in, length)
	}
	out := newTxOut(c.Stdout)
	off := skip
	prev, cur := make([]byte, 16), make([]byte, 16)
	first, starred := true, false
	any := false
	for {
		n, err := io.ReadFull(in, cur)
		if n > 0 {
			any = true
			if !verbose && !first && n == 16 && bytes.Equal(prev, cur) {
				if !starred {
					out.WriteString("*\n")
					starred = true
				}
			} else {
				starred = false
				hexdumpLine(out, cur[:n], off, canonical)
			}
			first = false
			off += int64(n)
			prev, cur = cur, prev
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			if txIsCtx(err) {
				return txCtxStatus
			}
			out.Flush()
			c.Errorf("%s", txErr(err))
			return 1
		}
	}
	if any || !canonical {
		if canonical {
			fmt.Fprintf(out, "%08x\n", off)
		} else if any {
			fmt.Fprintf(out, "%07x\n", off)
		}
	}
	if out.Flush() != nil {
		return 1
	}
	return status
}

func hexdumpLine(out *txOut, b []byte, off int64, canonical bool) {
	if canonical {
		fmt.Fprintf(out, "%08x  ", off)
		for i := range 16 {
			if i < len(b) {
				fmt.Fprintf(out, "%02x ", b[i])
			} else {
				out.WriteString("   ")
			}
			if i == 7 {
				out.WriteByte(' ')
			}
		}
		out.WriteString(" |")
		for _, x := range b {
			if x >= 0x20 && x < 0x7f {
				out.WriteByte(x)
			} else {
				out.WriteByte('.')
			}
		}
		out.WriteString("|\n")
		return
	}
	fmt.Fprintf(out, "%07x", off)
	for i := 0; i < 16; i += 2 {
		switch {
		case i+1 < len(b):
			fmt.Fprintf(out, " %04x", uint16(b[i])|uint16(b[i+1])<<8)
		case i < len(b):
			fmt.Fprintf(out, " %04x", uint16(b[i]))
		default:
			out.WriteString("     ")
		}
	}
	out.WriteByte('\n')
}
