package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode"
	"unicode/utf8"

	"rung.dev/rung/shell"
)

// sedOut is one output stream of sed. GNU sed remembers that the last line
// it wrote lacked its newline and writes that newline before anything
// else goes to the same stream.
type sedOut struct {
	w         *bufio.Writer
	closer    io.Closer
	missingNL bool
}

// sedStream reads lines of one or more inputs with one line of lookahead,
// so that "$" is known.
type sedStream struct {
	c       *shell.Call
	names   []string
	eol     byte
	br      *bufio.Reader
	cur     io.Closer
	curName string
	next    []byte
	nextNL  bool
	hasNext bool
	status  *int
	fatal   bool
	name    string // file the current line came from
	buf     []byte // reused line buffer
}

func (s *sedStream) open() bool {
	for len(s.names) > 0 {
		name := s.names[0]
		s.names = s.names[1:]
		r, err := s.c.Open(name)
		if err != nil {
			fmt.Fprintf(s.c.Stderr, "sed: can't read %s: %s\n", name, shell.ErrText(err))
			*s.status = 2
			continue
		}
		s.cur, s.br, s.curName = r, bufio.NewReaderSize(r, 64<<10), name
		return true
	}
	return false
}

// fetch reads the lookahead line.
func (s *sedStream) fetch() {
	s.hasNext = false
	for !s.fatal {
		if s.br == nil && !s.open() {
			return
		}
		line, err := s.readLine()
		if len(line) > 0 {
			s.nextNL = line[len(line)-1] == s.eol
			if s.nextNL {
				line = line[:len(line)-1]
			}
			s.next, s.hasNext = line, true
			s.name = s.curName
			if err != nil && err != io.EOF {
				s.readErr(err)
			}
			return
		}
		if err != nil && err != io.EOF {
			s.readErr(err)
		}
		s.cur.Close()
		s.br, s.cur = nil, nil
	}
}

// sedMaxLine bounds one input line; GNU sed runs out of memory instead.
const sedMaxLine = 256 << 20

var errSedLineTooLong = errors.New("couldn't re-allocate memory")

// readLine is ReadBytes(eol) with a bound on the line's length.
func (s *sedStream) readLine() ([]byte, error) {
	// The lookahead line is copied out before the next fetch, so one
	// buffer serves every line.
	line := s.buf[:0]
	defer func() { s.buf = line[:0] }()
	for {
		frag, err := s.br.ReadSlice(s.eol)
		line = append(line, frag...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
		if len(line) > sedMaxLine {
			return line, errSedLineTooLong
		}
	}
}

func (s *sedStream) readErr(err error) {
	if errors.Is(err, errSedLineTooLong) {
		fmt.Fprintf(s.c.Stderr, "sed: %s\n", err)
		*s.status = 4
		s.fatal = true
		return
	}
	fmt.Fprintf(s.c.Stderr, "sed: read error on %s: %s\n", s.curName, shell.ErrText(err))
	*s.status = 4
	s.fatal = true
}

func (s *sedStream) close() {
	if s.cur != nil {
		s.cur.Close()
		s.cur, s.br = nil, nil
	}
}

// sedRun executes a parsed script.
type sedRun struct {
	c        *shell.Call
	cmds     []*sedCmd
	quiet    bool
	eol      byte
	lineLen  int
	out      *sedOut
	stdout   *sedOut
	wfiles   map[string]*sedOut
	rfiles   map[string]*bufio.Reader
	ps, hs   []byte
	scratch  []byte // the previous pattern space, reused by s
	held     int64  // bytes of ps, hs and scratch counted in the memory budget
	psNL     bool   // the pattern space's last line had its newline
	hsNL     bool   // likewise for the hold space (GNU copies it with the text)
	lastRE   *rePosix
	lineno   int64
	tflag    bool
	appendQ  []sedAppend
	in       *sedStream
	status   int
	quit     bool
	errMsg   string
	fileName string
}

type sedAppend struct {
	text   []byte
	rfile  string
	isFile bool
}

var errSedNoRE = errors.New("no previous regular expression")

func (r *sedRun) write(o *sedOut, b []byte, nl bool) {
	if o.missingNL {
		o.w.WriteByte(r.eol)
		o.missingNL = false
	}
	o.w.Write(b)
	if nl {
		o.w.WriteByte(r.eol)
	} else {
		o.missingNL = true
	}
}

// account counts the pattern, hold and scratch spaces against the exec's
// memory budget as they grow: N and H in a loop (sed ':a;N;ba') hold the
// whole input.
func (r *sedRun) account() error {
	n := int64(cap(r.ps) + cap(r.hs) + cap(r.scratch))
	if n <= r.held {
		return nil
	}
	if err := r.c.Reserve(n - r.held); err != nil {
		return err
	}
	r.held = n
	return nil
}

// readLine moves the lookahead line into the pattern space.
func (r *sedRun) readLine(appendPS bool) bool {
	if !r.in.hasNext {
		return false
	}
	r.dumpAppend()
	if appendPS {
		r.ps = append(r.ps, r.eol)
		r.ps = append(r.ps, r.in.next...)
	} else {
		r.ps = append(r.ps[:0], r.in.next...)
	}
	r.psNL = r.in.nextNL
	r.tflag = false
	r.fileName = r.in.name
	r.lineno++
	r.in.fetch()
	return true
}

func (r *sedRun) isLast() bool { return !r.in.hasNext }

// cycle runs the script over the stream until it ends or q.
func (r *sedRun) cycle(ctx context.Context) error {
	restart := false
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if !restart {
			if !r.readLine(false) {
				return nil
			}
			r.tflag = false
		}
		restart = false
		act, err := r.exec()
		if err != nil {
			return err
		}
		if (act == sedActEnd || act == sedActQuit) && !r.quiet {
			r.write(r.out, r.ps, r.psNL)
		}
		if act != sedActQuitSilent {
			r.dumpAppend()
		}
		switch act {
		case sedActQuit, sedActQuitSilent:
			r.quit = true
			return nil
		case sedActRestart:
			restart = true
		}
	}
}

