package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// grepMatcher selects lines. re finds selected-by-pattern lines in a whole
// buffer of lines (it is compiled so that no match crosses a newline);
// for -w it matches the word with its delimiters and the word is group 1.
type grepMatcher struct {
	lit   []byte   // literal fast path for first-match search, or nil
	fold  bool     // lit is matched ignoring ASCII case
	need  []byte   // a string every match contains: lines without it are skipped
	re    *rePosix // nil when there are no patterns (matches nothing)
	next  *rePosix // -w: the continuation pattern for -o
	word  bool
	perLn bool // search line by line (-z)
}

func newGrepMatcher(cfg *grepConfig) (*grepMatcher, []string, error) {
	m := &grepMatcher{word: cfg.word && !cfg.line, perLn: cfg.eol != '\n'}
	if len(cfg.patterns) == 0 {
		return m, nil, nil
	}
	syn := reSyntaxOpts{ere: cfg.mode == 'E'}
	var alts []*reASTNode
	ngroups := 0
	var warns []string
	for _, p := range cfg.patterns {
		var ast *reASTNode
		ng := 0
		if cfg.mode == 'F' {
			ast = grepLitAST(p)
		} else {
			var w []string
			var err error
			ast, ng, w, err = reParsePosix(p, syn)
			warns = append(warns, w...)
			if err != nil {
				return nil, warns, err
			}
		}
		reShiftGroups(ast, ngroups)
		ngroups += ng
		alts = append(alts, ast)
	}
	root := alts[0]
	if len(alts) > 1 {
		root = &reASTNode{op: rxAlt, subs: alts}
	}
	if len(alts) == 1 && !cfg.word && !cfg.line && !m.perLn {
		if lit, ok := reASTLiteral(root); ok && len(lit) > 0 && (!cfg.icase || grepFoldSafeASCII(lit)) {
			m.lit, m.fold = lit, cfg.icase
		}
	}
	if m.lit == nil && !cfg.icase && !m.perLn {
		if need := reRequiredLiteral(root); len(need) >= 3 {
			m.need = need
		}
	}
	fl := reMatchFlags{icase: cfg.icase, multiline: true, noNL: cfg.eol == '\n'}
	var err error
	switch {
	case cfg.line:
		root = &reASTNode{op: rxConcat, subs: []*reASTNode{{op: rxBol}, root, {op: rxEol}}}
	case cfg.word:
		reShiftGroups(root, 1)
		nonWord := &reASTNode{op: rxClass, cls: &reBracket{neg: true, named: []string{"w"}}}
		after := &reASTNode{op: rxAlt, subs: []*reASTNode{{op: rxEol}, nonWord}}
		grp := &reASTNode{op: rxGroup, n: 1, subs: []*reASTNode{root}}
		first := &reASTNode{op: rxConcat, subs: []*reASTNode{{op: rxAlt, subs: []*reASTNode{{op: rxBol}, nonWord}}, grp, after}}
		next := &reASTNode{op: rxConcat, subs: []*reASTNode{nonWord, grp, after}}
		if m.next, err = reCompileAST(next, ngroups+1, fl); err != nil {
			return nil, warns, err
		}
		root = first
		ngroups++
	}
	m.re, err = reCompileAST(root, ngroups, fl)
	return m, warns, err
}

// grepLitAST is the AST of a fixed string.
func grepLitAST(s string) *reASTNode {
	n := &reASTNode{op: rxConcat}
	for _, r := range s {
		n.subs = append(n.subs, &reASTNode{op: rxLit, r: r})
	}
	if len(n.subs) == 0 {
		return &reASTNode{op: rxEmpty}
	}
	return n
}

// reASTLiteral returns the string n matches when n is a plain literal.
func reASTLiteral(n *reASTNode) ([]byte, bool) {
	switch n.op {
	case rxLit:
		return utf8.AppendRune(nil, n.r), n.r != utf8.RuneError
	case rxConcat:
		var b []byte
		for _, s := range n.subs {
			if s.op != rxLit || s.r == utf8.RuneError {
				return nil, false
			}
			b = utf8.AppendRune(b, s.r)
		}
		return b, true
	}
	return nil, false
}

// reShiftGroups renumbers groups and back-references by k.
func reShiftGroups(n *reASTNode, k int) {
	if k == 0 {
		return
	}
	if n.op == rxGroup || n.op == rxBackref {
		n.n += k
	}
	for _, s := range n.subs {
		reShiftGroups(s, k)
	}
}

