package tools

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"rung.dev/rung/shell"
)

var cmpOpts = NewOptions("b,print-bytes", "i,ignore-initial=", "l,verbose", "n,bytes=", "s,silent,quiet")

// cmpChar is GNU cmp's -b rendering of a byte (like cat -v).
func cmpChar(b byte) string {
	var s string
	if b >= 128 {
		s = "M-"
		b -= 128
	}
	switch {
	case b < 32:
		s += "^" + string(rune(b+64))
	case b == 127:
		s += "^?"
	default:
		s += string(rune(b))
	}
	return s
}

// cmpSkip parses a skip count (a number with an optional GNU suffix).
func cmpSkip(s string) (int64, bool) {
	mult := int64(1)
	suffixes := []struct {
		s string
		m int64
	}{{"kB", 1000}, {"K", 1024}, {"k", 1024}, {"MB", 1000 * 1000}, {"M", 1 << 20}, {"GB", 1000 * 1000 * 1000}, {"G", 1 << 30}}
	for _, x := range suffixes {
		if strings.HasSuffix(s, x.s) {
			s, mult = strings.TrimSuffix(s, x.s), x.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err == nil && n >= 0
}

func runCmp(ctx context.Context, c *shell.Call) int {
	opts, operands, err := cmpOpts.Parse(c.Args[1:])
	if err != nil {
		c.Errorf("%s", err)
		fmt.Fprintf(c.Stderr, "Try 'cmp --help' for more information.\n")
		return 2
	}
	var printBytes, verbose, silent bool
	limit := int64(-1)
	var skip [2]int64
	for _, o := range opts {
		switch o.Key {
		case "print-bytes":
			printBytes = true
		case "verbose":
			verbose = true
		case "quiet":
			silent = true
		case "bytes":
			n, ok := cmpSkip(o.Value)
			if !ok {
				c.Errorf("invalid --bytes value '%s'", o.Value)
				return 2
			}
			limit = n
		case "ignore-initial":
			a, b, two := strings.Cut(o.Value, ":")
			n0, ok0 := cmpSkip(a)
			n1, ok1 := n0, true
			if two {
				n1, ok1 = cmpSkip(b)
			}
			if !ok0 || !ok1 {
				c.Errorf("invalid --ignore-initial value '%s'", o.Value)
				return 2
			}
			skip = [2]int64{n0, n1}
		}
	}
	if verbose && silent {
		c.Errorf("options -l and -s are incompatible")
		return 2
	}
	switch {
	case len(operands) == 0:
		c.Errorf("missing operand after 'cmp'")
		fmt.Fprintf(c.Stderr, "Try 'cmp --help' for more information.\n")
		return 2
	case len(operands) > 4:
		c.Errorf("extra operand '%s'", operands[4])
		fmt.Fprintf(c.Stderr, "Try 'cmp --help' for more information.\n")
		return 2
	}
	names := [2]string{operands[0], "-"}
	if len(operands) > 1 {
		names[1] = operands[1]
	}
	for i := 2; i < len(operands); i++ {
		n, ok := cmpSkip(operands[i])
		if !ok {
			c.Errorf("invalid --ignore-initial value '%s'", operands[i])
			return 2
		}
		skip[i-2] = n
	}
	var rs [2]*bufio.Reader
	var sizes [2]int64
	for i, name := range names {
		f, err := c.Open(name)
		if err != nil {
			c.Errorf("%s: %s", name, shell.ErrText(err))
			return 2
		}
		defer f.Close()
		sizes[i] = -1
		if st, ok := f.(interface{ Stat() (fs.FileInfo, error) }); ok && name != "-" {
			if fi, err := st.Stat(); err == nil {
				if fi.IsDir() {
					c.Errorf("%s: Is a directory", name)
					return 2
				}
				sizes[i] = fi.Size() - skip[i]
			}
		}
		rs[i] = bufio.NewReaderSize(f, 64<<10)
		if _, err := io.CopyN(io.Discard, rs[i], skip[i]); err != nil && err != io.EOF {
			c.Errorf("%s: %s", name, shell.ErrText(err))
			return 2
		}
	}
	out := bufio.NewWriter(c.Stdout)
	defer out.Flush()
	width := 1
	if verbose {
		maxOff := int64(-1)
		for _, s := range sizes {
			if s >= 0 && (maxOff < 0 || s < maxOff) {
				maxOff = s
			}
		}
		if limit >= 0 && (maxOff < 0 || limit < maxOff) {
			maxOff = limit
		}
		if maxOff < 0 {
			maxOff = 1<<63 - 1
		}
		width = len(strconv.FormatInt(maxOff, 10))
	}
	var off, line int64 = 0, 1
	status := 0
	for limit < 0 || off < limit {
		if off%(1<<16) == 0 && ctx.Err() != nil {
			return 130
		}
		b0, e0 := rs[0].ReadByte()
		b1, e1 := rs[1].ReadByte()
		if e0 != nil || e1 != nil {
			if e0 != nil && e1 != nil {
				break
			}
			short := names[0]
			if e1 != nil {
				short = names[1]
			}
			if !silent {
				out.Flush()
				switch {
				case off == 0:
					fmt.Fprintf(c.Stderr, "cmp: EOF on %s which is empty\n", short)
				case verbose:
					fmt.Fprintf(c.Stderr, "cmp: EOF on %s after byte %d\n", short, off)
				default:
					fmt.Fprintf(c.Stderr, "cmp: EOF on %s after byte %d, in line %d\n", short, off, line)
				}
			}
			return 1
		}
		off++
		if b0 != b1 {
			status = 1
			switch {
			case silent:
				return 1
			case verbose && printBytes:
				fmt.Fprintf(out, "%*d %3o %-4s %3o %s\n", width, off, b0, cmpChar(b0), b1, cmpChar(b1))
			case verbose:
				fmt.Fprintf(out, "%*d %3o %3o\n", width, off, b0, b1)
			case printBytes:
				fmt.Fprintf(out, "%s %s differ: byte %d, line %d is %3o %s %3o %s\n", names[0], names[1], off, line, b0, cmpChar(b0), b1, cmpChar(b1))
				return 1
			default:
				fmt.Fprintf(out, "%s %s differ: byte %d, line %d\n", names[0], names[1], off, line)
				return 1
			}
		}
		if b0 == '\n' {
			line++
		}
	}
	return status
}
