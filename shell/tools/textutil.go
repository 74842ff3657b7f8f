package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"unicode/utf8"

	"rung.dev/rung"
	"rung.dev/rung/shell"
)

// This file holds helpers shared by the text tools (textset.go): input
// opening with GNU's messages, context-aware readers, buffered output that
// notices a vanished reader, and GNU's size-suffix parser.

// txOut is a buffered writer over a tool's stdout that remembers the first
// write error, so loops can stop once the reader is gone.
type txOut struct {
	*bufio.Writer
}

func newTxOut(w io.Writer) *txOut { return &txOut{writers32K.get(w)} }

// release gives the buffer back to the pool, dropping anything unflushed;
// o must not be used afterwards. Calling it is optional.
func (o *txOut) release() {
	writers32K.put(o.Writer)
	o.Writer = nil
}

func (o *txOut) err() error {
	// bufio.Writer keeps its error sticky; a zero-length write surfaces it.
	_, err := o.Writer.Write(nil)
	return err
}

// txCtxReader checks ctx before every read, so tools reading endless or
// huge inputs stop promptly when the exec is cancelled.
type txCtxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r txCtxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// txIsCtx reports whether err comes from a cancelled context, or from the
// exec's memory budget (Call.Reserve), which is ending the exec too.
func txIsCtx(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, rung.ErrLimit)
}

// txLineCost is what a held line costs besides its text: its slice header
// and allocation.
const txLineCost = 40

// txHold counts n more bytes a tool holds against the exec's memory budget
// (see shell.Call.Reserve); n <= 0 is free.
func txHold(c *shell.Call, n int) error {
	if n <= 0 {
		return nil
	}
	return c.Reserve(int64(n))
}

// txCtxStatus is the status a text tool returns when its context ends.
const txCtxStatus = 130

// txOpen opens an input operand ("-" is stdin) wrapped in a context check.
func txOpen(ctx context.Context, c *shell.Call, name string) (io.ReadCloser, error) {
	f, err := c.Open(name)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{txCtxReader{ctx, f}, f}, nil
}

// txErr returns GNU's text for a file error: "No such file or directory".
func txErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return shell.ErrText(pe.Err)
	}
	return shell.ErrText(err)
}

// txQuote quotes a file name the way GNU's quote() does in messages: plain
// when it needs no quoting, else in single quotes.
func txQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == ',' || r == '+' || r == ':' || r == '@' || r == '%' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return "'" + s + "'"
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// locQuote quotes s as GNU's quote() does in the C.UTF-8 locale (an
// operand or option value inside a message: "invalid number of lines:
// ‘x’"): ‘s’, with a backslash before a backslash or a right quote, C
// escapes for \a \b \f \n \r \t \v, and octal escapes for the other
// control characters (C0, DEL, C1) and for bytes that are not UTF-8.
func locQuote(s string) string {
	var sb strings.Builder
	sb.WriteString("‘")
	for i := 0; i < len(s); {
		ch := s[i]
		if j := strings.IndexByte("\\\a\b\f\n\r\t\v", ch); j >= 0 {
			sb.WriteByte('\\')
			sb.WriteByte("\\abfnrtv"[j])
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '’':
			sb.WriteString(`\’`)
		case r == utf8.RuneError && n <= 1, r < 0x20, r >= 0x7f && r < 0xa0:
			for _, b := range []byte(s[i : i+n]) {
				fmt.Fprintf(&sb, "\\%03o", b)
			}
		default:
			sb.WriteString(s[i : i+n])
		}
		i += n
	}
	sb.WriteString("’")
	return sb.String()
}

// txName is the name GNU prints for an operand: "standard input" for "-".
func txName(name string) string {
	if name == "-" {
		return "standard input"
	}
	return name
}

// txParse runs the option parser and reports usage errors GNU-style.
// ok is false when the caller must return status.
func txParse(c *shell.Call, o *Options, args []string, usageStatus int) (opts []Opt, operands []string, status int, ok bool) {
	opts, operands, err := o.Parse(args)
	if err != nil {
		return nil, nil, usage(c, err, usageStatus), false
	}
	return opts, operands, 0, true
}

// txSuffixes are GNU xstrtoumax's multiplicative suffixes ("bkKmMGTPEZY",
// with optional "B" for powers of 1000 and "iB" for powers of 1024).
// It reports overflow separately, as GNU's "Value too large" error.
func txParseSize(s string) (n uint64, ok bool) {
	n, ok, over := txParseSizeOv(s)
	return n, ok && !over
}

