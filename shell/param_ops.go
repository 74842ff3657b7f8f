package shell

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// replace applies ${x/pat/rep} and its forms to each value.
func (r *runner) replace(rp *syntax.Replace, vals []string) []string {
	anchor := byte(0)
	orig := rp.Orig
	if orig != nil && len(orig.Parts) > 0 {
		if l, ok := orig.Parts[0].(*syntax.Lit); ok && l.Value != "" && (l.Value[0] == '#' || l.Value[0] == '%') {
			anchor = l.Value[0]
			parts := append([]syntax.WordPart{&syntax.Lit{Value: l.Value[1:]}}, orig.Parts[1:]...)
			orig = &syntax.Word{Parts: parts}
		}
	}
	pat := r.pattern(orig)
	var with []seg
	if rp.With != nil {
		e := &expander{r: r, ifs: r.ifs()}
		e.word(rp.With.Parts, false, true)
		e.finish()
		for i, f := range e.fields {
			if i > 0 {
				with = append(with, seg{" ", true})
			}
			with = append(with, f...)
		}
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = r.replaceOne(v, pat, with, anchor, rp.All)
	}
	return out
}

func replacement(with []seg, match string) string {
	var sb strings.Builder
	for _, s := range with {
		if s.quoted {
			sb.WriteString(s.s)
			continue
		}
		for i := 0; i < len(s.s); i++ {
			c := s.s[i]
			if c == '\\' && i+1 < len(s.s) {
				sb.WriteByte(s.s[i+1])
				i++
				continue
			}
			if c == '&' {
				sb.WriteString(match)
				continue
			}
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

func (r *runner) replaceOne(v, pat string, with []seg, anchor byte, all bool) string {
	m := r.compilePattern(pat, patternOpts{})
	// Matching tries every start and end: O(n^2) match calls on a long
	// value (bash too takes 15 s for ${x//0/1} on 100 KB), so the loops
	// are check points, and the exec's limits can end them.
	n := 0
	poll := func() {
		if n++; n%4096 == 0 {
			r.poll()
		}
	}
	switch anchor {
	case '#':
		for end := len(v); end >= 0; end-- {
			poll()
			if m.match(v[:end]) {
				return replacement(with, v[:end]) + v[end:]
			}
		}
		return v
	case '%':
		for start := 0; start <= len(v); start++ {
			poll()
			if m.match(v[start:]) {
				return v[:start] + replacement(with, v[start:])
			}
		}
		return v
	}
	if pat == "" {
		return v
	}
	if m.isLiteral && utf8.RuneStart(m.literal[0]) {
		return replaceLiteral(v, m.literal, with, all)
	}
	var sb strings.Builder
	i := 0
	done := false
	for i < len(v) {
		if done {
			sb.WriteString(v[i:])
			break
		}
		found := -1
		for end := len(v); end > i; end-- {
			poll()
			if m.match(v[i:end]) {
				found = end
				break
			}
		}
		if found < 0 {
			_, size := utf8.DecodeRuneInString(v[i:])
			sb.WriteString(v[i : i+size])
			i += size
			continue
		}
		sb.WriteString(replacement(with, v[i:found]))
		i = found
		if !all {
			done = true
		}
	}
	return sb.String()
}

// replaceLiteral is replaceOne's unanchored case for a pattern without
// wildcards: its longest match at the earliest position is its next
// occurrence. (A literal that starts a rune cannot match inside one, which
// is where the general loop, stepping by runes, never looks.)
func replaceLiteral(v, lit string, with []seg, all bool) string {
	var sb strings.Builder
	for {
		j := strings.Index(v, lit)
		if j < 0 {
			break
		}
		sb.WriteString(v[:j])
		sb.WriteString(replacement(with, lit))
		v = v[j+len(lit):]
		if !all {
			break
		}
	}
	sb.WriteString(v)
	return sb.String()
}

// strOp applies # ## % %% ^ ^^ , ,, and @ operators to each value.
func (r *runner) strOp(exp *syntax.Expansion, name string, vals []string, pv paramVal) []string {
	op := exp.Op
	if op == syntax.OtherParamOps {
		return r.atOp(exp.Word.Lit(), name, vals, pv)
	}
	pat := ""
	if exp.Word != nil {
		pat = r.pattern(exp.Word)
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		switch op {
		case syntax.RemSmallPrefix, syntax.RemLargePrefix:
			out[i] = r.trimPrefix(v, pat, op == syntax.RemLargePrefix)
		case syntax.RemSmallSuffix, syntax.RemLargeSuffix:
			out[i] = r.trimSuffix(v, pat, op == syntax.RemLargeSuffix)
		case syntax.UpperFirst, syntax.UpperAll, syntax.LowerFirst, syntax.LowerAll:
			out[i] = r.caseOp(v, pat, op)
		default:
			out[i] = v
		}
	}
	return out
}

func (r *runner) trimPrefix(v, pat string, longest bool) string {
	m := r.compilePattern(pat, patternOpts{})
	if longest {
		for end := len(v); end >= 0; end-- {
			if m.match(v[:end]) {
				return v[end:]
			}
		}
		return v
	}
	for end := 0; end <= len(v); end++ {
		if m.match(v[:end]) {
			return v[end:]
		}
	}
	return v
}

func (r *runner) trimSuffix(v, pat string, longest bool) string {
	m := r.compilePattern(pat, patternOpts{})
	if longest {
		for start := 0; start <= len(v); start++ {
			if m.match(v[start:]) {
				return v[:start]
			}
		}
		return v
	}
	for start := len(v); start >= 0; start-- {
		if m.match(v[start:]) {
			return v[:start]
		}
	}
	return v
}

func (r *runner) caseOp(v, pat string, op syntax.ParExpOperator) string {
	var m *matcher
	if pat != "" {
		m = r.compilePattern(pat, patternOpts{})
	}
	runes := []rune(v)
	for i, c := range runes {
		if (op == syntax.UpperFirst || op == syntax.LowerFirst) && i > 0 {
			break
		}
		if m != nil && !m.match(string(c)) {
			continue
		}
		if op == syntax.UpperFirst || op == syntax.UpperAll {
			runes[i] = unicode.ToUpper(c)
		} else {
			runes[i] = unicode.ToLower(c)
		}
	}
	return string(runes)
}

// atOp applies ${x@Q} and the other @ transformations.
func (r *runner) atOp(op, name string, vals []string, pv paramVal) []string {
	out := make([]string, 0, len(vals))
	v := r.getVar(name)
	for _, s := range vals {
		switch op {
		case "Q":
			out = append(out, shellQuote(s))
		case "E":
			out = append(out, ansiC(s))
		case "P":
			out = append(out, s)
		case "U":
			out = append(out, strings.ToUpper(s))
		case "u":
			out = append(out, upperFirst(s))
		case "L":
			out = append(out, strings.ToLower(s))
		case "a":
			out = append(out, attrString(v))
		case "A":
			switch {
			case v == nil:
				out = append(out, "")
			case (pv.list || pv.star) && v.kind != kindString:
				out = append(out, r.declareLine(name, v, true))
			case attrString(v) == "":
				// A plain variable is an assignment; one element of an
				// array (or its first) is declared with the array's
				// attributes.
				out = append(out, name+"="+shellQuote(s))
			default:
				out = append(out, "declare -"+attrString(v)+" "+name+"="+shellQuote(s))
			}
		case "K", "k":
			out = append(out, shellQuote(s))
		default:
			r.fatalf(1, "${%s@%s}: bad substitution", name, op)
		}
	}
	if op == "a" && len(vals) == 0 && v != nil && !pv.list {
		// An empty array, or a variable declared without a value, still
		// has its attributes.
		out = append(out, attrString(v))
	}
	if op == "A" || op == "a" {
		if len(out) > 1 {
			out = out[:1]
		}
	}
	if (op == "K" || op == "k") && v != nil && v.kind != kindString && (pv.list || pv.star) {
		// Key-value pairs: ${a[@]@K} is one word, keys as declare -p
		// writes them and values double-quoted; ${a[@]@k} is a word each.
		var parts []string
		keys := v.keyList()
		vs := v.values()
		for i := range keys {
			k := keys[i]
			if v.kind == kindAssoc && !isSafeKey(k) {
				k = dquote(k)
			}
			if op == "K" {
				parts = append(parts, k+" "+dquote(vs[i]))
			} else {
				parts = append(parts, keys[i], vs[i])
			}
		}
		if op == "K" {
			s := strings.Join(parts, " ")
			if v.kind == kindAssoc {
				s += " "
			}
			return []string{s}
		}
		return parts
	}
	_ = pv
	return out
}

func upperFirst(s string) string {
	c, size := utf8.DecodeRuneInString(s)
	if size == 0 {
		return s
	}
	return string(unicode.ToUpper(c)) + s[size:]
}

func attrString(v *variable) string {
	if v == nil {
		return ""
	}
	var sb strings.Builder
	switch v.kind {
	case kindIndexed:
		sb.WriteByte('a')
	case kindAssoc:
		sb.WriteByte('A')
	}
	if v.integer {
		sb.WriteByte('i')
	}
	if v.lower {
		sb.WriteByte('l')
	}
	if v.nameref {
		sb.WriteByte('n')
	}
	if v.readonly {
		sb.WriteByte('r')
	}
	if v.upper {
		sb.WriteByte('u')
	}
	if v.exported {
		sb.WriteByte('x')
	}
	return sb.String()
}
