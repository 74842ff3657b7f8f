package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"rung.dev/rung/shell"
)

// xargs runs its commands one after another: -P is accepted and runs
// them sequentially (the output is then what -P 1 gives).

var xargsOpts = func() *Options {
	o := NewOptions("0,null", "a,arg-file=", "d,delimiter=", "E=", "e,eof=?", "I=", "i,replace=?",
		"L=", "l,max-lines=?", "n,max-args=", "P,max-procs=", "p,interactive", "r,no-run-if-empty",
		"s,max-chars=", "t,verbose", "x,exit", "o,open-tty", "process-slot-var=", "show-limits",
		"help", "version")
	o.Posix = true
	return o
}()

func addXargs(m map[string]shell.Tool) {
	m["xargs"] = shell.Tool{Run: runXargs, Check: checkXargs}
}

func xargsUnsupported(o Opt) string {
	switch o.Key {
	case "interactive", "open-tty", "process-slot-var", "show-limits", "help", "version":
		return "option " + o.Name
	}
	return ""
}

func checkXargs(args []string) error {
	opts, _, err := xargsOpts.Parse(args)
	if err != nil {
		return fmt.Errorf("xargs: %w: %w", err, shell.ErrUnsupported)
	}
	for _, o := range opts {
		if why := xargsUnsupported(o); why != "" {
			return fmt.Errorf("xargs: %s: %w", why, shell.ErrUnsupported)
		}
	}
	return nil
}

// xargsDefaultSize is GNU's default command buffer (xargs --show-limits).
const xargsDefaultSize = 131072

type xargsRun struct {
	c        *shell.Call
	ctx      context.Context
	cmd      []string
	maxArgs  int // 0: unlimited
	maxLines int
	maxChars int
	replace  string
	hasRepl  bool
	verbose  bool
	exitSize bool
	noEmpty  bool
	eofStr   string
	hasEOF   bool
	status   int
	ran      bool
}

func runXargs(ctx context.Context, c *shell.Call) int {
	opts, operands, err := xargsOpts.Parse(c.Args[1:])
	if err != nil {
		c.Errorf("%s", err)
		fmt.Fprintf(c.Stderr, "Try 'xargs --help' for more information.\n")
		return 1
	}
	x := &xargsRun{c: c, ctx: ctx, maxChars: xargsDefaultSize}
	var delim byte
	hasDelim := false
	input := c.Stdin
	for _, o := range opts {
		if why := xargsUnsupported(o); why != "" {
			return c.Fail(why)
		}
	}
	num := func(o Opt, min int) (int, bool) {
		n, err := strconv.Atoi(o.Value)
		if err != nil || n < min {
			c.Errorf("invalid number \"%s\" for %s option", o.Value, o.Name)
			return 0, false
		}
		return n, true
	}
	for _, o := range opts {
		var ok = true
		switch o.Key {
		case "null":
			delim, hasDelim = 0, true
		case "delimiter":
			d, err := xargsDelim(o.Value)
			if err != nil {
				c.Errorf("%s", err)
				return 1
			}
			delim, hasDelim = d, true
		case "arg-file":
			f, err := c.Open(o.Value)
			if err != nil {
				c.Errorf("Cannot open input file '%s': %s", o.Value, shell.ErrText(err))
				return 1
			}
			defer f.Close()
			input = f
		case "E":
			x.eofStr, x.hasEOF = o.Value, o.Value != ""
		case "eof":
			x.eofStr, x.hasEOF = o.Value, o.Value != ""
		case "I", "replace":
			x.replace, x.hasRepl = o.Value, true
			if o.Key == "replace" && !o.HasArg {
				x.replace = "{}"
			}
			x.maxLines, x.maxArgs = 1, 0
		case "L", "max-lines":
			x.maxLines = 1
			if o.HasArg {
				x.maxLines, ok = num(o, 1)
			}
			if x.maxArgs > 0 {
				c.Errorf("warning: options --max-args and -L are mutually exclusive, ignoring previous --max-args value")
			}
			x.maxArgs, x.hasRepl = 0, false
		case "max-args":
			x.maxArgs, ok = num(o, 1)
			if x.maxLines > 0 && !x.hasRepl {
				c.Errorf("warning: options --max-lines and --max-args are mutually exclusive, ignoring previous --max-lines value")
				x.maxLines = 0
			}
		case "max-procs":
			_, ok = num(o, 0)
		case "no-run-if-empty":
			x.noEmpty = true
		case "max-chars":
			x.maxChars, ok = num(o, 1)
		case "verbose":
			x.verbose = true
		case "exit":
			x.exitSize = true
		}
		if !ok {
			return 1
		}
	}
	x.cmd = operands
	if len(x.cmd) == 0 {
		x.cmd = []string{"echo"}
	}
	base := 0
	for _, a := range x.cmd {
		base += len(a) + 1
	}
	if base > x.maxChars && !x.hasRepl {
		c.Errorf("cannot fit single argument within argument list size limit")
		return 1
	}
	br := bufio.NewReaderSize(input, 64<<10)
	var rd xargsReader
	switch {
	case hasDelim:
		rd = &xargsDelimReader{br: br, delim: delim}
	case x.hasRepl:
		rd = &xargsLineReader{br: br}
	default:
		rd = &xargsWordReader{br: br}
	}
	return x.loop(rd, base)
}

