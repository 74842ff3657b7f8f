package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// seg is a piece of a field being built: its text and whether it was
// quoted (quoted text is never split or treated as a pattern).
type seg struct {
	s      string
	quoted bool
}

// expander turns one word into fields, doing IFS splitting as it goes.
type expander struct {
	r         *runner
	split     bool // word splitting and globbing apply (command arguments)
	fields    [][]seg
	cur       []seg
	exists    bool // cur is a field even if empty ("" or a literal)
	pendingWS bool
	ifs       string
	glob      bool // cur has an unquoted pattern character
	listEmpty bool // a quoted "$@" expanded to no words
	splitLits bool // literals come from an unquoted ${x:-word}: split them
	assign    bool // an assignment's value: tilde expands after ':' too
	globs     []bool
}

func (e *expander) emit() {
	e.fields = append(e.fields, e.cur)
	e.globs = append(e.globs, e.glob)
	e.cur, e.exists, e.pendingWS, e.glob = nil, false, false, false
}

func (e *expander) flushWS() {
	if e.pendingWS {
		e.emit()
	}
}

// lit adds text that is not subject to splitting.
func (e *expander) lit(s string, quoted bool) {
	e.flushWS()
	if !quoted && hasMeta(s, e.r.shopts["extglob"]) {
		e.glob = true
	}
	e.cur = append(e.cur, seg{s, quoted})
	e.exists = true
}

// quotedEmpty marks the current field as existing ("" or ”).
func (e *expander) quotedEmpty() {
	e.flushWS()
	e.exists = true
}

// splitText adds the result of an unquoted expansion.
func (e *expander) splitText(s string) {
	if !e.split || e.ifs == "" {
		if s != "" {
			e.flushWS()
			if e.split && hasMeta(s, e.r.shopts["extglob"]) {
				e.glob = true
			}
			e.cur = append(e.cur, seg{s, false})
			e.exists = e.exists || !e.split
		}
		return
	}
	start := 0
	flush := func(i int) {
		if i > start {
			e.flushWS()
			t := s[start:i]
			if hasMeta(t, e.r.shopts["extglob"]) {
				e.glob = true
			}
			e.cur = append(e.cur, seg{t, false})
			e.exists = true
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte(e.ifs, c) < 0 {
			continue
		}
		flush(i)
		start = i + 1
		if c == ' ' || c == '\t' || c == '\n' {
			if e.exists {
				e.pendingWS = true
			}
			continue
		}
		e.pendingWS = false
		e.emit()
	}
	flush(len(s))
}

// fieldBreak separates the values of "$@" and the like.
func (e *expander) fieldBreak() {
	e.emit()
}

// finish ends the word and returns its segments per field.
func (e *expander) finish() {
	if e.exists || len(e.cur) > 0 {
		e.emit()
	}
}

func (r *runner) ifs() string {
	v, ok := r.varValue("IFS")
	if !ok {
		return " \t\n"
	}
	return v
}

// fields expands command words: brace, tilde, parameter, command and
// arithmetic expansion, word splitting and pathname expansion.
func (r *runner) fields(words ...*syntax.Word) []string {
	var out []string
	for _, w := range words {
		for _, bw := range braceExpand(w) {
			e := &expander{r: r, split: true, ifs: r.ifs()}
			e.word(bw.Parts, false, true)
			e.finish()
			for i, f := range e.fields {
				if e.globs[i] && !r.noglob {
					matches, ok := r.globField(f)
					if ok {
						out = append(out, matches...)
						continue
					}
				}
				out = append(out, joinSegs(f))
			}
		}
	}
	r.checkArray(len(out))
	return out
}

func joinSegs(f []seg) string {
	if len(f) == 1 {
		return f[0].s
	}
	var sb strings.Builder
	for _, s := range f {
		sb.WriteString(s.s)
	}
	return sb.String()
}

// literal expands a word without splitting or globbing (redirection
// targets, case words, here-strings).
func (r *runner) literal(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	e := &expander{r: r, ifs: r.ifs()}
	e.word(w.Parts, false, true)
	e.finish()
	var sb strings.Builder
	for i, f := range e.fields {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(joinSegs(f))
	}
	s := sb.String()
	r.checkString(s)
	return s
}

// assignWord expands the right side of an assignment: tilde after = and
// unquoted colons, no splitting or globbing.
func (r *runner) assignWord(w *syntax.Word) string {
	e := &expander{r: r, ifs: r.ifs(), assign: true}
	e.word(w.Parts, false, true)
	e.finish()
	var sb strings.Builder
	for i, f := range e.fields {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(joinSegs(f))
	}
	s := sb.String()
	r.checkString(s)
	return s
}

// pattern expands a word into a glob pattern: quoted parts are escaped.
func (r *runner) pattern(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	e := &expander{r: r, ifs: r.ifs()}
	e.word(w.Parts, false, true)
	e.finish()
	var sb strings.Builder
	for i, f := range e.fields {
		if i > 0 {
			sb.WriteByte(' ')
		}
		for _, s := range f {
			if s.quoted {
				sb.WriteString(escapePattern(s.s))
			} else {
				sb.WriteString(s.s)
			}
		}
	}
	return sb.String()
}

// word expands parts into e. inDQ says the parts are inside double
// quotes; first says tilde expansion may apply to the first literal.
func (e *expander) word(parts []syntax.WordPart, inDQ bool, first bool) {
	for i, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v := p.Value
			if inDQ {
				e.lit(unescapeDQ(v), true)
				continue
			}
			if i == 0 && first && strings.HasPrefix(v, "~") {
				v = e.tilde(v, i+1 < len(parts))
			}
			if e.assign && strings.Contains(v, ":~") {
				segs := strings.Split(v, ":")
				for j, sg := range segs {
					if j > 0 {
						e.unquotedLit(":")
						if strings.HasPrefix(sg, "~") {
							sg = e.tilde(sg, j == len(segs)-1 && i+1 < len(parts))
						}
					}
					e.unquotedLit(sg)
				}
				continue
			}
			e.unquotedLit(v)
		case *syntax.SglQuoted:
			if inDQ {
				e.lit("'"+p.Value+"'", true)
				continue
			}
			v := p.Value
			if p.Dollar {
				v = ansiC(v)
			}
			if v == "" {
				e.quotedEmpty()
			} else {
				e.lit(v, true)
			}
		case *syntax.DblQuoted:
			e.listEmpty = false
			e.word(p.Parts, true, false)
			if !e.exists && !e.listEmpty {
				e.quotedEmpty()
			}
		case *syntax.ParamExp:
			e.param(p, inDQ)
		case *syntax.CmdSubst:
			s := e.r.cmdSubst(p)
			if inDQ {
				e.lit(s, true)
			} else {
				e.splitText(s)
			}
		case *syntax.ArithmExp:
			var s string
			if p.Bracket {
				s = itoa(e.r.arith(p.X))
			} else {
				sp, ok := e.r.spanOf(p.X, p.Left.Offset()+3, p.Right.Offset())
				s = itoa(e.r.withSpan(sp, ok, func() int64 { return e.r.arith(p.X) }))
			}
			if inDQ {
				e.lit(s, true)
			} else {
				e.splitText(s)
			}
		case *syntax.ProcSubst:
			e.lit(e.r.procSubst(p), true)
		case *syntax.ExtGlob:
			if !e.r.shopts["extglob"] && !e.r.inCond {
				e.r.fatalf(2, "syntax error near unexpected token `('")
			}
			e.flushWS()
			e.cur = append(e.cur, seg{p.Op.String() + p.Pattern.Value + ")", false})
			e.exists = true
			e.glob = true
		case *syntax.BraceExp:
			e.unquotedLit(braceString(p))
		}
	}
}

