package tools

import (
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// findPred is one compiled find expression: it reports whether the entry
// satisfies it (running actions as a side effect).
type findPred func(e *findEnt) bool

// findParser turns find's expression arguments into a predicate.
type findParser struct {
	f         *finder
	args      []string
	pos       int
	hasAction bool
	regexType string
}

// findUnsupported is an expression element the isolate tier refuses.
type findUnsupported struct{ what string }

func (e *findUnsupported) Error() string { return e.what }

// findUsage is a command-line error in GNU find's words (status 1).
type findUsage struct{ msg string }

func (e *findUsage) Error() string { return e.msg }

func (p *findParser) more() bool   { return p.pos < len(p.args) }
func (p *findParser) peek() string { return p.args[p.pos] }

func (p *findParser) parse() (findPred, error) {
	if !p.more() {
		return func(*findEnt) bool { return true }, nil
	}
	pred, err := p.parseComma()
	if err != nil {
		return nil, err
	}
	if p.more() {
		if p.peek() == ")" {
			return nil, &findUsage{"invalid expression; you have too many ')'"}
		}
		return nil, &findUsage{fmt.Sprintf("paths must precede expression: `%s'", p.peek())}
	}
	return pred, nil
}

func (p *findParser) parseComma() (findPred, error) {
	l, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	for p.more() && p.peek() == "," {
		p.pos++
		r, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		a, b := l, r
		l = func(e *findEnt) bool { a(e); return b(e) }
	}
	return l, nil
}

func (p *findParser) parseOr() (findPred, error) {
	l, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.more() && (p.peek() == "-o" || p.peek() == "-or") {
		op := p.peek()
		p.pos++
		if !p.more() || p.peek() == ")" || p.peek() == "," {
			return nil, &findUsage{fmt.Sprintf("invalid expression; you have used a binary operator '%s' with nothing after it.", op)}
		}
		r, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		a, b := l, r
		l = func(e *findEnt) bool { return a(e) || b(e) }
	}
	return l, nil
}

func (p *findParser) parseAnd() (findPred, error) {
	l, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	for p.more() {
		t := p.peek()
		if t == "-o" || t == "-or" || t == ")" || t == "," {
			break
		}
		if t == "-a" || t == "-and" {
			p.pos++
			if !p.more() || p.peek() == ")" || p.peek() == "-o" || p.peek() == "-or" {
				return nil, &findUsage{fmt.Sprintf("invalid expression; you have used a binary operator '%s' with nothing after it.", t)}
			}
		}
		r, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		a, b := l, r
		l = func(e *findEnt) bool { return a(e) && b(e) }
	}
	return l, nil
}

func (p *findParser) parseNot() (findPred, error) {
	if !p.more() {
		return nil, &findUsage{"invalid expression"}
	}
	switch p.peek() {
	case "!", "-not":
		p.pos++
		if !p.more() {
			return nil, &findUsage{"invalid expression; you have used a binary operator '!' with nothing after it."}
		}
		x, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return func(e *findEnt) bool { return !x(e) }, nil
	case "(":
		p.pos++
		if p.more() && p.peek() == ")" {
			return nil, &findUsage{"invalid expression; empty parentheses are not allowed."}
		}
		x, err := p.parseComma()
		if err != nil {
			return nil, err
		}
		if !p.more() || p.peek() != ")" {
			return nil, &findUsage{"invalid expression; I was expecting to find a ')' somewhere but did not see one."}
		}
		p.pos++
		return x, nil
	}
	return p.parsePrimary()
}

// arg returns the argument of option opt.
func (p *findParser) arg(opt string) (string, error) {
	if !p.more() {
		return "", &findUsage{fmt.Sprintf("missing argument to `%s'", opt)}
	}
	a := p.peek()
	p.pos++
	return a, nil
}

var findGlobals = map[string]bool{
	"-maxdepth": true, "-mindepth": true, "-depth": true, "-d": true, "-follow": true,
	"-xdev": true, "-mount": true, "-noleaf": true, "-ignore_readdir_race": true,
	"-noignore_readdir_race": true,
}

func (p *findParser) parsePrimary() (findPred, error) {
	tok := p.peek()
	p.pos++
	f := p.f
	// GNU warns about misplaced global options only when stdin is a
	// terminal, which it never is here.
	yes := func(*findEnt) bool { return true }
	switch tok {
	case "-maxdepth", "-mindepth":
		a, err := p.arg(tok)
		if err != nil {
			return nil, err
		}
		n, err := strconv.Atoi(a)
		if err != nil || n < 0 {
			return nil, &findUsage{fmt.Sprintf("Expected a positive decimal integer argument to %s, but got ‘%s’", tok, a)}
		}
		if tok == "-maxdepth" {
			f.maxDepth = n
		} else {
			f.minDepth = n
		}
		return yes, nil
	case "-depth", "-d":
		f.depthFirst = true
		return yes, nil
	case "-follow":
		f.follow = 'L'
		return yes, nil
	case "-xdev", "-mount", "-noleaf", "-ignore_readdir_race", "-noignore_readdir_race", "-nowarn", "-warn":
		return yes, nil
	case "-regextype":
		a, err := p.arg(tok)
		if err != nil {
			return nil, err
		}
		switch a {
		case "emacs", "posix-basic", "posix-extended", "grep", "egrep", "posix-egrep", "sed", "ed":
			p.regexType = a
		default:
			return nil, &findUnsupported{"-regextype " + a}
		}
		return yes, nil
	case "-true":
		return yes, nil
	case "-false":
		return func(*findEnt) bool { return false }, nil
	case "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-lname", "-ilname":
		pat, err := p.arg(tok)
		if err != nil {
			return nil, err
		}
		fold := tok[1] == 'i'
		switch tok {
		case "-name", "-iname":
			return func(e *findEnt) bool { return srchFnmatchFold(pat, e.baseName(), fold) }, nil
		case "-lname", "-ilname":
			return func(e *findEnt) bool {
				if !e.isLink() {
					return false
				}
				t, err := f.c.FS.Readlink(e.abs)
				return err == nil && srchFnmatchFold(pat, t, fold)
			}, nil
		}
		return func(e *findEnt) bool { return srchFnmatchFold(pat, e.path, fold) }, nil
	case "-regex", "-iregex":
		pat, err := p.arg(tok)
		if err != nil {
			return nil, err
		}
		return p.regexPred(pat, tok == "-iregex")
	case "-type", "-xtype":
		a, err := p.arg(tok)
		if err != nil {
			return nil, err
		}
		return p.typePred(tok, a)
	case "-size":
		a, err := p.arg(tok)
		if err != nil {
			return nil, err
		}
		return p.sizePred(a)
	case "-mtime", "-atime", "-ctime", "-mmin", "-amin", "-cmin":
		a, err := p.arg(tok)
		if err != nil {
			return nil, err
		}
		return p.timePred(tok, a)
	case "-newer", "-anewer", "-cnewer":
		a, err := p.arg(tok)
		if err != nil {
			return nil, err
		}
		fi, err := f.statRef(a)
		if err != nil {
			return nil, err
		}
		if fi == nil {
			return func(*findEnt) bool { return false }, nil
		}
		ref := findStatTime(fi, 'm')
		which := byte('m')
		if tok != "-newer" {
			which = tok[1]
		}
		return func(e *findEnt) bool { return findStatTime(e.info(), which).After(ref) }, nil
	case "-newerat", "-newerct", "-newermt", "-neweraa", "-newerac", "-neweram", "-newerca", "-newercc",
		"-newercm", "-newerma", "-newermc", "-newermm":
		return p.newerXY(tok)
	case "-empty":
		return func(e *findEnt) bool {
			fi := e.info()
			if fi == nil {
				return false
			}
			if fi.IsDir() {
				ents, err := f.c.FS.ReadDir(e.abs)
				return err == nil && len(ents) == 0
			}
			return fi.Mode().IsRegular() && fi.Size() == 0
		}, nil
	case "-perm":
		a, err := p.arg(tok)
		if err != nil {
			return nil, err
		}
		return p.permPred(a)
	case "-user", "-group", "-uid", "-gid":
		a, err := p.arg(tok)
		if err != nil {
			return nil, err
		}
		id, ok := uint32(0), false
		if n, err := strconv.ParseUint(a, 10, 32); err == nil {
			id, ok = uint32(n), true
		} else if a == "root" && (tok == "-user" || tok == "-group") {
			ok = true
		}
		if !ok {
			return nil, &findUnsupported{tok + " " + a}
		}
		group := tok == "-group" || tok == "-gid"
		return func(e *findEnt) bool {
			st := e.stat()
			if st == nil {
				return false
			}
			if group {
				return st.Gid == id
			}
			return st.Uid == id
		}, nil
	case "-nouser", "-nogroup":
		return func(*findEnt) bool { return false }, nil
	case "-links", "-inum":
		a, err := p.arg(tok)
		if err != nil {
			return nil, err
		}
		cmp, n, err := findNumArg(tok, a)
		if err != nil {
			return nil, err
		}
		return func(e *findEnt) bool {
			st := e.stat()
			if st == nil {
				return false
			}
			v := uint64(st.Nlink)
			if tok == "-inum" {
				v = st.Ino
			}
			return findCmpNum(cmp, float64(v), float64(n))
		}, nil
	case "-readable", "-writable", "-executable":
		return func(e *findEnt) bool {
			// access(2) follows symlinks; root may read and write anything
			// and execute what has an x bit.
			fi, err := f.c.FS.Stat(e.abs)
			if err != nil {
				return false
			}
			if tok == "-executable" {
				return fi.IsDir() || fi.Mode()&0o111 != 0
			}
			return true
		}, nil
	case "-prune":
		return func(e *findEnt) bool {
			e.pruned = true
			return true
		}, nil
	case "-quit":
		return func(e *findEnt) bool {
			f.quit = true
			return true
		}, nil
	case "-print", "-print0":
		p.hasAction = true
		term := byte('\n')
		if tok == "-print0" {
			term = 0
		}
		return func(e *findEnt) bool {
			f.out.WriteString(e.path)
			f.out.WriteByte(term)
			return true
		}, nil
	case "-printf":
		p.hasAction = true
		a, err := p.arg(tok)
		if err != nil {
			return nil, err
		}
		items, err := findParsePrintf(a, func(w string) { fmt.Fprintf(f.c.Stderr, "find: %s\n", w) })
		if err != nil {
			return nil, err
		}
		return func(e *findEnt) bool {
			f.printf(e, items)
			return true
		}, nil
	case "-delete":
		p.hasAction = true
		f.depthFirst = true
		return f.deletePred(), nil
	case "-exec", "-execdir":
		p.hasAction = true
		return p.execPred(tok)
	case "-ok", "-okdir", "-ls", "-fls", "-fprint", "-fprint0", "-fprintf", "-daystart", "-context", "-samefile", "-used", "-fstype":
		return nil, &findUnsupported{tok}
	}
	if strings.HasPrefix(tok, "-") {
		return nil, &findUsage{fmt.Sprintf("unknown predicate `%s'", tok)}
	}
	return nil, &findUsage{fmt.Sprintf("paths must precede expression: `%s'", tok)}
}

func (p *findParser) regexPred(pat string, fold bool) (findPred, error) {
	syn := reSyntaxOpts{}
	switch p.regexType {
	case "", "emacs":
		syn.emacs = true
	case "posix-extended", "egrep", "posix-egrep":
		syn.ere = true
	}
	re, _, err := reCompilePosix(pat, syn, reMatchFlags{icase: fold, dotNL: true})
	if err != nil {
		return nil, &findUsage{err.Error()}
	}
	full := re.fullMatcher()
	return func(e *findEnt) bool { return full.match([]byte(e.path)) }, nil
}

func (p *findParser) typePred(tok, a string) (findPred, error) {
	var want []fs.FileMode
	for i, part := range strings.Split(a, ",") {
		if len(part) != 1 {
			if part == "" {
				return nil, &findUsage{fmt.Sprintf("Last file type in list argument to %s is missing, i.e., list is ending on: ','", tok)}
			}
			return nil, &findUsage{fmt.Sprintf("Must separate multiple arguments to %s using: ','", tok)}
		}
		_ = i
		var m fs.FileMode
		switch part[0] {
		case 'f':
			m = 0
		case 'd':
			m = fs.ModeDir
		case 'l':
			m = fs.ModeSymlink
		case 'p':
			m = fs.ModeNamedPipe
		case 's':
			m = fs.ModeSocket
		case 'b':
			m = fs.ModeDevice
		case 'c':
			m = fs.ModeDevice | fs.ModeCharDevice
		case 'D':
			m = fs.ModeIrregular // doors never exist here
		default:
			return nil, &findUsage{fmt.Sprintf("Unknown argument to %s: %s", tok, part)}
		}
		want = append(want, m)
	}
	xtype := tok == "-xtype"
	return func(e *findEnt) bool {
		var fi fs.FileInfo
		if xtype {
			fi = e.otherInfo()
		} else {
			fi = e.info()
		}
		if fi == nil {
			return false
		}
		t := fi.Mode().Type()
		for _, w := range want {
			if t == w {
				return true
			}
		}
		return false
	}, nil
}

// findNumArg parses GNU find's numeric argument: +n, -n or n.
func findNumArg(tok, a string) (byte, int64, error) {
	cmp := byte('=')
	s := a
	if s != "" && (s[0] == '+' || s[0] == '-') {
		cmp, s = s[0], s[1:]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, 0, &findUsage{fmt.Sprintf("invalid argument `%s' to `%s'", a, tok)}
	}
	return cmp, n, nil
}

func findCmpNum(cmp byte, v, n float64) bool {
	switch cmp {
	case '+':
		return v > n
	case '-':
		return v < n
	}
	return v == n
}

func (p *findParser) sizePred(a string) (findPred, error) {
	unit := int64(512)
	s := a
	if s != "" {
		switch s[len(s)-1] {
		case 'c':
			unit = 1
		case 'w':
			unit = 2
		case 'b':
			unit = 512
		case 'k':
			unit = 1024
		case 'M':
			unit = 1 << 20
		case 'G':
			unit = 1 << 30
		}
		if s[len(s)-1] < '0' || s[len(s)-1] > '9' {
			s = s[:len(s)-1]
		}
	}
	cmp, n, err := findNumArg("-size", s)
	if err != nil {
		return nil, &findUsage{fmt.Sprintf("invalid -size type `%s'", a)}
	}
	return func(e *findEnt) bool {
		fi := e.info()
		if fi == nil {
			return false
		}
		size := fi.Size()
		units := (size + unit - 1) / unit
		return findCmpNum(cmp, float64(units), float64(n))
	}, nil
}

func (p *findParser) timePred(tok, a string) (findPred, error) {
	cmp, n, err := findNumArg(tok, a)
	if err != nil {
		return nil, err
	}
	period := 86400.0
	if strings.HasSuffix(tok, "min") {
		period = 60
	}
	which := tok[1]
	now := p.f.now
	return func(e *findEnt) bool {
		fi := e.info()
		if fi == nil {
			return false
		}
		age := now.Sub(findStatTime(fi, which)).Seconds() / period
		if period == 60 {
			// -mmin compares the exact age; "n" is the minute ending at n.
			switch cmp {
			case '+':
				return age > float64(n)
			case '-':
				return age < float64(n)
			}
			return age > float64(n-1) && age <= float64(n)
		}
		// -mtime ignores the fractional part of the age in days.
		return findCmpNum(cmp, math.Floor(age), float64(n))
	}, nil
}

// findStatTime returns the m(odification), a(ccess) or c(hange) time.
// newerXY is -newerXY: the entry's X time (a, c or m) is after the
// reference's Y time, or, for Y = t, after the date its argument names
// (parsed as date -d parses; a date that parser does not know is
// refused, GNU's parser may know it). Birth times (B) are not among them.
func (p *findParser) newerXY(tok string) (findPred, error) {
	a, err := p.arg(tok)
	if err != nil {
		return nil, err
	}
	x, y := tok[6], tok[7]
	var ref time.Time
	if y == 't' {
		now := p.f.now
		if now.IsZero() {
			now = time.Now()
		}
		t, ok := parseDate(a, now.In(fuLocation(p.f.c)))
		if !ok {
			return nil, &findUnsupported{tok + " " + a}
		}
		ref = t
	} else {
		fi, err := p.f.statRef(a)
		if err != nil {
			return nil, err
		}
		if fi == nil {
			return func(*findEnt) bool { return false }, nil
		}
		ref = findStatTime(fi, y)
	}
	return func(e *findEnt) bool { return findStatTime(e.info(), x).After(ref) }, nil
}

func findStatTime(fi fs.FileInfo, which byte) time.Time {
	if fi == nil {
		return time.Time{}
	}
	st, ok := fi.Sys().(*unix.Stat_t)
	if !ok {
		return fi.ModTime()
	}
	switch which {
	case 'a':
		return time.Unix(st.Atim.Unix())
	case 'c':
		return time.Unix(st.Ctim.Unix())
	}
	return time.Unix(st.Mtim.Unix())
}

func (p *findParser) permPred(a string) (findPred, error) {
	mode := a
	kind := byte('=')
	if mode != "" && (mode[0] == '-' || mode[0] == '/') {
		kind, mode = mode[0], mode[1:]
	}
	perm, ok := parseFindMode(mode)
	if !ok {
		return nil, &findUsage{fmt.Sprintf("invalid mode ‘%s’", a)}
	}
	return func(e *findEnt) bool {
		st := e.stat()
		if st == nil {
			return false
		}
		m := st.Mode & 0o7777
		switch kind {
		case '-':
			return m&perm == perm
		case '/':
			return perm == 0 || m&perm != 0
		}
		return m == perm
	}, nil
}

// parseFindMode parses an octal mode or a symbolic one applied to 0.
func parseFindMode(s string) (uint32, bool) {
	if s == "" {
		return 0, false
	}
	if s[0] >= '0' && s[0] <= '7' {
		n, err := strconv.ParseUint(s, 8, 32)
		return uint32(n), err == nil && n <= 0o7777
	}
	var mode uint32
	for _, clause := range strings.Split(s, ",") {
		i := 0
		var who uint32
		for i < len(clause) && strings.IndexByte("ugoa", clause[i]) >= 0 {
			switch clause[i] {
			case 'u':
				who |= 0o4700
			case 'g':
				who |= 0o2070
			case 'o':
				who |= 0o1007
			case 'a':
				who |= 0o7777
			}
			i++
		}
		if who == 0 {
			who = 0o7777
		}
		if i >= len(clause) || strings.IndexByte("+-=", clause[i]) < 0 {
			return 0, false
		}
		op := clause[i]
		i++
		var bits uint32
		for ; i < len(clause); i++ {
			switch clause[i] {
			case 'r':
				bits |= 0o444
			case 'w':
				bits |= 0o222
			case 'x', 'X':
				bits |= 0o111
			case 's':
				bits |= 0o6000
			case 't':
				bits |= 0o1000
			default:
				return 0, false
			}
		}
		bits &= who
		switch op {
		case '+':
			mode |= bits
		case '-':
			mode &^= bits
		case '=':
			mode = mode&^who | bits
		}
	}
	return mode, true
}

func (p *findParser) execPred(tok string) (findPred, error) {
	var argv []string
	for {
		if !p.more() {
			return nil, &findUsage{fmt.Sprintf("missing argument to `%s'", tok)}
		}
		a := p.peek()
		p.pos++
		if a == ";" {
			break
		}
		if a == "+" && len(argv) > 0 && argv[len(argv)-1] == "{}" {
			if len(argv) == 1 {
				return nil, &findUsage{fmt.Sprintf("missing argument to `%s'", tok)}
			}
			return p.f.batchPred(argv[:len(argv)-1], tok == "-execdir"), nil
		}
		argv = append(argv, a)
	}
	if len(argv) == 0 {
		return nil, &findUsage{fmt.Sprintf("missing argument to `%s'", tok)}
	}
	return p.f.execOnePred(argv, tok == "-execdir"), nil
}