// loop reads items and runs commands as they fill up.
func (x *xargsRun) loop(rd xargsReader, base int) int {
	var args []string
	size, lines := base, 0
	for {
		if x.ctx.Err() != nil {
			return 130
		}
		item, eol, err := rd.next()
		if err != nil && err != io.EOF {
			if len(args) > 0 {
				if st, stop := x.exec(args); stop {
					return st
				}
			}
			x.c.Errorf("%s", err)
			return 1
		}
		done := err == io.EOF
		if item != nil && x.hasEOF && *item == x.eofStr {
			done, item = true, nil
		}
		if item != nil {
			if x.hasRepl {
				if st, stop := x.exec([]string{*item}); stop {
					return st
				}
				continue
			}
			if len(args) > 0 && size+len(*item)+1 > x.maxChars {
				if x.exitSize && (x.maxArgs > 0 || x.maxLines > 0) {
					x.c.Errorf("argument list too long")
					return 1
				}
				if st, stop := x.exec(args); stop {
					return st
				}
				args, size, lines = args[:0], base, 0
			}
			if size+len(*item)+1 > x.maxChars {
				x.c.Errorf("argument line too long")
				return 1
			}
			args = append(args, *item)
			size += len(*item) + 1
		}
		if eol {
			lines++
		}
		full := x.maxArgs > 0 && len(args) >= x.maxArgs || x.maxLines > 0 && lines >= x.maxLines && eol
		if full && len(args) > 0 {
			if st, stop := x.exec(args); stop {
				return st
			}
			args, size, lines = args[:0], base, 0
		}
		if done {
			break
		}
	}
	if len(args) > 0 || !x.ran && !x.noEmpty && !x.hasRepl {
		if st, stop := x.exec(args); stop {
			return st
		}
	}
	return x.status
}

// exec runs the command with args; stop is set when xargs must exit.
func (x *xargsRun) exec(args []string) (int, bool) {
	x.ran = true
	var argv []string
	if x.hasRepl {
		for _, a := range x.cmd {
			argv = append(argv, strings.ReplaceAll(a, x.replace, args[0]))
		}
	} else {
		argv = append(append(argv, x.cmd...), args...)
	}
	if x.verbose {
		fmt.Fprintln(x.c.Stderr, strings.Join(argv, " "))
	}
	sub := &shell.Call{Args: argv, Stdin: strings.NewReader(""), Stdout: x.c.Stdout, Stderr: x.c.Stderr,
		Dir: x.c.Dir, Env: x.c.Env, FS: x.c.FS, Exec: x.c.Exec, FDs: x.c.FDs}
	st := x.c.Exec(x.ctx, sub)
	if sub.Unsupported != nil {
		x.c.Unsupported = sub.Unsupported
	}
	switch {
	case st == 0:
	case st == 127:
		return 127, true
	case st == 126:
		return 126, true
	case st == 255:
		x.c.Errorf("%s: exited with status 255; aborting", argv[0])
		return 124, true
	case st > 128 && st < 255:
		x.c.Errorf("%s: terminated by signal %d", argv[0], st-128)
		return 125, true
	default:
		x.status = 123
	}
	return 0, false
}

// xargsReader yields input items; eol reports that the item ended a
// logical line (for -L).
type xargsReader interface {
	next() (item *string, eol bool, err error)
}

// xargsWordReader is xargs's default parsing: items separated by blanks
// and newlines, with '...', "..." and backslash quoting.
type xargsWordReader struct {
	br        *bufio.Reader
	pending   bool // an item of the current logical line was returned
	lastBlank bool // the last byte read was a blank
}