// firstIndex returns the offset in b of the first match, or -1.
func (m *grepMatcher) firstIndex(b []byte) int {
	if m.re == nil {
		return -1
	}
	if m.fold {
		return grepIndexFoldASCII(b, m.lit)
	}
	if m.lit != nil {
		return bytes.Index(b, m.lit)
	}
	if m.need != nil {
		return m.firstIndexNeed(b)
	}
	loc := m.re.findIndex(b)
	if loc == nil {
		return -1
	}
	return loc[0]
}

// firstIndexNeed finds candidate lines by the required literal and runs
// the pattern on those lines only.
func (m *grepMatcher) firstIndexNeed(b []byte) int {
	for off := 0; off < len(b); {
		i := bytes.Index(b[off:], m.need)
		if i < 0 {
			return -1
		}
		i += off
		ls := bytes.LastIndexByte(b[:i], '\n') + 1
		le := bytes.IndexByte(b[i:], '\n')
		if le < 0 {
			le = len(b)
		} else {
			le += i
		}
		if loc := m.re.findIndex(b[ls:le]); loc != nil {
			return ls + loc[0]
		}
		off = le + 1
	}
	return -1
}

// lineMatches reports whether one line (without its terminator) matches.
func (m *grepMatcher) lineMatches(line []byte) bool {
	return m.re != nil && m.re.match(line)
}

// eachMatch calls fn with every non-empty match of line, for -o.
func (m *grepMatcher) eachMatch(line []byte, fn func(s, e int) bool) {
	if m.re == nil {
		return
	}
	if !m.word {
		for _, loc := range m.re.findAll(line, -1) {
			if loc[1] > loc[0] && !fn(loc[0], loc[1]) {
				return
			}
		}
		return
	}
	loc := m.re.find(line)
	for loc != nil {
		s, e := loc[2], loc[3]
		if e > s && !fn(s, e) {
			return
		}
		k := e
		if e > 0 && !reClassHas("w", grepLastRune(line[:e])) {
			k = e - 1
		}
		if e == s {
			k = e + 1
		}
		if k > len(line) {
			return
		}
		loc = m.next.find(line[k:])
		if loc != nil {
			for i := range loc {
				if loc[i] >= 0 {
					loc[i] += k
				}
			}
		}
	}
}

func grepLastRune(b []byte) rune {
	r, _ := utf8.DecodeLastRune(b)
	return r
}

// grepMaxLine bounds the buffer that holds one line (and its context).
const grepMaxLine = 256 << 20

// grepFileScan is the state of grep over one file.
type grepFileScan struct {
	name      string
	buf       []byte
	base      int64 // file offset of buf[0]
	lineno    int64 // number of the line starting at pos
	pos       int
	lastOut   int   // buf index after the last printed line's terminator, -1 if none in this file
	lastLine  int64 // number of the last printed line
	afterLeft int
	count     int64
	binary    bool
	suppress  bool // binary: output replaced by the "binary file matches" message
	stop      bool
}

