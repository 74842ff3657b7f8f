package tools

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"rung.dev/rung/shell"
)

// xxd: vim's xxd 2022 (default dump, -p, -i, -b, -r, -r -p, -l -s -c -g
// -u -C -o). -a, -E and -d are refused.

var xxdOpts = NewOptions("a,autoskip", "b,bits", "C,capitalize", "c,cols=", "E,EBCDIC", "e", "g,groupsize=",
	"i,include", "l,len=", "o,offset=", "p,ps,postscript,plain", "r,revert", "s,seek=", "u", "d", "n,name=", "R=")

var xxdUnimpl = []string{"autoskip", "EBCDIC", "e", "d", "name", "R"}

type xxdConf struct {
	bits, include, plain, upper, capital bool
	cols, group                          int
	length                               int64
	offset                               int64
	c                                    *shell.Call // for reading whole inputs within its memory budget
}

func xxdNum(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// xxdArgs maps xxd's single-dash long words (-ps, -include, -cols) onto
// the option table.
func xxdArgs(args []string) []string {
	words := map[string]string{"-ps": "-p", "-postscript": "-p", "-plain": "-p", "-include": "-i", "-bits": "-b",
		"-cols": "-c", "-len": "-l", "-seek": "-s", "-revert": "-r", "-capitalize": "-C", "-groupsize": "-g",
		"-offset": "-o", "-autoskip": "-a", "-uppercase": "-u", "-EBCDIC": "-E", "-name": "-n"}
	out := make([]string, len(args))
	for i, a := range args {
		if w, ok := words[a]; ok {
			a = w
		}
		out[i] = a
	}
	return out
}

func xxdCheck(args []string) error { return txCheck(xxdOpts, xxdUnimpl...)(xxdArgs(args)) }

func runXxd(ctx context.Context, c *shell.Call) int {
	opts, ops, st, ok := txParse(c, xxdOpts, xxdArgs(c.Args[1:]), 1)
	if !ok {
		return st
	}
	if o, bad := txRefused(opts, xxdUnimpl...); bad {
		return txFail(c, o)
	}
	cf := xxdConf{cols: -1, group: -1, length: -1, c: c}
	revert := false
	seek, seekSet, seekEnd := int64(0), false, false
	for _, o := range opts {
		n, numOK := xxdNum(o.Value)
		bad := false
		switch o.Key {
		case "bits":
			cf.bits = true
		case "capitalize":
			cf.capital = true
		case "cols":
			cf.cols, bad = int(n), !numOK || n < 0 || n > 256
		case "groupsize":
			cf.group, bad = int(n), !numOK || n < 0
		case "include":
			cf.include = true
		case "len":
			cf.length, bad = n, !numOK || n < 0
		case "offset":
			cf.offset, bad = n, !numOK
		case "plain":
			cf.plain = true
		case "revert":
			revert = true
		case "seek":
			seek, seekSet, bad = n, true, !numOK
			seekEnd = strings.HasPrefix(o.Value, "-")
		case "u":
			cf.upper = true
		}
		if bad {
			c.Errorf("invalid argument for %s: %s", o.Name, o.Value)
			return 1
		}
	}
	if len(ops) > 2 {
		return txUsageMsg(c, "too many arguments")
	}
	in := "-"
	if len(ops) > 0 {
		in = ops[0]
	}
	r, err := txOpen(ctx, c, in)
	if err != nil {
		c.Errorf("%s: %s", in, txErr(err))
		return 2
	}
	defer r.Close()
	w := c.Stdout
	if len(ops) > 1 && ops[1] != "-" {
		flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		f, err := c.Create(ops[1], flag, 0o666)
		if err != nil {
			c.Errorf("%s: %s", ops[1], txErr(err))
			return 3
		}
		defer f.Close()
		w = f
	}
	out := newTxOut(w)
	if revert {
		err = xxdRevert(c, out, r, cf.plain)
	} else {
		var src io.Reader = r
		start := int64(0)
		if seekSet {
			if seekEnd {
				data, rerr := c.ReadAll(r)
				if rerr != nil {
					err = rerr
				}
				start = max(0, int64(len(data))+seek)
				src = strings.NewReader(string(data[start:]))
			} else if seek > 0 {
				if _, err = io.CopyN(io.Discard, r, seek); err == io.EOF {
					err = nil
				}
				start = seek
			}
		}
		if err == nil {
			if cf.length >= 0 {
				src = io.LimitReader(src, cf.length)
			}
			err = xxdDump(out, src, cf, in, start)
		}
	}
	if ferr := out.Flush(); err == nil && ferr != nil {
		return 1
	}
	if err != nil {
		if txIsCtx(err) {
			return txCtxStatus
		}
		c.Errorf("%s", txErr(err))
		return 2
	}
	return 0
}

func xxdDump(out *txOut, r io.Reader, cf xxdConf, name string, start int64) error {
	hexd := "0123456789abcdef"
	if cf.upper {
		hexd = "0123456789ABCDEF"
	}
	cols, group := cf.cols, cf.group
	switch {
	case cf.plain:
		if cols <= 0 {
			cols = 30
		}
	case cf.include:
		if cols <= 0 {
			cols = 12
		}
	case cf.bits:
		if cols < 0 {
			cols = 6
		}
		if group < 0 {
			group = 1
		}
	default:
		if cols < 0 {
			cols = 16
		}
		if group < 0 {
			group = 2
		}
	}
	if cols == 0 {
		cols = 16
	}
	if group == 0 {
		group = cols
	}
	if cf.include {
		return xxdInclude(cf.c, out, r, cols, hexd, name, cf.capital)
	}
	buf := make([]byte, cols)
	off := start + cf.offset
	br := bufio.NewReader(r)
	per := 2
	if cf.bits {
		per = 8
	}
	width := per*cols + (cols+group-1)/group
	for {
		n, err := io.ReadFull(br, buf)
		if n > 0 {
			line := buf[:n]
			if cf.plain {
				for _, b := range line {
					out.WriteByte(hexd[b>>4])
					out.WriteByte(hexd[b&15])
				}
				out.WriteByte('\n')
			} else {
				fmt.Fprintf(out, "%08x: ", off)
				used := 0
				for i, b := range line {
					if cf.bits {
						out.WriteString(fmt.Sprintf("%08b", b))
					} else {
						out.WriteByte(hexd[b>>4])
						out.WriteByte(hexd[b&15])
					}
					used += per
					if (i+1)%group == 0 {
						out.WriteByte(' ')
						used++
					}
				}
				if n%group != 0 {
					out.WriteByte(' ')
					used++
				}
				for ; used < width; used++ {
					out.WriteByte(' ')
				}
				out.WriteByte(' ')
				for _, b := range line {
					if b >= 0x20 && b < 0x7f {
						out.WriteByte(b)
					} else {
						out.WriteByte('.')
					}
				}
				out.WriteByte('\n')
			}
			off += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func xxdInclude(c *shell.Call, out *txOut, r io.Reader, cols int, hexd, name string, capital bool) error {
	data, err := c.ReadAll(r)
	if err != nil {
		return err
	}
	varName := ""
	if name != "-" {
		var b strings.Builder
		if len(name) > 0 && isDigit(name[0]) {
			b.WriteString("__")
		}
		for i := 0; i < len(name); i++ {
			ch := name[i]
			if isAlpha(ch) || isDigit(ch) {
				b.WriteByte(ch)
			} else {
				b.WriteByte('_')
			}
		}
		varName = b.String()
		if capital {
			varName = strings.ToUpper(varName)
		}
		fmt.Fprintf(out, "unsigned char %s[] = {\n", varName)
	}
	for i, b := range data {
		if i%cols == 0 {
			out.WriteString("  ")
		}
		out.WriteString("0x")
		out.WriteByte(hexd[b>>4])
		out.WriteByte(hexd[b&15])
		switch {
		case i == len(data)-1:
			out.WriteByte('\n')
		case (i+1)%cols == 0:
			out.WriteString(",\n")
		default:
			out.WriteString(", ")
		}
	}
	if varName != "" {
		suffix := "_len"
		if capital {
			suffix = "_LEN"
		}
		fmt.Fprintf(out, "};\nunsigned int %s%s = %d;\n", varName, suffix, len(data))
	}
	return nil
}

// xxdRevert turns a dump (or, with plain, bare hex) back into bytes;
// gaps between line offsets are filled with zeros.
func xxdRevert(c *shell.Call, out *txOut, r io.Reader, plain bool) error {
	data, err := c.ReadAll(r)
	if err != nil {
		return err
	}
	if plain {
		hi := -1
		for _, ch := range data {
			if !isHex(ch) {
				continue
			}
			if hi < 0 {
				hi = hexVal(ch)
				continue
			}
			out.WriteByte(byte(hi<<4 | hexVal(ch)))
			hi = -1
		}
		return nil
	}
	pos := int64(0)
	for _, line := range strings.Split(string(data), "\n") {
		addr, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		off, err := strconv.ParseInt(strings.TrimSpace(addr), 16, 64)
		if err != nil || off < 0 || off > math.MaxInt32*16 {
			continue
		}
		for ; pos < off; pos++ {
			out.WriteByte(0)
		}
		hi, spaces := -1, 0
		for i := 0; i < len(rest); i++ {
			ch := rest[i]
			if ch == ' ' {
				spaces++
				if spaces >= 2 && i > 1 {
					break
				}
				continue
			}
			spaces = 0
			if !isHex(ch) {
				break
			}
			if hi < 0 {
				hi = hexVal(ch)
				continue
			}
			out.WriteByte(byte(hi<<4 | hexVal(ch)))
			pos++
			hi = -1
		}
	}
	return nil
}