type sedAct int

const (
	sedActEnd        sedAct = iota // end of script: autoprint
	sedActDelete                   // d: no autoprint
	sedActRestart                  // D with a newline left
	sedActQuit                     // q
	sedActQuitSilent               // Q
)

// exec runs the commands once over the pattern space.
func (r *sedRun) exec() (sedAct, error) {
	cmds := r.cmds
	for pc := 0; pc < len(cmds); {
		if err := r.account(); err != nil {
			return sedActEnd, err
		}
		c := cmds[pc]
		sel, err := r.selects(c)
		if err != nil {
			return sedActEnd, err
		}
		if sel == c.neg {
			if c.name == '{' {
				pc = c.jump
			} else {
				pc++
			}
			continue
		}
		pc++
		switch c.name {
		case '{', '}', ':':
		case '=':
			r.write(r.out, strconv.AppendInt(nil, r.lineno, 10), true)
			if r.eol == 0 {
				r.out.w.WriteByte('\n')
			}
		case 'a':
			r.appendQ = append(r.appendQ, sedAppend{text: []byte(c.text)})
		case 'i':
			r.writeText(r.out, c.text)
		case 'c':
			if c.a2 == nil || c.neg || !c.inRange {
				r.writeText(r.out, c.text)
			}
			return sedActDelete, nil
		case 'b':
			pc = c.jump
		case 't':
			if r.tflag {
				r.tflag = false
				pc = c.jump
			}
		case 'T':
			if !r.tflag {
				pc = c.jump
			} else {
				r.tflag = false
			}
		case 'd':
			return sedActDelete, nil
		case 'D':
			i := bytes.IndexByte(r.ps, r.eol)
			if i < 0 {
				return sedActDelete, nil
			}
			// No autoprint: the cycle restarts on the rest, without input.
			r.ps = append(r.ps[:0], r.ps[i+1:]...)
			return sedActRestart, nil
		case 'g':
			r.ps, r.psNL = append(r.ps[:0], r.hs...), r.hsNL
		case 'G':
			r.ps, r.psNL = append(append(r.ps, r.eol), r.hs...), r.hsNL
		case 'h':
			r.hs, r.hsNL = append(r.hs[:0], r.ps...), r.psNL
		case 'H':
			r.hs, r.hsNL = append(append(r.hs, r.eol), r.ps...), r.psNL
		case 'x':
			r.ps, r.hs = r.hs, r.ps
			r.psNL, r.hsNL = r.hsNL, r.psNL
		case 'l':
			w := r.lineLen
			if c.hasNum {
				w = c.num
			}
			r.listPS(w)
		case 'n':
			if r.isLast() {
				return sedActEnd, nil
			}
			if !r.quiet {
				r.write(r.out, r.ps, r.psNL)
			}
			r.readLine(false)
		case 'N':
			if r.isLast() {
				return sedActEnd, nil
			}
			r.readLine(true)
		case 'p':
			r.write(r.out, r.ps, r.psNL)
		case 'P':
			line := r.ps
			if i := bytes.IndexByte(line, r.eol); i >= 0 {
				line = line[:i]
			}
			r.write(r.out, line, true)
		case 'q':
			if c.hasNum {
				r.status = c.num
			}
			return sedActQuit, nil
		case 'Q':
			if c.hasNum {
				r.status = c.num
			}
			return sedActQuitSilent, nil
		case 'r':
			r.appendQ = append(r.appendQ, sedAppend{rfile: c.text, isFile: true})
		case 'R':
			r.readRLine(c.text)
		case 'w':
			r.write(r.wfiles[c.text], r.ps, true)
		case 'W':
			line := r.ps
			if i := bytes.IndexByte(line, r.eol); i >= 0 {
				line = line[:i]
			}
			r.write(r.wfiles[c.text], line, true)
		case 's':
			if err := r.subst(c); err != nil {
				return sedActEnd, err
			}
		case 'y':
			r.translate(c.ymap)
		case 'z':
			r.ps = r.ps[:0]
		case 'F':
			name := r.fileName
			r.write(r.out, []byte(name), true)
		}
	}
	return sedActEnd, nil
}