// search greps one open file.
// A short read from a regular file is taken as its end, saving the read
// that would return 0 (one syscall per file matters for grep -r).
func (g *grepper) search(ctx context.Context, r io.Reader, name string, regular bool) {
	cfg := g.cfg
	fsn := &grepFileScan{name: name, buf: g.buf[:0], lineno: 1, lastOut: -1}
	eof := false
	for !fsn.stop && !g.done {
		if ctx.Err() != nil {
			return
		}
		// Fill: keep buf[keep:], read more.
		keep := g.keepFrom(fsn)
		if keep > 0 {
			n := copy(fsn.buf[:cap(fsn.buf)], fsn.buf[keep:])
			fsn.buf = fsn.buf[:n]
			fsn.base += int64(keep)
			fsn.pos -= keep
			if fsn.lastOut >= 0 {
				fsn.lastOut = max(fsn.lastOut-keep, 0)
			}
		}
		if len(fsn.buf) == cap(fsn.buf) {
			if cap(fsn.buf) >= grepMaxLine {
				// GNU grep runs out of memory on a line this long.
				fmt.Fprintf(g.c.Stderr, "grep: memory exhausted\n")
				g.errSeen, g.done = true, true
				return
			}
			nb := make([]byte, len(fsn.buf), 2*cap(fsn.buf))
			copy(nb, fsn.buf)
			fsn.buf = nb
		}
		oldLen := len(fsn.buf)
		n, err := io.ReadAtLeast(r, fsn.buf[oldLen:cap(fsn.buf)], 1)
		fsn.buf = fsn.buf[:oldLen+n]
		if regular && err == nil && oldLen+n < cap(fsn.buf) {
			err = io.EOF
		}
		if err == io.EOF {
			eof = true
		} else if err != nil {
			g.fileErr(name, err)
			return
		}
		if cap(g.buf) < cap(fsn.buf) {
			g.buf = fsn.buf[:0]
		}
		if cfg.binary != "text" && cfg.eol == '\n' && !fsn.binary && bytes.IndexByte(fsn.buf[oldLen:], 0) >= 0 {
			fsn.binary = true
			if cfg.binary == "without-match" {
				return
			}
			fsn.suppress = true
		}
		if fsn.binary {
			// Like GNU, a binary file's NUL bytes end lines.
			nl := fsn.buf[oldLen:]
			for i := bytes.IndexByte(nl, 0); i >= 0; i = bytes.IndexByte(nl, 0) {
				nl[i] = '\n'
				nl = nl[i+1:]
			}
		}
		lim := len(fsn.buf)
		if !eof {
			i := bytes.LastIndexByte(fsn.buf[fsn.pos:], cfg.eol)
			if i < 0 {
				continue
			}
			lim = fsn.pos + i + 1
		}
		g.scanRegion(fsn, lim)
		if eof {
			break
		}
	}
	if fsn.stop && cfg.maxCount >= 0 && fsn.count >= cfg.maxCount && r == g.c.Stdin {
		// GNU grep leaves a seekable standard input just after the last
		// line it used, for the next command ({ grep -m1 x; cat; } < f).
		if s, ok := r.(io.Seeker); ok && len(fsn.buf) > fsn.pos {
			s.Seek(-int64(len(fsn.buf)-fsn.pos), io.SeekCurrent)
		}
	}
	g.finishFile(fsn)
}

// keepFrom returns the buf index before which data is no longer needed.
func (g *grepper) keepFrom(fsn *grepFileScan) int {
	keep := fsn.pos
	if g.cfg.before > 0 {
		s := fsn.pos
		for i := 0; i < g.cfg.before && s > 0; i++ {
			j := bytes.LastIndexByte(fsn.buf[:s-1], g.cfg.eol)
			s = j + 1
		}
		keep = s
	}
	return keep
}

// scanRegion processes the complete lines in buf[pos:lim].
func (g *grepper) scanRegion(fsn *grepFileScan, lim int) {
	cfg := g.cfg
	buf := fsn.buf
	for fsn.pos < lim && !fsn.stop {
		// Find the next line matched by the patterns.
		ls, le := lim, lim
		if g.m.perLn || cfg.maxCount >= 0 && fsn.count >= cfg.maxCount {
			ls, le = g.nextLineSlow(buf, fsn.pos, lim)
		} else if i := g.m.firstIndex(buf[fsn.pos:lim]); i >= 0 {
			i += fsn.pos
			ls = bytes.LastIndexByte(buf[fsn.pos:i], cfg.eol) + 1 + fsn.pos
			le = grepLineEnd(buf, i, lim, cfg.eol)
		}
		if !cfg.invert {
			g.unselected(fsn, fsn.pos, ls)
			if ls < lim {
				g.selected(fsn, ls, le)
				fsn.pos = min(le+1, lim)
				fsn.lineno++
			}
			continue
		}
		// -v: every line before the match is selected.
		for fsn.pos < ls && !fsn.stop {
			e := grepLineEnd(buf, fsn.pos, ls, cfg.eol)
			g.selected(fsn, fsn.pos, e)
			fsn.pos = min(e+1, ls)
			fsn.lineno++
		}
		if ls < lim && !fsn.stop {
			g.unselected(fsn, ls, min(le+1, lim))
		}
	}
}

// nextLineSlow finds the next matching line by testing line by line.
func (g *grepper) nextLineSlow(buf []byte, pos, lim int) (int, int) {
	for pos < lim {
		e := grepLineEnd(buf, pos, lim, g.cfg.eol)
		if g.m.lineMatches(buf[pos:e]) {
			return pos, e
		}
		pos = e + 1
	}
	return lim, lim
}

// grepLineEnd returns the index of the terminator of the line holding i, or
// lim when the last line has none.
func grepLineEnd(buf []byte, i, lim int, eol byte) int {
	j := bytes.IndexByte(buf[i:lim], eol)
	if j < 0 {
		return lim
	}
	return i + j
}

