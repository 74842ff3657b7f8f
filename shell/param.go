package shell

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// paramVal is what a parameter refers to before any operator applies.
type paramVal struct {
	vals []string
	list bool // "$@"-like: several words
	star bool // "$*"-like: joined by IFS[0] when quoted
	set  bool
}

// indexWord returns the literal text of a subscript that is a plain word
// ("@", "*", or an assoc key), or "" when it is arithmetic.
func indexWord(x syntax.ArithmExpr) (string, bool) {
	w, ok := x.(*syntax.Word)
	if !ok {
		return "", false
	}
	if l := w.Lit(); l == "@" || l == "*" {
		return l, true
	}
	return "", false
}

// listIndex reports whether a subscript is [@] or [*].
func listIndex(x syntax.ArithmExpr) bool {
	_, ok := indexWord(x)
	return ok
}

// subscript evaluates an array subscript for name: the key of an
// associative array, or the arithmetic index of an indexed one.
func (r *runner) subscript(name string, x syntax.ArithmExpr) string {
	if v, _ := r.readVar(name); v != nil && v.kind == kindAssoc {
		if w, ok := x.(*syntax.Word); ok {
			return r.literal(w)
		}
		return r.arithText(x)
	}
	return itoa(r.arith(x))
}

// lookupParam resolves name (with an optional subscript) to its values.
func (r *runner) lookupParam(name string, index syntax.ArithmExpr, indexStr *string) paramVal {
	switch name {
	case "@", "*":
		return paramVal{vals: r.params, list: true, star: name == "*", set: len(r.params) > 0}
	case "#":
		return paramVal{vals: []string{strconv.Itoa(len(r.params))}, set: true}
	case "?":
		return paramVal{vals: []string{strconv.Itoa(r.status)}, set: true}
	case "-":
		return paramVal{vals: []string{r.flags()}, set: true}
	case "$":
		return paramVal{vals: []string{"1"}, set: true}
	case "!":
		if r.lastBg == 0 {
			return paramVal{}
		}
		return paramVal{vals: []string{strconv.Itoa(r.lastBg)}, set: true}
	case "0":
		return paramVal{vals: []string{r.arg0}, set: true}
	case "_":
		return paramVal{vals: []string{r.lastArg}, set: true}
	}
	if n, err := strconv.Atoi(name); err == nil {
		if n >= 1 && n <= len(r.params) {
			return paramVal{vals: []string{r.params[n-1]}, set: true}
		}
		return paramVal{}
	}
	v, special := r.readVar(name)
	if index == nil && indexStr == nil {
		if v == nil {
			return paramVal{}
		}
		s, ok := v.scalar()
		if !ok {
			return paramVal{}
		}
		return paramVal{vals: []string{s}, set: true}
	}
	var sub string
	if indexStr != nil {
		sub = *indexStr
	} else if w, ok := indexWord(index); ok {
		sub = w
	}
	if sub == "@" || sub == "*" {
		if v == nil {
			return paramVal{list: true, star: sub == "*"}
		}
		vals := v.values()
		return paramVal{vals: vals, list: true, star: sub == "*", set: len(vals) > 0}
	}
	if v == nil {
		if index != nil {
			r.subscript(name, index)
		}
		return paramVal{}
	}
	switch v.kind {
	case kindAssoc:
		key := sub
		if indexStr == nil {
			key = r.subscript(name, index)
		}
		s, ok := v.assoc[key]
		return paramVal{vals: []string{s}, set: ok}
	case kindIndexed:
		var i int
		if indexStr != nil {
			i, _ = r.arrayIndex(v, sub)
		} else {
			i = int(r.arith(index))
			if !special {
				// The subscript may have assigned to the array (a[a[0]=1]).
				if v = r.peekVar(r.resolveRef(name)); v == nil || v.kind != kindIndexed {
					return paramVal{}
				}
			}
			if i < 0 {
				i += v.maxIndex() + 1
				if i < 0 {
					r.errorf("%s: bad array subscript", name)
					return paramVal{}
				}
			}
		}
		s, ok := v.arr.get(i)
		return paramVal{vals: []string{s}, set: ok}
	}
	i := 0
	if indexStr != nil {
		i = int(r.arithExpr(sub))
	} else {
		i = int(r.arith(index))
	}
	if i == 0 || i == -1 {
		s, ok := v.scalar()
		return paramVal{vals: []string{s}, set: ok}
	}
	return paramVal{}
}

