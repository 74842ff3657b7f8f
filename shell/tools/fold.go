package tools

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"

	"rung.dev/rung/shell"
)

// fold (-w -s -b) and expand/unexpand (-t LIST, -i, -a, --first-only):
// GNU 9.1, which counts columns per byte (no multibyte awareness).

var foldOpts = NewOptions("b,bytes", "s,spaces", "w,width=")

// foldObsolete turns "-80" into "-w 80" as GNU fold accepts.
func foldObsolete(args []string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && isNum(a[1:]) {
			out = append(out, "-w", a[1:])
			continue
		}
		out = append(out, a)
	}
	return out
}

func runFold(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, foldOpts, foldObsolete(c.Args[1:]), 1)
	if !ok {
		return st
	}
	width, bytesMode, spaces := 80, false, false
	for _, o := range opts {
		switch o.Key {
		case "bytes":
			bytesMode = true
		case "spaces":
			spaces = true
		case "width":
			n, err := strconv.ParseUint(o.Value, 10, 64)
			if err != nil || n == 0 {
				// GNU's xdectoumax adds why a number is refused.
				why := ""
				switch {
				case n == 0 && err == nil:
					why = ": Numerical result out of range"
				case errors.Is(err, strconv.ErrRange):
					why = ": Value too large for defined data type"
				}
				c.Errorf("invalid number of columns: %s%s", locQuote(o.Value), why)
				return 1
			}
			width = int(min(n, 1<<62))
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
			c.Errorf("%s: %s", name, txErr(err))
			status = 1
			continue
		}
		lr := newTxLineReader(c, r, '\n')
		for {
			line, err := lr.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if txIsCtx(err) {
					return txCtxStatus
				}
				c.Errorf("%s: %s", name, txErr(err))
				status = 1
				break
			}
			foldLine(out, line, width, bytesMode, spaces)
		}
		r.Close()
	}
	if out.Flush() != nil {
		return 1
	}
	return status
}

func foldAdjust(col int, b byte, bytesMode bool) int {
	if bytesMode {
		return col + 1
	}
	switch b {
	case '\b':
		return max(col-1, 0)
	case '\r':
		return 0
	case '\t':
		return col + 8 - col%8
	}
	return col + 1
}

// foldLine is GNU fold_file's loop over one line (with its newline).
func foldLine(out *txOut, line []byte, width int, bytesMode, spaces bool) {
	var buf []byte
	col := 0
	for _, b := range line {
		if b == '\n' {
			buf = append(buf, b)
			out.Write(buf)
			return
		}
	rescan:
		next := foldAdjust(col, b, bytesMode)
		if next > width {
			if spaces {
				if i := lastBlank(buf); i >= 0 {
					out.Write(buf[:i+1])
					out.WriteByte('\n')
					rest := append([]byte(nil), buf[i+1:]...)
					buf = rest
					col = 0
					for _, x := range buf {
						col = foldAdjust(col, x, bytesMode)
					}
					goto rescan
				}
			}
			if len(buf) == 0 {
				buf = append(buf, b)
				col = next
				continue
			}
			buf = append(buf, '\n')
			out.Write(buf)
			buf = buf[:0]
			col = 0
			goto rescan
		}
		col = next
		buf = append(buf, b)
	}
	out.Write(buf)
}

func lastBlank(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ' ' || b[i] == '\t' {
			return i
		}
	}
	return -1
}

var expandOpts = NewOptions("i,initial", "t,tabs=")
var unexpandOpts = NewOptions("a,all", "first-only", "t,tabs=")

// tabStops parses "8", "4,8,12", "1 5", "/4" and "+4" tab lists.
type tabStops struct {
	stops     []int
	every     int // repeat after the last explicit stop: "/N" or a single N
	increment int // "+N": every N after the last stop
}

func parseTabs(specs []string) (tabStops, string) {
	var ts tabStops
	for _, spec := range specs {
		for _, f := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ' ' }) {
			switch {
			case strings.HasPrefix(f, "/"):
				n, err := strconv.Atoi(f[1:])
				if err != nil || n <= 0 {
					return ts, "tab size contains invalid character(s): " + txQuote(f)
				}
				ts.every = n
			case strings.HasPrefix(f, "+"):
				n, err := strconv.Atoi(f[1:])
				if err != nil || n <= 0 {
					return ts, "tab size contains invalid character(s): " + txQuote(f)
				}
				ts.increment = n
			default:
				n, err := strconv.Atoi(f)
				if err != nil {
					return ts, "tab size contains invalid character(s): " + txQuote(f)
				}
				if n == 0 {
					return ts, "tab size cannot be 0"
				}
				if len(ts.stops) > 0 && n <= ts.stops[len(ts.stops)-1] {
					return ts, "tab sizes must be ascending"
				}
				ts.stops = append(ts.stops, n)
			}
		}
	}
	if len(ts.stops) == 1 && ts.every == 0 && ts.increment == 0 {
		ts.every, ts.stops = ts.stops[0], nil
	}
	if len(ts.stops) == 0 && ts.every == 0 && ts.increment == 0 {
		ts.every = 8
	}
	return ts, ""
}