// unselected passes over the lines in buf[s:e], printing those that are
// trailing context, and advances pos and lineno.
func (g *grepper) unselected(fsn *grepFileScan, s, e int) {
	cfg := g.cfg
	for fsn.afterLeft > 0 && s < e && !fsn.stop {
		le := grepLineEnd(fsn.buf, s, e, cfg.eol)
		g.printLine(fsn, s, le, '-')
		fsn.afterLeft--
		s = min(le+1, e)
		fsn.lineno++
		fsn.pos = s
		if cfg.maxCount >= 0 && fsn.count >= cfg.maxCount && fsn.afterLeft == 0 {
			fsn.stop = true
		}
	}
	if s < e {
		if cfg.lineN || cfg.ctxOn {
			fsn.lineno += int64(bytes.Count(fsn.buf[s:e], []byte{cfg.eol}))
			if fsn.buf[e-1] != cfg.eol && e == len(fsn.buf) {
				fsn.lineno++
			}
		}
		fsn.pos = e
	}
}

// selected handles one selected line buf[s:e] (e is its terminator).
func (g *grepper) selected(fsn *grepFileScan, s, e int) {
	cfg := g.cfg
	if cfg.maxCount >= 0 && fsn.count >= cfg.maxCount {
		// Past -m: only trailing context remains.
		if fsn.afterLeft > 0 {
			g.printLine(fsn, s, e, '-')
			fsn.afterLeft--
		}
		if fsn.afterLeft == 0 {
			fsn.stop = true
		}
		return
	}
	fsn.count++
	g.status = 0
	switch {
	case cfg.quiet:
		g.done = true
		fsn.stop = true
		return
	case cfg.listMatch || cfg.listNone:
		fsn.stop = true
		return
	case cfg.count:
	default:
		if fsn.suppress {
			fsn.stop = true
			return
		}
		// Leading context.
		if cfg.before > 0 {
			b := s
			for i := 0; i < cfg.before && b > 0 && (fsn.lastOut < 0 || b > fsn.lastOut); i++ {
				b = bytes.LastIndexByte(fsn.buf[:b-1], cfg.eol) + 1
			}
			n := fsn.lineno - int64(bytes.Count(fsn.buf[b:s], []byte{cfg.eol}))
			for b < s {
				le := grepLineEnd(fsn.buf, b, s, cfg.eol)
				g.printLineAt(fsn, b, le, '-', n)
				n++
				b = le + 1
			}
		}
		g.printLine(fsn, s, e, ':')
		fsn.afterLeft = cfg.after
	}
	if cfg.maxCount >= 0 && fsn.count >= cfg.maxCount && fsn.afterLeft == 0 {
		fsn.stop = true
	}
}

func (g *grepper) printLine(fsn *grepFileScan, s, e int, sep byte) {
	g.printLineAt(fsn, s, e, sep, fsn.lineno)
}

// printLineAt prints line buf[s:e], numbered n, with separator sep.
func (g *grepper) printLineAt(fsn *grepFileScan, s, e int, sep byte, n int64) {
	cfg := g.cfg
	if fsn.suppress {
		return
	}
	line := fsn.buf[s:e]
	if cfg.binary != "text" && !cfg.only && !utf8.Valid(line) {
		fsn.suppress = true
		if sep == ':' {
			fsn.stop = true
		}
		return
	}
	if cfg.ctxOn && g.outAny && (fsn.lastOut < 0 || n != fsn.lastLine+1) {
		if cfg.groupSep == nil {
			g.out.WriteString("--\n")
		} else if *cfg.groupSep != "\x00none" {
			g.out.WriteString(*cfg.groupSep)
			g.out.WriteByte('\n')
		}
	}
	fsn.lastOut = e + 1
	fsn.lastLine = n
	if cfg.only {
		if sep != ':' {
			return
		}
		g.m.eachMatch(line, func(ms, me int) bool {
			if cfg.binary != "text" && !utf8.Valid(line[ms:me]) {
				fsn.suppress = true
				fsn.stop = true
				return false
			}
			g.prefix(fsn, sep, n, fsn.base+int64(s+ms))
			g.out.Write(line[ms:me])
			g.out.WriteByte(cfg.eol)
			g.outAny = true
			return true
		})
		return
	}
	g.prefix(fsn, sep, n, fsn.base+int64(s))
	g.out.Write(line)
	g.out.WriteByte(cfg.eol)
	g.outAny = true
}