// param expands a parameter expansion into e.
func (e *expander) param(pe *syntax.ParamExp, inDQ bool) {
	r := e.r
	name := ""
	if pe.Param != nil {
		name = pe.Param.Value
	}
	if pe.Names != 0 {
		var names []string
		for _, s := range r.scopes {
			for k, v := range s.vars {
				if strings.HasPrefix(k, name) && (v.set || v.kind != kindString) {
					names = append(names, k)
				}
			}
		}
		sort.Strings(names)
		names = dedup(names)
		e.values(names, true, pe.Names == syntax.NamesPrefix, inDQ)
		return
	}
	var pv paramVal
	switch {
	case pe.Excl && pe.Index != nil:
		if w, ok := indexWord(pe.Index); ok {
			var keys []string
			if v, _ := r.readVar(name); v != nil {
				keys = v.keyList()
			}
			e.values(keys, true, w == "*", inDQ)
			return
		}
		pv = r.lookupParam(name, pe.Index, nil)
	case pe.Excl:
		ref := r.lookupParam(name, nil, nil)
		if !ref.set {
			if r.nounset {
				r.fatalf(127, "%s: unbound variable", name)
			}
			e.values(nil, false, false, inDQ)
			return
		}
		target := strings.Join(ref.vals, " ")
		if ref.list {
			target = strings.Join(ref.vals, " ")
		}
		if v := r.getVar(name); v != nil && v.nameref {
			// ${!ref} on a nameref yields the name it points to.
			e.values([]string{target}, false, false, inDQ)
			return
		}
		tname, tidx, hasIdx := strings.Cut(target, "[")
		if hasIdx {
			tidx = strings.TrimSuffix(tidx, "]")
			pv = r.lookupParam(tname, nil, &tidx)
		} else {
			if !validName(target) && target != "@" && target != "*" && !isDigits(target) && len(target) != 1 {
				r.fatalf(1, "%s: invalid variable name", target)
			}
			pv = r.lookupParam(target, nil, nil)
		}
		name = target
	case pe.Length && listIndex(pe.Index) && validName(name):
		// ${#a[@]} counts without listing the elements: a loop that
		// appends and counts stays linear.
		n := 0
		if v, _ := r.readVar(name); v != nil {
			n = v.count()
		}
		e.values([]string{strconv.Itoa(n)}, false, false, inDQ)
		return
	case pe.Slice != nil && listIndex(pe.Index) && validName(name):
		// The slice reads the array itself (see slice).
		pv = paramVal{list: true}
		if w, _ := indexWord(pe.Index); w == "*" {
			pv.star = true
		}
		if v, _ := r.readVar(name); v == nil || v.kind != kindIndexed {
			pv = r.lookupParam(name, pe.Index, nil)
		}
	default:
		pv = r.lookupParam(name, pe.Index, nil)
	}
	if pe.Length {
		if pv.list {
			e.values([]string{strconv.Itoa(len(pv.vals))}, false, false, inDQ)
			return
		}
		if !pv.set && r.nounset {
			r.fatalf(127, "%s: unbound variable", name)
		}
		n := 0
		if len(pv.vals) > 0 {
			n = utf8.RuneCountInString(pv.vals[0])
		}
		e.values([]string{strconv.Itoa(n)}, false, false, inDQ)
		return
	}
	if pe.Exp != nil {
		if e.defaultOps(pe, name, pv, inDQ) {
			return
		}
	}
	if !pv.set && r.nounset && !pv.list && name != "@" && name != "*" {
		r.fatalf(127, "%s: unbound variable", paramName(pe, name))
	}
	vals := pv.vals
	switch {
	case pe.Slice != nil:
		vals = r.slice(pe, name, pv)
	case pe.Repl != nil:
		vals = r.replace(pe.Repl, vals)
	case pe.Exp != nil:
		vals = r.strOp(pe.Exp, name, vals, pv)
	}
	e.values(vals, pv.list, pv.star, inDQ)
}

