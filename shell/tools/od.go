package tools

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"rung.dev/rung/shell"
)

// od: GNU od 9.1 (-A d o x n, -t a c d o u x f with sizes, -a -b -c -d -f
// -i -l -o -s -x, -j -N -v -w; repeated blocks collapse into '*').
// Little-endian, as on the hosts rung runs on. --endian, -S and long
// doubles are refused.

var odOpts = NewOptions("A,address-radix=", "t,format=", "j,skip-bytes=", "N,read-bytes=", "v,output-duplicates",
	"w,width=?", "a", "b", "c", "d", "f", "i", "l", "o", "s", "x", "endian=", "S,strings=?", "traditional")

var odUnimpl = []string{"endian", "strings", "traditional"}

type odSpec struct {
	kind  byte // a c d o u x f
	size  int
	width int
	pad   int
	z     bool // -t ...z: the bytes as text after the line, >like this<
}

var odWidths = map[string]int{"x1": 2, "x2": 4, "x4": 8, "x8": 16, "o1": 3, "o2": 6, "o4": 11, "o8": 22,
	"u1": 3, "u2": 5, "u4": 10, "u8": 20, "d1": 4, "d2": 6, "d4": 11, "d8": 20, "f4": 15, "f8": 24, "a1": 3, "c1": 3}

func parseOdType(s string) ([]odSpec, error) {
	var out []odSpec
	for s != "" {
		k := s[0]
		s = s[1:]
		size := 1
		switch k {
		case 'a', 'c':
		case 'd', 'o', 'u', 'x', 'f':
			size = 4
			if k == 'f' {
				size = 8
			}
			switch {
			case s != "" && isDigit(s[0]):
				i := 0
				for i < len(s) && isDigit(s[i]) {
					i++
				}
				size, _ = strconv.Atoi(s[:i])
				s = s[i:]
			case s != "" && strings.IndexByte("CSILFD", s[0]) >= 0:
				size = map[byte]int{'C': 1, 'S': 2, 'I': 4, 'L': 8, 'F': 4, 'D': 8}[s[0]]
				if (k == 'f') != (s[0] == 'F' || s[0] == 'D') {
					return nil, fmt.Errorf("invalid type string %s", txQuote(string(k)+s))
				}
				s = s[1:]
			}
		default:
			return nil, fmt.Errorf("invalid type string %s", txQuote(string(k)+s))
		}
		w, ok := odWidths[string(k)+strconv.Itoa(size)]
		if !ok {
			if k == 'f' {
				return nil, errUnsupportedf("od -t f%d", size)
			}
			return nil, fmt.Errorf("invalid type string %s;\nthis system doesn't provide a %d-byte integral type", txQuote(string(k)+strconv.Itoa(size)), size)
		}
		z := s != "" && s[0] == 'z'
		if z {
			s = s[1:]
		}
		out = append(out, odSpec{kind: k, size: size, width: w, z: z})
	}
	return out, nil
}

var odNames = []string{"nul", "soh", "stx", "etx", "eot", "enq", "ack", "bel", "bs", "ht", "nl", "vt", "ff", "cr",
	"so", "si", "dle", "dc1", "dc2", "dc3", "dc4", "nak", "syn", "etb", "can", "em", "sub", "esc", "fs", "gs", "rs", "us", "sp"}

func runOd(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, odOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	if o, bad := txRefused(opts, odUnimpl...); bad {
		return txFail(c, o)
	}
	radix := byte('o')
	var specs []odSpec
	var skip, limit uint64
	hasLimit, verbose := false, false
	width := 16
	for _, o := range opts {
		var add string
		switch o.Key {
		case "address-radix":
			if len(o.Value) != 1 || strings.IndexByte("doxn", o.Value[0]) < 0 {
				c.Errorf("invalid output address radix '%s'; it must be one character from [doxn]", o.Value)
				return 1
			}
			radix = o.Value[0]
		case "format":
			add = o.Value
		case "skip-bytes", "read-bytes":
			n, ok := odSize(o.Value)
			if !ok {
				c.Errorf("invalid %s argument %s", o.Name, txQuote(o.Value))
				return 1
			}
			if o.Key == "skip-bytes" {
				skip = n
			} else {
				limit, hasLimit = n, true
			}
		case "output-duplicates":
			verbose = true
		case "width":
			width = 32
			if o.HasArg {
				n, err := strconv.Atoi(o.Value)
				if err != nil || n <= 0 {
					c.Errorf("invalid -w argument %s", txQuote(o.Value))
					return 1
				}
				width = n
			}
		default:
			add = map[string]string{"a": "a", "b": "o1", "c": "c", "d": "u2", "f": "f4", "i": "dI", "l": "dL",
				"o": "o2", "s": "d2", "x": "x2"}[o.Key]
		}
		if add != "" {
			s, err := parseOdType(add)
			if err != nil {
				if strings.Contains(err.Error(), shell.ErrUnsupported.Error()) {
					return c.Fail(err.Error())
				}
				c.Errorf("%s", err)
				return 1
			}
			specs = append(specs, s...)
		}
	}
	if len(specs) == 0 {
		specs = []odSpec{{kind: 'o', size: 2, width: 6}}
	}
	for _, s := range specs {
		if width%s.size != 0 {
			c.Errorf("invalid -w argument %s", txQuote(strconv.Itoa(width)))
			return 1
		}
	}
	blockWidth := 0
	for _, s := range specs {
		blockWidth = max(blockWidth, (s.width+1)*(width/s.size))
	}
	for i := range specs {
		specs[i].pad = blockWidth - (specs[i].width+1)*(width/specs[i].size)
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
		return 1
	}
	in := io.MultiReader(readers...)
	if skip > 0 {
		n, err := io.CopyN(io.Discard, in, int64(min(skip, math.MaxInt64)))
		if err != nil && err != io.EOF {
			c.Errorf("%s", txErr(err))
			return 1
		}
		if uint64(n) < skip {
			c.Errorf("cannot skip past end of combined input")
			return 1
		}
	}
	if hasLimit {
		in = io.LimitReader(in, int64(min(limit, math.MaxInt64)))
	}
	out := newTxOut(c.Stdout)
	offset := skip
	prev := make([]byte, width)
	cur := make([]byte, width)
	first, prevEqual := true, false
	for {
		n, err := io.ReadFull(in, cur)
		if n > 0 {
			clear(cur[n:])
			if !verbose && !first && n == width && bytes.Equal(prev, cur) {
				if !prevEqual {
					out.WriteString("*\n")
					prevEqual = true
				}
			} else {
				prevEqual = false
				odBlock(out, specs, radix, offset, cur, n, width)
			}
			first = false
			offset += uint64(n)
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
		if out.err() != nil {
			return 1
		}
	}
	if radix != 'n' {
		out.WriteString(odAddr(radix, offset))
		out.WriteByte('\n')
	}
	if out.Flush() != nil {
		return 1
	}
	return status
}

func odSize(s string) (uint64, bool) {
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		n, err := strconv.ParseUint(s[2:], 16, 64)
		return n, err == nil
	}
	if len(s) > 1 && s[0] == '0' && isNum(s) {
		n, err := strconv.ParseUint(s[1:], 8, 64)
		return n, err == nil
	}
	return txParseSize(s)
}