var errXargsQuote = errors.New("quote")

func (r *xargsWordReader) next() (*string, bool, error) {
	var sb strings.Builder
	have := false
	var quote byte
	item := func(eol bool) *string {
		s := sb.String()
		r.pending = !eol
		return &s
	}
	for {
		ch, err := r.br.ReadByte()
		if err != nil {
			if quote != 0 {
				return nil, false, xargsQuoteErr(quote)
			}
			if have {
				return item(true), true, io.EOF
			}
			return nil, r.pending, io.EOF
		}
		blank := ch == ' ' || ch == '\t'
		wasBlank := r.lastBlank
		r.lastBlank = blank && quote == 0
		if quote != 0 {
			if ch == quote {
				quote = 0
				continue
			}
			if ch == '\n' {
				return nil, false, xargsQuoteErr(quote)
			}
			sb.WriteByte(ch)
			continue
		}
		switch {
		case blank && have:
			return item(false), false, nil
		case blank:
		case ch == '\n' && have:
			return item(true), true, nil
		case ch == '\n':
			// A blank at the end of a line continues the logical line
			// (-L); an empty line ends nothing.
			if r.pending && !wasBlank {
				r.pending = false
				return nil, true, nil
			}
		case ch == '\'' || ch == '"':
			quote, have = ch, true
		case ch == '\\':
			n, err := r.br.ReadByte()
			if err != nil {
				return item(true), true, io.EOF
			}
			sb.WriteByte(n)
			have = true
		default:
			sb.WriteByte(ch)
			have = true
		}
	}
}

func xargsQuoteErr(q byte) error {
	kind := "single"
	if q == '"' {
		kind = "double"
	}
	return fmt.Errorf("unmatched %s quote; by default quotes are special to xargs unless you use the -0 option", kind)
}

// xargsLineReader is -I's parsing: one item per line, leading blanks
// removed, quotes and backslashes still special.
type xargsLineReader struct {
	br *bufio.Reader
}

func (r *xargsLineReader) next() (*string, bool, error) {
	for {
		line, err := r.br.ReadString('\n')
		if line == "" && err != nil {
			return nil, false, io.EOF
		}
		line = strings.TrimSuffix(line, "\n")
		line = strings.TrimLeft(line, " \t")
		if line == "" {
			if err != nil {
				return nil, false, io.EOF
			}
			continue
		}
		var sb strings.Builder
		var quote byte
		for i := 0; i < len(line); i++ {
			ch := line[i]
			switch {
			case quote != 0 && ch == quote:
				quote = 0
			case quote != 0:
				sb.WriteByte(ch)
			case ch == '\'' || ch == '"':
				quote = ch
			case ch == '\\' && i+1 < len(line):
				i++
				sb.WriteByte(line[i])
			default:
				sb.WriteByte(ch)
			}
		}
		if quote != 0 {
			return nil, false, xargsQuoteErr(quote)
		}
		s := sb.String()
		if err != nil {
			return &s, true, io.EOF
		}
		return &s, true, nil
	}
}

// xargsDelimReader is -0 and -d: items end at delim, nothing is special.
type xargsDelimReader struct {
	br    *bufio.Reader
	delim byte
}

func (r *xargsDelimReader) next() (*string, bool, error) {
	s, err := r.br.ReadString(r.delim)
	if err != nil {
		if s == "" {
			return nil, false, io.EOF
		}
		return &s, true, io.EOF
	}
	s = s[:len(s)-1]
	return &s, true, nil
}

// xargsDelim decodes -d's argument: a character or an escape.
func xargsDelim(s string) (byte, error) {
	if len(s) == 1 {
		return s[0], nil
	}
	if len(s) >= 2 && s[0] == '\\' {
		switch s[1] {
		case 'n':
			return '\n', nil
		case 't':
			return '\t', nil
		case 'r':
			return '\r', nil
		case 'a':
			return '\a', nil
		case 'b':
			return '\b', nil
		case 'f':
			return '\f', nil
		case 'v':
			return '\v', nil
		case '\\':
			return '\\', nil
		case 'x':
			if n, err := strconv.ParseUint(s[2:], 16, 8); err == nil {
				return byte(n), nil
			}
		case '0', '1', '2', '3':
			if n, err := strconv.ParseUint(s[1:], 8, 8); err == nil {
				return byte(n), nil
			}
		}
	}
	return 0, fmt.Errorf("invalid input delimiter specification %s: the delimiter must be either a single character or an escape sequence starting with \\.", s)
}