func (r *sedRun) writeText(o *sedOut, text string) {
	if o.missingNL {
		o.w.WriteByte(r.eol)
		o.missingNL = false
	}
	o.w.WriteString(text)
}

func (r *sedRun) dumpAppend() {
	for _, a := range r.appendQ {
		if !a.isFile {
			r.writeText(r.out, string(a.text))
			continue
		}
		f, err := r.c.Open(a.rfile)
		if err != nil {
			continue
		}
		if r.out.missingNL {
			r.out.w.WriteByte(r.eol)
			r.out.missingNL = false
		}
		io.Copy(r.out.w, f)
		f.Close()
	}
	r.appendQ = r.appendQ[:0]
}

func (r *sedRun) readRLine(name string) {
	br, ok := r.rfiles[name]
	if !ok {
		f, err := r.c.Open(name)
		if err == nil {
			br = bufio.NewReader(f)
		}
		r.rfiles[name] = br
	}
	if br == nil {
		return
	}
	line, err := br.ReadBytes('\n')
	if len(line) == 0 && err != nil {
		return
	}
	if line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	r.appendQ = append(r.appendQ, sedAppend{text: line})
}

// regex resolves an empty regex to the last one used.
func (r *sedRun) regex(sr *sedRegex) (*rePosix, error) {
	if sr.empty {
		if r.lastRE == nil {
			return nil, errSedNoRE
		}
		return r.lastRE, nil
	}
	r.lastRE = sr.re
	return sr.re, nil
}

func (r *sedRun) match1(a *sedAddr) (bool, error) {
	switch a.kind {
	case sedAddrLine:
		return r.lineno == a.n, nil
	case sedAddrLast:
		return r.isLast(), nil
	case sedAddrStep:
		if a.step <= 0 {
			return r.lineno == a.n, nil
		}
		return r.lineno >= a.n && (r.lineno-a.n)%a.step == 0, nil
	case sedAddrRE:
		re, err := r.regex(a.re)
		if err != nil {
			return false, err
		}
		return re.match(r.ps), nil
	}
	return false, nil
}

// selects reports whether c's address matches the current line, and
// keeps c's range state.
func (r *sedRun) selects(c *sedCmd) (bool, error) {
	if c.a1 == nil {
		return true, nil
	}
	if c.a2 == nil {
		return r.match1(c.a1)
	}
	l := r.lineno
	if c.inRange {
		switch c.a2.kind {
		case sedAddrLine, sedAddrPlus:
			if l >= c.rangeTo {
				c.inRange = false
			}
			return l <= c.rangeTo, nil
		case sedAddrLast:
			if r.isLast() {
				c.inRange = false
			}
		case sedAddrTilde:
			if c.a2.n <= 0 || l%c.a2.n == 0 {
				c.inRange = false
			}
		case sedAddrRE:
			ok, err := r.match1(c.a2)
			if err != nil {
				return false, err
			}
			if ok {
				c.inRange = false
			}
		}
		return true, nil
	}
	if c.a1.kind == sedAddrZero {
		return false, nil
	}
	ok, err := r.match1(c.a1)
	if err != nil || !ok {
		return false, err
	}
	switch c.a2.kind {
	case sedAddrLine:
		if c.a2.n > l {
			c.inRange, c.rangeTo = true, c.a2.n
		}
	case sedAddrPlus:
		if c.a2.n > 0 {
			c.inRange, c.rangeTo = true, l+c.a2.n
		}
	case sedAddrTilde:
		// GNU: even when addr1 is on a multiple, the range runs to the next.
		c.inRange = c.a2.n > 0
	case sedAddrLast:
		c.inRange = !r.isLast()
	case sedAddrRE:
		c.inRange = true
	}
	return true, nil
}