// next returns the column of the next tab stop after col, or -1 when
// there is none (tabs past the last stop become single spaces).
func (ts tabStops) next(col int) int {
	for _, s := range ts.stops {
		if s > col {
			return s
		}
	}
	last := 0
	if len(ts.stops) > 0 {
		last = ts.stops[len(ts.stops)-1]
	}
	switch {
	case ts.every > 0:
		return col + ts.every - col%ts.every
	case ts.increment > 0:
		return last + ((col-last)/ts.increment+1)*ts.increment
	}
	return -1
}

func runExpand(ctx context.Context, c *shell.Call) int {
	unexpand := c.Name() == "unexpand"
	o := expandOpts
	if unexpand {
		o = unexpandOpts
	}
	opts, files, st, ok := txParse(c, o, expandObsolete(c.Args[1:]), 1)
	if !ok {
		return st
	}
	var specs []string
	initial, all, tabsGiven := !unexpand && false, false, false
	for _, op := range opts {
		switch op.Key {
		case "initial":
			initial = true
		case "all":
			all = true
		case "first-only":
			all = false
		case "tabs":
			specs = append(specs, op.Value)
			tabsGiven = true
		}
	}
	if unexpand && tabsGiven {
		all = true
		for _, op := range opts {
			if op.Key == "first-only" {
				all = false
			}
		}
	}
	ts, msg := parseTabs(specs)
	if msg != "" {
		c.Errorf("%s", msg)
		return 1
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
		lr := newTxLineReader(c, r, '\n')
		for {
			line, err := lr.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if txIsCtx(err) {
					return txCtxStatus
				}
				c.Errorf("%s: %s", name, txErr(err))
				status = 1
				break
			}
			if unexpand {
				unexpandLine(out, line, ts, all)
			} else {
				expandLine(out, line, ts, initial)
			}
		}
		r.Close()
	}
	if out.Flush() != nil {
		return 1
	}
	return status
}

// expandObsolete turns "-4" / "-4,8" into "-t 4,8".
func expandObsolete(args []string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && isDigit(a[1]) {
			out = append(out, "-t", a[1:])
			continue
		}
		out = append(out, a)
	}
	return out
}

// expandLine is GNU expand's per-line loop.
func expandLine(out *txOut, line []byte, ts tabStops, initial bool) {
	col := 0
	convert := true
	for _, b := range line {
		if convert {
			switch b {
			case '\t':
				next := ts.next(col)
				if next < 0 {
					next = col + 1
				}
				for col++; col < next; col++ {
					out.WriteByte(' ')
				}
				b = ' '
			case '\b':
				col = max(col-1, 0)
			default:
				col++
			}
			convert = convert && (!initial || b == ' ' || b == '\t')
		}
		out.WriteByte(b)
	}
}

// unexpandLine is GNU unexpand's per-line loop: runs of blanks that reach
// a tab stop become tabs (only leading ones unless all).
func unexpandLine(out *txOut, line []byte, ts tabStops, all bool) {
	col := 0
	convert, prevBlank, oneBefore := true, true, false
	var pend []byte
	for _, b := range line {
		if convert {
			blank := b == ' ' || b == '\t'
			if blank {
				next := ts.next(col)
				if next < 0 {
					convert = false
				}
				if convert {
					if b == '\t' {
						col = next
						if len(pend) > 0 {
							pend[0] = '\t'
						}
					} else {
						col++
						if !(prevBlank && col == next) {
							if col == next {
								oneBefore = true
							}
							pend = append(pend, b)
							prevBlank = true
							continue
						}
						b = '\t'
						if len(pend) > 0 {
							pend[0] = '\t'
						}
					}
					if oneBefore {
						pend = pend[:min(1, len(pend))]
					} else {
						pend = pend[:0]
					}
				}
			} else if b == '\b' {
				col = max(col-1, 0)
			} else {
				col++
			}
			if len(pend) > 0 {
				if len(pend) > 1 && oneBefore {
					pend[0] = '\t'
				}
				out.Write(pend)
				pend = pend[:0]
				oneBefore = false
			}
			prevBlank = blank
			convert = convert && (all || blank)
		}
		out.WriteByte(b)
	}
	out.Write(pend)
}