func paramName(pe *syntax.ParamExp, name string) string {
	if pe.Short && isDigits(name) {
		// bash names $1 so, but ${1} as 1.
		return "$" + name
	}
	if pe.Index != nil {
		if w, ok := pe.Index.(*syntax.Word); ok {
			return name + "[" + w.Lit() + "]"
		}
	}
	return name
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func dedup(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// defaultOps handles - = ? + and their colon forms; it reports whether it
// expanded anything itself.
func (e *expander) defaultOps(pe *syntax.ParamExp, name string, pv paramVal, inDQ bool) bool {
	r := e.r
	op := pe.Exp.Op
	colon := false
	switch op {
	case syntax.DefaultUnsetOrNull, syntax.AssignUnsetOrNull, syntax.ErrorUnsetOrNull, syntax.AlternateUnsetOrNull:
		colon = true
	case syntax.DefaultUnset, syntax.AssignUnset, syntax.ErrorUnset, syntax.AlternateUnset:
	default:
		return false
	}
	missing := !pv.set
	if colon && !missing {
		missing = strings.Join(pv.vals, "") == ""
	}
	var parts []syntax.WordPart
	if pe.Exp.Word != nil {
		parts = procSubstParts(pe.Exp.Word.Parts, inDQ)
	}
	sub := func() {
		saved := e.splitLits
		e.splitLits = !inDQ
		e.word(parts, inDQ, true)
		e.splitLits = saved
	}
	switch op {
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull:
		if missing {
			sub()
			return true
		}
	case syntax.AlternateUnset, syntax.AlternateUnsetOrNull:
		if !missing {
			sub()
		}
		return true
	case syntax.AssignUnset, syntax.AssignUnsetOrNull:
		if missing {
			val := ""
			if pe.Exp.Word != nil {
				val = r.assignWord(pe.Exp.Word)
			}
			if !validName(name) {
				r.fatalf(1, "$%s: cannot assign in this way", name)
			}
			var idx *string
			if pe.Index != nil {
				s := r.subscript(name, pe.Index)
				idx = &s
			}
			if err := r.assign(name, idx, val, false); err != nil {
				r.fatalf(1, "%s", err)
			}
			e.values([]string{val}, false, false, inDQ)
			return true
		}
	case syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
		if missing {
			msg := "parameter null or not set"
			if !colon {
				msg = "parameter not set"
			}
			if pe.Exp.Word != nil {
				if m := r.literal(pe.Exp.Word); m != "" {
					msg = m
				}
			}
			r.fatalf(127, "%s: %s", name, msg)
		}
	}
	return false
}

// values adds a parameter's values to e with "$@"/"$*" semantics.
func (e *expander) values(vals []string, list, star, inDQ bool) {
	if !list {
		s := ""
		if len(vals) > 0 {
			s = vals[0]
		}
		if inDQ {
			e.lit(s, true)
		} else {
			e.splitText(s)
		}
		return
	}
	if inDQ && star || !inDQ && !e.split {
		sep := " "
		if star {
			ifs := e.r.ifs()
			sep = ""
			if ifs != "" {
				sep = ifs[:1]
			}
		}
		joined := strings.Join(vals, sep)
		if inDQ {
			e.lit(joined, true)
		} else {
			e.splitText(joined)
		}
		return
	}
	if inDQ {
		if len(vals) == 0 {
			e.listEmpty = true
		}
		for i, v := range vals {
			if i > 0 {
				e.fieldBreak()
			}
			e.lit(v, true)
		}
		return
	}
	for i, v := range vals {
		if i > 0 {
			if e.exists || len(e.cur) > 0 {
				e.emit()
			} else {
				e.pendingWS = false
			}
		}
		e.splitText(v)
	}
}

// slice applies ${x:offset:length}.
func (r *runner) slice(pe *syntax.ParamExp, name string, pv paramVal) []string {
	var off int64
	if pe.Slice.Offset != nil { // ${x::2}: an empty offset is 0
		off = r.arith(pe.Slice.Offset)
	}
	hasLen := pe.Slice.Length != nil
	var length int64
	if hasLen {
		length = r.arith(pe.Slice.Length)
	}
	if pv.list {
		var items []string
		if name == "@" || name == "*" {
			items = append([]string{r.arg0}, r.params...)
			if off == 0 {
				// ${@:0} includes $0
			}
		} else {
			v, _ := r.readVar(name)
			if v != nil && v.kind == kindIndexed {
				start := off
				if start < 0 {
					start += int64(v.maxIndex()) + 1
					if start < 0 {
						return nil
					}
				}
				var out []string
				if start <= int64(v.maxIndex()) {
					out = v.arr.vals[v.arr.from(int(start)):]
					if hasLen && length >= 0 && int64(len(out)) > length {
						// Only what the length keeps is copied: ${a[@]:i:1}
						// in a loop stays O(1) per step.
						out = out[:length]
					}
					out = slices.Clone(out)
				}
				return cutLen(out, hasLen, length, pe, r)
			}
			items = append([]string{""}, pv.vals...)
			if off == 0 {
				items = items[1:]
			} else {
				off--
			}
			items = items[0:]
			if off == 0 && len(items) > 0 && items[0] == "" && name != "@" {
				// fallthrough: positional indexing below
			}
			if off < 0 {
				off += int64(len(items))
			}
			if off < 0 || off > int64(len(items)) {
				return nil
			}
			return cutLen(items[off:], hasLen, length, pe, r)
		}
		if off < 0 {
			off += int64(len(items))
			if off < 1 {
				return nil
			}
		}
		if off > int64(len(items)) {
			return nil
		}
		return cutLen(items[off:], hasLen, length, pe, r)
	}
	if len(pv.vals) == 0 {
		return nil
	}
	runes := []rune(pv.vals[0])
	n := int64(len(runes))
	if off < 0 {
		off += n
		if off < 0 {
			return []string{""}
		}
	}
	if off > n {
		return []string{""}
	}
	end := n
	if hasLen {
		if length < 0 {
			end = n + length
			if end < off {
				r.fatalf(1, "%s: substring expression < 0", r.arithText(pe.Slice.Length))
			}
		} else {
			end = min(n, off+length)
		}
	}
	return []string{string(runes[off:end])}
}

func cutLen(items []string, hasLen bool, length int64, pe *syntax.ParamExp, r *runner) []string {
	if !hasLen {
		return items
	}
	if length < 0 {
		r.fatalf(1, "%s: substring expression < 0", r.arithText(pe.Slice.Length))
	}
	if length < int64(len(items)) {
		return items[:length]
	}
	return items
}

// procSubstParts finds process substitutions that mvdan/sh leaves as
// literal text in an unquoted ${x:-<(cmd)}: when a literal part holds <(
// or >(, the word is printed back and parsed again as command words,
// whose parts (joined by a space, split again later) replace it, so that
// bash's substitution happens.
func procSubstParts(parts []syntax.WordPart, inDQ bool) []syntax.WordPart {
	if inDQ {
		return parts
	}
	found := false
	for _, p := range parts {
		if l, ok := p.(*syntax.Lit); ok && (strings.Contains(l.Value, "<(") || strings.Contains(l.Value, ">(")) {
			found = true
			break
		}
	}
	if !found {
		return parts
	}
	var sb strings.Builder
	sb.WriteString(": ")
	if err := syntax.NewPrinter().Print(&sb, &syntax.Word{Parts: parts}); err != nil {
		return parts
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(sb.String()), "")
	if err != nil || len(f.Stmts) != 1 || len(f.Stmts[0].Redirs) > 0 {
		return parts
	}
	ce, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) < 2 || len(ce.Assigns) > 0 {
		return parts
	}
	var out []syntax.WordPart
	for j, w := range ce.Args[1:] {
		if j > 0 {
			out = append(out, &syntax.Lit{Value: " "}) // split again later
		}
		out = append(out, w.Parts...)
	}
	return out
}
