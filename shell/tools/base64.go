package tools

import (
	"context"
	"encoding/base64"
	"io"
	"strconv"

	"rung.dev/rung/shell"
)

// base64: GNU base64 9.1 (-d, -i, -w COLS), streaming both ways.

var base64Opts = NewOptions("d,decode", "i,ignore-garbage", "w,wrap=")

func runBase64(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, base64Opts, c.Args[1:], 1)
	if !ok {
		return st
	}
	decode, garbage, wrap := false, false, 76
	for _, o := range opts {
		switch o.Key {
		case "decode":
			decode = true
		case "ignore-garbage":
			garbage = true
		case "wrap":
			n, err := strconv.ParseUint(o.Value, 10, 63)
			if err != nil {
				c.Errorf("invalid wrap size: %s", locQuote(o.Value))
				return 1
			}
			wrap = int(min(n, 1<<40))
		}
	}
	if len(files) > 1 {
		return txUsageMsg(c, "extra operand "+txQuote(files[1]))
	}
	name := "-"
	if len(files) == 1 {
		name = files[0]
	}
	r, err := txOpen(ctx, c, name)
	if err != nil {
		c.Errorf("%s: %s", name, txErr(err))
		return 1
	}
	defer r.Close()
	out := newTxOut(c.Stdout)
	if decode {
		err = base64Decode(out, r, garbage)
	} else {
		err = base64Encode(out, r, wrap)
	}
	ferr := out.Flush()
	switch {
	case err == errBase64Input:
		c.Errorf("invalid input")
		return 1
	case err != nil && txIsCtx(err):
		return txCtxStatus
	case err != nil:
		c.Errorf("%s: %s", name, txErr(err))
		return 1
	case ferr != nil:
		return 1
	}
	return 0
}

func base64Encode(out *txOut, r io.Reader, wrap int) error {
	buf := make([]byte, 3*1024*16)
	enc := make([]byte, base64.StdEncoding.EncodedLen(len(buf)))
	col := 0
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			m := base64.StdEncoding.EncodedLen(n)
			base64.StdEncoding.Encode(enc, buf[:n])
			chunk := enc[:m]
			for len(chunk) > 0 {
				if wrap == 0 {
					out.Write(chunk)
					break
				}
				k := min(len(chunk), wrap-col)
				out.Write(chunk[:k])
				chunk = chunk[k:]
				col += k
				if col == wrap {
					out.WriteByte('\n')
					col = 0
				}
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if wrap > 0 && col > 0 {
		out.WriteByte('\n')
	}
	return nil
}

var errBase64Input = &UsageError{"invalid input"}

func base64Val(b byte) int {
	switch {
	case b >= 'A' && b <= 'Z':
		return int(b - 'A')
	case b >= 'a' && b <= 'z':
		return int(b-'a') + 26
	case b >= '0' && b <= '9':
		return int(b-'0') + 52
	case b == '+':
		return 62
	case b == '/':
		return 63
	}
	return -1
}

// base64Decode decodes quads as they come; an invalid character or a
// short final quad outputs what its complete bytes hold, then fails.
func base64Decode(out *txOut, r io.Reader, garbage bool) error {
	var quad [4]byte
	q := 0
	pad := 0
	flushPartial := func() {
		vals := 0
		var v uint32
		for i := 0; i < q && quad[i] != '='; i++ {
			v = v<<6 | uint32(base64Val(quad[i]))
			vals++
		}
		switch vals {
		case 2:
			out.WriteByte(byte(v >> 4))
		case 3:
			out.WriteByte(byte(v >> 10))
			out.WriteByte(byte(v >> 2))
		}
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			if b == '\n' {
				continue
			}
			isPad := b == '='
			if !isPad && base64Val(b) < 0 || isPad && q < 2 || !isPad && pad > 0 {
				if garbage && !isPad {
					continue
				}
				flushPartial()
				return errBase64Input
			}
			if isPad {
				pad++
			}
			quad[q] = b
			q++
			if q == 4 {
				var v uint32
				for i := range 4 {
					v <<= 6
					if quad[i] != '=' {
						v |= uint32(base64Val(quad[i]))
					}
				}
				out.WriteByte(byte(v >> 16))
				if pad < 2 {
					out.WriteByte(byte(v >> 8))
				}
				if pad < 1 {
					out.WriteByte(byte(v))
				}
				q, pad = 0, 0
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if q > 0 {
		flushPartial()
		return errBase64Input
	}
	return nil
}