func (g *grepper) prefix(fsn *grepFileScan, sep byte, n, off int64) {
	cfg := g.cfg
	if g.showN {
		g.out.WriteString(fsn.name)
		if cfg.nullName {
			g.out.WriteByte(0)
		} else {
			g.out.WriteByte(sep)
		}
	}
	// Numbers are formatted straight into the writer's free space: a
	// local array would escape to the heap (Write may pass it on to the
	// underlying writer), one allocation per selected line.
	if cfg.lineN {
		g.out.Write(strconv.AppendInt(g.out.AvailableBuffer(), n, 10))
		g.out.WriteByte(sep)
	}
	if cfg.byteOff {
		g.out.Write(strconv.AppendInt(g.out.AvailableBuffer(), off, 10))
		g.out.WriteByte(sep)
	}
}

// finishFile prints what is printed once per file.
func (g *grepper) finishFile(fsn *grepFileScan) {
	cfg := g.cfg
	if cfg.quiet {
		return
	}
	term := byte('\n')
	if cfg.nullName {
		term = 0
	}
	switch {
	case cfg.listMatch:
		if fsn.count > 0 {
			g.out.WriteString(fsn.name)
			g.out.WriteByte(term)
		}
		return
	case cfg.listNone:
		if fsn.count == 0 {
			g.out.WriteString(fsn.name)
			g.out.WriteByte(term)
		}
		return
	case cfg.count:
		if g.showN {
			g.out.WriteString(fsn.name)
			if cfg.nullName {
				g.out.WriteByte(0)
			} else {
				g.out.WriteByte(':')
			}
		}
		fmt.Fprintf(g.out, "%d\n", fsn.count)
		return
	}
	if fsn.suppress && fsn.count > 0 {
		g.out.Flush()
		fmt.Fprintf(g.c.Stderr, "grep: %s: binary file matches\n", fsn.name)
	}
}

// grepFoldSafeASCII reports whether lit is ASCII without the letters that
// Unicode case folding maps outside ASCII (k: KELVIN SIGN, s: LONG S), so
// that ASCII case folding finds exactly what -i finds.
func grepFoldSafeASCII(lit []byte) bool {
	for _, c := range lit {
		if c >= 0x80 || c == 'k' || c == 'K' || c == 's' || c == 'S' {
			return false
		}
	}
	return true
}

// grepByteRank orders bytes by how common they are in source code and
// prose (lower is rarer), to pick the byte a case-folded search scans for.
func grepByteRank(c byte) int {
	const common = " etaoinsrhldcumfpgwybvkxjqz_ETAOINSRHLDCUMFPGWYBVKXJQZ(){};,.=\t\n\"'/*-:<>0123456789"
	if i := strings.IndexByte(common, c); i >= 0 {
		return 100 - i
	}
	return 0
}

// grepIndexFoldASCII is bytes.Index ignoring ASCII case; lit is ASCII.
// It scans for the rarest byte of lit (in either case) and checks the
// whole literal around each hit.
func grepIndexFoldASCII(b, lit []byte) int {
	k := 0
	for i := range lit {
		if grepByteRank(lit[i]|0x20) < grepByteRank(lit[k]|0x20) {
			k = i
		}
	}
	c := lit[k]
	lo, up := c, c
	if l := c | 0x20; l >= 'a' && l <= 'z' {
		lo, up = l, l&^0x20
	}
	nextLo, nextUp := -2, -2
	for off := k; off < len(b); {
		if nextLo != -1 && nextLo < off {
			if nextLo = bytes.IndexByte(b[off:], lo); nextLo >= 0 {
				nextLo += off
			}
		}
		if nextUp != -1 && nextUp < off {
			if nextUp = bytes.IndexByte(b[off:], up); nextUp >= 0 {
				nextUp += off
			}
		}
		i := nextLo
		if i < 0 || nextUp >= 0 && nextUp < i {
			i = nextUp
		}
		if i < 0 {
			return -1
		}
		if s := i - k; s >= 0 && s+len(lit) <= len(b) && grepEqualFoldASCII(b[s:s+len(lit)], lit) {
			return s
		}
		off = i + 1
	}
	return -1
}

func grepEqualFoldASCII(a, b []byte) bool {
	for i := range a {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x|0x20 != y|0x20 || x|0x20 < 'a' || x|0x20 > 'z' {
			return false
		}
	}
	return true
}