func odAddr(radix byte, off uint64) string {
	switch radix {
	case 'd':
		return fmt.Sprintf("%07d", off)
	case 'x':
		return fmt.Sprintf("%06x", off)
	case 'n':
		return ""
	}
	return fmt.Sprintf("%07o", off)
}

func odBlock(out *txOut, specs []odSpec, radix byte, offset uint64, block []byte, n, width int) {
	addrLen := len(odAddr(radix, 0))
	for i, s := range specs {
		if i == 0 {
			out.WriteString(odAddr(radix, offset))
		} else {
			out.WriteString(strings.Repeat(" ", addrLen))
		}
		fields := width / s.size
		blank := (width - n) / s.size
		padRemaining := s.pad
		for f := fields; f > 0; f-- {
			nextPad := s.pad * (f - 1) / fields
			w := padRemaining - nextPad + s.width
			padRemaining = nextPad
			if f <= blank {
				if !s.z {
					break
				}
				// -t ...z: the text column stays where a full line puts it
				out.WriteString(strings.Repeat(" ", w+1))
				continue
			}
			idx := (fields - f) * s.size
			txt := odFormat(s, block[idx:idx+s.size])
			for k := len(txt); k < w+1; k++ {
				out.WriteByte(' ')
			}
			out.WriteString(txt)
		}
		if s.z {
			out.WriteString("  >")
			for _, b := range block[:n] {
				if b < 0x20 || b > 0x7e {
					b = '.'
				}
				out.WriteByte(b)
			}
			out.WriteByte('<')
		}
		out.WriteByte('\n')
	}
}

func odFormat(s odSpec, b []byte) string {
	var u uint64
	switch s.size {
	case 1:
		u = uint64(b[0])
	case 2:
		u = uint64(binary.LittleEndian.Uint16(b))
	case 4:
		u = uint64(binary.LittleEndian.Uint32(b))
	case 8:
		u = binary.LittleEndian.Uint64(b)
	}
	switch s.kind {
	case 'x':
		return fmt.Sprintf("%0*x", s.width, u)
	case 'o':
		return fmt.Sprintf("%0*o", s.width, u)
	case 'u':
		return strconv.FormatUint(u, 10)
	case 'd':
		shift := 64 - 8*s.size
		return strconv.FormatInt(int64(u<<shift)>>shift, 10)
	case 'f':
		if s.size == 4 {
			return odFloat(float64(math.Float32frombits(uint32(u))), 6, 32)
		}
		return odFloat(math.Float64frombits(u), 15, 64)
	case 'a':
		c := b[0] & 0x7f
		switch {
		case int(c) < len(odNames):
			return odNames[c]
		case c == 0x7f:
			return "del"
		}
		return string(rune(c))
	}
	c := b[0]
	switch c {
	case 0:
		return `\0`
	case 7:
		return `\a`
	case 8:
		return `\b`
	case 12:
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case 11:
		return `\v`
	}
	if c >= 0x20 && c < 0x7f {
		return string(rune(c))
	}
	return fmt.Sprintf("%03o", c)
}

// odFloat is gnulib's ftoastr: the shortest %.*g (from digits up) that
// reads back as the same value.
func odFloat(f float64, digits, bits int) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	minNormal := 2.2250738585072014e-308
	if bits == 32 {
		minNormal = 1.1754943508222875e-38
	}
	if math.Abs(f) < minNormal {
		digits = 1 // subnormals start from one digit, as ftoastr does
	}
	for p := digits; p < 20; p++ {
		s := cFormatFloat(cSpec{verb: 'g', prec: p, hasPrec: true}, cLD(f))
		v, err := strconv.ParseFloat(s, bits)
		if err == nil && v == f {
			return s
		}
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}