func (r *sedRun) translate(m map[rune]rune) {
	out := make([]byte, 0, len(r.ps))
	for i := 0; i < len(r.ps); {
		c, w := utf8.DecodeRune(r.ps[i:])
		if w == 1 && c == utf8.RuneError {
			if t, ok := m[rune(r.ps[i])]; ok && r.ps[i] < 0x80 {
				out = utf8.AppendRune(out, t)
			} else {
				out = append(out, r.ps[i])
			}
			i++
			continue
		}
		if t, ok := m[c]; ok {
			out = utf8.AppendRune(out, t)
		} else {
			out = append(out, r.ps[i:i+w]...)
		}
		i += w
	}
	r.ps = out
}

// listPS writes the pattern space unambiguously (the l command).
func (r *sedRun) listPS(width int) {
	var obuf []byte
	col := 0
	emit := func(s string) {
		if width > 1 && col+len(s) > width-1 {
			obuf = append(obuf, "\\\n"...)
			col = 0
		}
		obuf = append(obuf, s...)
		col += len(s)
	}
	for _, b := range r.ps {
		switch {
		case b == '\\':
			emit(`\\`)
		case b == '\a':
			emit(`\a`)
		case b == '\b':
			emit(`\b`)
		case b == '\f':
			emit(`\f`)
		case b == '\n':
			emit(`\n`)
		case b == '\r':
			emit(`\r`)
		case b == '\t':
			emit(`\t`)
		case b == '\v':
			emit(`\v`)
		case b < 32 || b >= 127:
			emit(fmt.Sprintf("\\%03o", b))
		default:
			emit(string(rune(b)))
		}
	}
	obuf = append(obuf, '$')
	r.write(r.out, obuf, true)
}

// subst runs an s command.
func (r *sedRun) subst(c *sedCmd) error {
	re, err := r.regex(c.re)
	if err != nil {
		return err
	}
	var ms [][]int
	switch {
	case c.global:
		ms = re.findAll(r.ps, -1)
		if c.nth > 1 {
			if len(ms) < c.nth {
				ms = nil
			} else {
				ms = ms[c.nth-1:]
			}
		}
	case c.nth > 1:
		ms = re.findAll(r.ps, c.nth)
		if len(ms) < c.nth {
			ms = nil
		} else {
			ms = ms[c.nth-1:]
		}
	default:
		if m := re.find(r.ps); m != nil {
			ms = [][]int{m}
		}
	}
	if len(ms) == 0 {
		return nil
	}
	out := r.scratch[:0]
	prev := 0
	for _, m := range ms {
		out = append(out, r.ps[prev:m[0]]...)
		out = r.expand(out, c.repl, m)
		prev = m[1]
	}
	out = append(out, r.ps[prev:]...)
	r.ps, r.scratch = out, r.ps
	r.tflag = true
	if c.print > 0 {
		r.write(r.out, r.ps, r.psNL)
	}
	if c.wfile != "" {
		r.write(r.wfiles[c.wfile], r.ps, true)
	}
	return nil
}

// expand appends the replacement for match m, applying \U \L \u \l \E.
func (r *sedRun) expand(out []byte, repl []sedRepl, m []int) []byte {
	var mode, once byte
	add := func(s []byte) {
		if mode == 0 && once == 0 {
			out = append(out, s...)
			return
		}
		for len(s) > 0 {
			ch, w := utf8.DecodeRune(s)
			switch {
			case once == 'u':
				ch = unicode.ToUpper(ch)
				once = 0
			case once == 'l':
				ch = unicode.ToLower(ch)
				once = 0
			case mode == 'U':
				ch = unicode.ToUpper(ch)
			case mode == 'L':
				ch = unicode.ToLower(ch)
			}
			if ch == utf8.RuneError && w == 1 {
				out = append(out, s[0])
			} else {
				out = utf8.AppendRune(out, ch)
			}
			s = s[w:]
		}
	}
	for _, p := range repl {
		switch {
		case p.conv == 'U' || p.conv == 'L':
			mode, once = p.conv, 0
		case p.conv == 'E':
			mode, once = 0, 0
		case p.conv == 'u' || p.conv == 'l':
			once = p.conv
		case p.group >= 0:
			if 2*p.group+1 < len(m) && m[2*p.group] >= 0 {
				add(r.ps[m[2*p.group]:m[2*p.group+1]])
			}
		default:
			add([]byte(p.lit))
		}
	}
	return out
}