// unquotedLit adds unquoted literal text: backslash quotes the next byte.
func (e *expander) unquotedLit(v string) {
	if v == "" {
		return
	}
	add := func(s string) {
		if e.splitLits {
			e.splitText(s)
		} else {
			e.lit(s, false)
		}
	}
	if !strings.Contains(v, "\\") {
		add(v)
		return
	}
	var plain strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			if plain.Len() > 0 {
				add(plain.String())
				plain.Reset()
			}
			e.lit(v[i+1:i+2], true)
			i++
			continue
		}
		plain.WriteByte(v[i])
	}
	if plain.Len() > 0 {
		add(plain.String())
	}
}

// tilde expands a leading ~ prefix of a literal.
func (e *expander) tilde(v string, more bool) string {
	prefix, rest, found := strings.Cut(v, "/")
	if !found && more {
		// ~"x" or ~$y: the prefix is quoted or expanded, no expansion.
		if prefix != "~" {
			return v
		}
	}
	var home string
	switch prefix {
	case "~":
		h, ok := e.r.varValue("HOME")
		if !ok {
			h = "/workspace"
		}
		home = h
	case "~+":
		home, _ = e.r.varValue("PWD")
	case "~-":
		h, ok := e.r.varValue("OLDPWD")
		if !ok {
			return v
		}
		home = h
	case "~root":
		home = "/root"
	default:
		return v
	}
	e.lit(home, true)
	if found {
		return "/" + rest
	}
	return ""
}

// unescapeDQ removes the backslashes that are special inside double
// quotes: before $ ` " \ and newline.
func unescapeDQ(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				sb.WriteByte(s[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// heredocBody expands an unquoted here-document: parameters, commands and
// arithmetic, with backslash special only before $ ` \ and newline.
func (r *runner) heredocBody(w *syntax.Word) string {
	var sb strings.Builder
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			s := l.Value
			for i := 0; i < len(s); i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\\\n", s[i+1]) >= 0 {
					if s[i+1] != '\n' {
						sb.WriteByte(s[i+1])
					}
					i++
					continue
				}
				sb.WriteByte(s[i])
			}
			continue
		}
		e := &expander{r: r, ifs: r.ifs()}
		e.word([]syntax.WordPart{p}, true, false)
		e.finish()
		for i, f := range e.fields {
			if i > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(joinSegs(f))
		}
	}
	s := sb.String()
	r.checkString(s)
	return s
}

// hasMeta reports whether s has an unescaped glob character.
func hasMeta(s string, ext bool) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?':
			return true
		case '[':
			// As bash's glob_pattern_p: a bracket that no ] follows is
			// an ordinary character ([ x ] globs nothing, even with
			// nullglob).
			if strings.IndexByte(s[i+1:], ']') >= 0 {
				return true
			}
		case '+', '@', '!':
			if ext && i+1 < len(s) && s[i+1] == '(' {
				return true
			}
		}
	}
	return false
}

// escapePattern quotes every pattern character of s with a backslash.
func escapePattern(s string) string {
	if !strings.ContainsAny(s, "*?[]\\+@!()|") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte("*?[]\\+@!()|", s[i]) >= 0 {
			sb.WriteByte('\\')
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// ansiC decodes the body of $'...'. Bash's strings are C strings: a NUL
// (\0, \x00) ends the value there.
func ansiC(s string) string {
	out, _ := decodeEscapes(s, escapeANSI)
	if i := strings.IndexByte(out, 0); i >= 0 {
		out = out[:i]
	}
	return out
}