func txParseSizeOv(s string) (uint64, bool, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, false, false
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	over := false
	if err != nil {
		if !errors.Is(err, strconv.ErrRange) {
			return 0, false, false
		}
		n = ^uint64(0)
		over = true
	}
	suf := s[i:]
	if suf == "" {
		return n, true, over
	}
	var mult uint64
	base := uint64(1024)
	unit := suf[0]
	rest := suf[1:]
	switch rest {
	case "":
	case "B":
		base = 1000
	case "iB":
	default:
		return 0, false, false
	}
	pow := 0
	switch unit {
	case 'b':
		if rest != "" {
			return 0, false, false
		}
		mult = 512
	case 'k', 'K':
		pow = 1
	case 'm', 'M':
		pow = 2
	case 'g', 'G':
		pow = 3
	case 't', 'T':
		pow = 4
	case 'p', 'P':
		pow = 5
	case 'e', 'E':
		pow = 6
	case 'z', 'Z':
		pow = 7
	case 'y', 'Y':
		pow = 8
	default:
		return 0, false, false
	}
	if unit == 'k' && rest == "iB" {
		return 0, false, false
	}
	if mult == 0 {
		mult = 1
		for range pow {
			if mult > ^uint64(0)/base {
				return ^uint64(0), true, true
			}
			mult *= base
		}
	}
	if n != 0 && mult > ^uint64(0)/n {
		return ^uint64(0), true, true
	}
	return n * mult, true, over
}

// txLineReader reads delim-terminated records; the last one may lack its
// delimiter (hasDelim false).
type txLineReader struct {
	r     *bufio.Reader
	delim byte
	c     *shell.Call // a line longer than r's buffer counts against its memory budget
	held  int64       // bytes of long lines counted in c's budget
}

func newTxLineReader(c *shell.Call, r io.Reader, delim byte) *txLineReader {
	return &txLineReader{r: readers64K.get(r), delim: delim, c: c}
}

// release gives the buffer back to the pool; l and every slice it returned
// must not be used afterwards. Calling it is optional.
func (l *txLineReader) release() {
	readers64K.put(l.r)
	l.r = nil
}

// next returns the next record including its delimiter, or io.EOF. The
// slice is valid until the next call.
func (l *txLineReader) next() ([]byte, error) {
	line, err := l.r.ReadSlice(l.delim)
	if err == nil {
		return line, nil
	}
	if errors.Is(err, bufio.ErrBufferFull) {
		// A line longer than the buffer is assembled in memory (cut -c1
		// /dev/zero would take everything): it counts against the exec's
		// budget, kept for the next long line.
		buf := append([]byte(nil), line...)
		for {
			more, err := l.r.ReadSlice(l.delim)
			buf = append(buf, more...)
			if n := int64(cap(buf)); n > l.held {
				if rerr := l.c.Reserve(n - l.held); rerr != nil {
					return nil, rerr
				}
				l.held = n
			}
			if err == nil {
				return buf, nil
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				if err == io.EOF && len(buf) > 0 {
					return buf, nil
				}
				return buf, err
			}
		}
	}
	if err == io.EOF && len(line) > 0 {
		return line, nil
	}
	return line, err
}

// txFail refuses an unimplemented option: the tool's Check already does,
// this is the run-time guard.
func txFail(c *shell.Call, o Opt) int { return c.Fail("option " + o.Name) }

// txUnimpl is a Check wrapper: parse with o, then refuse listed keys.
func txCheck(o *Options, unimpl ...string) func([]string) error {
	return func(args []string) error {
		opts, _, err := o.Parse(args)
		if err != nil {
			return fmt.Errorf("%s: %w", err, shell.ErrUnsupported)
		}
		for _, op := range opts {
			for _, u := range unimpl {
				if op.Key == u {
					return fmt.Errorf("option %s: %w", op.Name, shell.ErrUnsupported)
				}
			}
		}
		return nil
	}
}

// txRefused returns the first option whose key is in unimpl.
func txRefused(opts []Opt, unimpl ...string) (Opt, bool) {
	for _, op := range opts {
		for _, u := range unimpl {
			if op.Key == u {
				return op, true
			}
		}
	}
	return Opt{}, false
}

// txUsageMsg writes "name: msg" and GNU's "Try ... --help" line; status 1.
func txUsageMsg(c *shell.Call, msg string) int { return txUsageStatus(c, msg, 1) }

// txUsageStatus is txUsageMsg with another exit status.
func txUsageStatus(c *shell.Call, msg string, status int) int {
	c.Errorf("%s", msg)
	fmt.Fprintf(c.Stderr, "Try '%s --help' for more information.\n", c.Name())
	return status
}

// errUnsupportedf builds a Check error wrapping [shell.ErrUnsupported].
func errUnsupportedf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, shell.ErrUnsupported)...)
}

// txSplit splits data into delim-terminated records (without delimiter).
func txSplit(data []byte, delim byte) [][]byte {
	n := bytes.Count(data, []byte{delim})
	lines := make([][]byte, 0, n+1)
	for len(data) > 0 {
		i := bytes.IndexByte(data, delim)
		if i < 0 {
			lines = append(lines, data)
			break
		}
		lines = append(lines, data[:i:i])
		data = data[i+1:]
	}
	return lines
}
