package tools

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"rung.dev/rung/shell"
)

// csplit: GNU csplit 9.1 (N, /RE/[OFF], %RE%[OFF], {N}, {*}; -f -n -k -s
// -z). -b (suffix format) and --suppress-matched are refused. Input is
// held in memory.

var csplitOpts = NewOptions("b,suffix-format=", "f,prefix=", "k,keep-files", "n,digits=", "s,quiet,silent",
	"z,elide-empty-files", "suppress-matched")

var csplitUnimpl = []string{"suffix-format", "suppress-matched"}

type csplitPat struct {
	text   string
	line   int // > 0 for a line-number pattern
	re     *regexp.Regexp
	skip   bool // %RE%
	offset int
	repeat int // extra repetitions; -1 for {*}
}

func parseCsplitPats(args []string) ([]csplitPat, error) {
	var pats []csplitPat
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "{") && strings.HasSuffix(a, "}"):
			if len(pats) == 0 {
				return nil, fmt.Errorf("%s: invalid pattern", txQuote(a))
			}
			inner := a[1 : len(a)-1]
			n := -1
			if inner != "*" {
				v, err := strconv.Atoi(inner)
				if err != nil || v < 0 {
					return nil, fmt.Errorf("%s: invalid repeat count", txQuote(a))
				}
				n = v
			}
			pats[len(pats)-1].repeat = n
		case strings.HasPrefix(a, "/") || strings.HasPrefix(a, "%"):
			delim := a[:1]
			end := strings.LastIndex(a, delim)
			if end == 0 {
				return nil, fmt.Errorf("%s: closing delimiter '%s' missing", txQuote(a), delim)
			}
			p := csplitPat{text: a, skip: delim == "%"}
			re, err := txCompileBRE(a[1:end])
			if err != nil {
				return nil, err
			}
			p.re = re
			if off := a[end+1:]; off != "" {
				v, err := strconv.Atoi(off)
				if err != nil {
					return nil, fmt.Errorf("%s: integer expected after delimiter", txQuote(a))
				}
				p.offset = v
			}
			pats = append(pats, p)
		default:
			v, err := strconv.Atoi(a)
			if err != nil || v <= 0 {
				return nil, fmt.Errorf("%s: invalid pattern", txQuote(a))
			}
			if len(pats) > 0 && pats[len(pats)-1].line > v {
				return nil, fmt.Errorf("line number %s is smaller than preceding line number, %d", txQuote(a), pats[len(pats)-1].line)
			}
			pats = append(pats, csplitPat{text: a, line: v})
		}
	}
	return pats, nil
}

type csplitter struct {
	c       *shell.Call
	prefix  string
	digits  int
	quiet   bool
	elide   bool
	created []string
	out     *txOut
}

func (s *csplitter) emit(lines []string) error {
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	if s.elide && size == 0 {
		return nil
	}
	name := fmt.Sprintf("%s%0*d", s.prefix, s.digits, len(s.created))
	f, err := s.c.Create(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return fmt.Errorf("%s: %s", txQuote(name), txErr(err))
	}
	s.created = append(s.created, name)
	for _, l := range lines {
		if _, err := io.WriteString(f, l); err != nil {
			f.Close()
			return fmt.Errorf("%s: %s", txQuote(name), txErr(err))
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if !s.quiet {
		fmt.Fprintf(s.out, "%d\n", size)
	}
	return nil
}

func runCsplit(ctx context.Context, c *shell.Call) int {
	opts, ops, st, ok := txParse(c, csplitOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	if o, bad := txRefused(opts, csplitUnimpl...); bad {
		return txFail(c, o)
	}
	s := &csplitter{c: c, prefix: "xx", digits: 2, out: newTxOut(c.Stdout)}
	defer s.out.Flush()
	keep := false
	for _, o := range opts {
		switch o.Key {
		case "prefix":
			s.prefix = o.Value
		case "digits":
			n, err := strconv.Atoi(o.Value)
			if err != nil || n < 0 {
				c.Errorf("invalid number: %s", txQuote(o.Value))
				return 1
			}
			s.digits = n
		case "keep-files":
			keep = true
		case "quiet", "silent":
			s.quiet = true
		case "elide-empty-files":
			s.elide = true
		}
	}
	if len(ops) < 2 {
		if len(ops) == 0 {
			return txUsageMsg(c, "missing operand")
		}
		return txUsageMsg(c, "missing operand after "+txQuote(ops[0]))
	}
	pats, err := parseCsplitPats(ops[1:])
	if err != nil {
		if err == errBREUnsupported {
			return c.Fail("regular expression")
		}
		c.Errorf("%s", err)
		return 1
	}
	r, err := txOpen(ctx, c, ops[0])
	if err != nil {
		c.Errorf("cannot open %s for reading: %s", txQuote(ops[0]), txErr(err))
		return 1
	}
	data, err := c.ReadAll(r)
	r.Close()
	if err != nil {
		if txIsCtx(err) {
			return txCtxStatus
		}
		c.Errorf("read error: %s", txErr(err))
		return 1
	}
	var lines []string
	for _, l := range txSplitKeep(data, '\n') {
		lines = append(lines, string(l))
	}
	if err := s.run(lines, pats); err != nil {
		s.out.Flush()
		c.Errorf("%s", err)
		if !keep {
			for _, name := range s.created {
				c.FS.Remove(c.Abs(name))
			}
		}
		return 1
	}
	if s.out.Flush() != nil {
		return 1
	}
	return 0
}

func (s *csplitter) run(lines []string, pats []csplitPat) error {
	cur, splits := 0, 0
	for _, p := range pats {
		for rep := 0; p.repeat < 0 || rep <= p.repeat; rep++ {
			suffix := ""
			if rep > 0 {
				suffix = fmt.Sprintf(" on repetition %d", rep)
			}
			if p.line > 0 {
				target := p.line*(rep+1) - 1
				if target > len(lines) || target < cur {
					if err := s.emit(lines[cur:]); err != nil {
						return err
					}
					return fmt.Errorf("%s: line number out of range%s", txQuote(p.text), suffix)
				}
				if err := s.emit(lines[cur:target]); err != nil {
					return err
				}
				cur = target
				splits++
				continue
			}
			from := cur
			if splits > 0 {
				from = cur + 1
			}
			m := -1
			for i := from; i < len(lines); i++ {
				if p.re.MatchString(strings.TrimSuffix(lines[i], "\n")) {
					m = i
					break
				}
			}
			if m < 0 {
				if p.repeat < 0 {
					return s.emit(lines[cur:])
				}
				if !p.skip {
					if err := s.emit(lines[cur:]); err != nil {
						return err
					}
				}
				return fmt.Errorf("%s: match not found%s", txQuote(p.text), suffix)
			}
			target := m + p.offset
			if target < cur || target > len(lines) {
				if !p.skip {
					if err := s.emit(lines[cur:]); err != nil {
						return err
					}
				}
				return fmt.Errorf("%s: line number out of range%s", txQuote(p.text), suffix)
			}
			if !p.skip {
				if err := s.emit(lines[cur:target]); err != nil {
					return err
				}
			}
			cur = target
			splits++
		}
	}
	return s.emit(lines[cur:])
}
