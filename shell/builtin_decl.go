package shell

import (
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// declOpts are the attribute flags of declare and friends.
type declOpts struct {
	set, unset   map[byte]bool
	print        bool
	funcs        bool
	funcNames    bool
	global       bool
	local        bool // local, or declare inside a function
	variant      string
	exportUnset  bool // export -n
	anyAttribute bool
}

// declItem is one operand: a name with an optional value or array.
type declItem struct {
	name   string
	index  *string
	value  *string
	array  *syntax.Assign // name=(...) from the AST
	append bool
}

// declClause runs declare/local/export/readonly/typeset from the AST, so
// that name=(...) and quoting are seen as written.
func (r *runner) declClause(c *syntax.DeclClause) int {
	variant := c.Variant.Value
	var words []string
	var items []declItem
	for _, as := range c.Args {
		if as.Naked && as.Name == nil && as.Value != nil {
			for _, f := range r.fields(as.Value) {
				if len(items) == 0 && (strings.HasPrefix(f, "-") || strings.HasPrefix(f, "+")) && len(f) > 1 {
					words = append(words, f)
					continue
				}
				items = append(items, parseDeclItem(f))
			}
			continue
		}
		if as.Name == nil {
			continue
		}
		it := declItem{name: as.Name.Value, append: as.Append}
		if as.Index != nil {
			s := r.subscriptLazy(as.Name.Value, as.Index)
			it.index = &s
		}
		switch {
		case as.Array != nil:
			it.array = as
		case as.Naked:
		default:
			v := r.assignValue(as)
			it.value = &v
		}
		items = append(items, it)
	}
	if r.xtrace {
		var parts []string
		parts = append(parts, variant)
		parts = append(parts, words...)
		for _, it := range items {
			s := it.name
			if it.value != nil {
				s += "=" + *it.value
			}
			parts = append(parts, quoteTrace(s))
		}
		r.trace(strings.Join(parts, " "))
		if variant == "export" || variant == "readonly" {
			for _, it := range items {
				if it.value != nil {
					r.trace(it.name + "=" + quoteTrace(*it.value))
				}
			}
		}
	}
	return r.declare(variant, words, items)
}

// subscriptLazy evaluates a subscript for a name that may not exist yet
// (declare -A m[k]=v): a plain word is taken literally.
func (r *runner) subscriptLazy(name string, x syntax.ArithmExpr) string {
	return r.subscript(name, x)
}

func parseDeclItem(s string) declItem {
	name, val, hasVal := strings.Cut(s, "=")
	it := declItem{}
	if strings.HasSuffix(name, "+") {
		it.append = true
		name = name[:len(name)-1]
	}
	if i := strings.IndexByte(name, '['); i > 0 && strings.HasSuffix(name, "]") {
		idx := name[i+1 : len(name)-1]
		it.index = &idx
		name = name[:i]
	}
	it.name = name
	if hasVal {
		it.value = &val
	}
	return it
}

func biDeclare(r *runner, args []string) int { return r.declareStrings(args) }
func biLocal(r *runner, args []string) int   { return r.declareStrings(args) }
func biExport(r *runner, args []string) int  { return r.declareStrings(args) }
func biReadonly(r *runner, args []string) int {
	return r.declareStrings(args)
}

// declareStrings runs a declaration builtin reached with string argv
// (builtin declare ..., command export ...).
func (r *runner) declareStrings(args []string) int {
	var words []string
	var items []declItem
	for _, a := range args[1:] {
		if len(items) == 0 && len(a) > 1 && (a[0] == '-' || a[0] == '+') {
			words = append(words, a)
			continue
		}
		items = append(items, parseDeclItem(a))
	}
	return r.declare(args[0], words, items)
}

func (r *runner) declare(variant string, words []string, items []declItem) int {
	o := declOpts{set: map[byte]bool{}, unset: map[byte]bool{}, variant: variant}
	switch variant {
	case "local":
		if r.inFunc == 0 {
			r.errorf("local: can only be used in a function")
			return 1
		}
		o.local = true
		// local - saves the shell options; they come back when the
		// function returns.
		kept := items[:0:0]
		for _, it := range items {
			if it.name != "-" || it.value != nil || it.array != nil {
				kept = append(kept, it)
				continue
			}
			d := len(r.funcNames)
			if _, ok := r.savedOpts[d]; !ok {
				m := map[string]bool{}
				for _, name := range setOptions {
					m[name] = r.optionOn(name)
				}
				r.savedOpts = maps.Clone(r.savedOpts)
				if r.savedOpts == nil {
					r.savedOpts = map[int]map[string]bool{}
				}
				r.savedOpts[d] = m
			}
		}
		if len(kept) == 0 && len(items) > 0 && len(words) == 0 {
			return 0
		}
		items = kept
	case "export":
		o.set['x'] = true
	case "readonly":
		o.set['r'] = true
	case "declare", "typeset":
		o.local = r.inFunc > 0
	}
	for _, w := range words {
		if w == "--" {
			continue
		}
		on := w[0] == '-'
		for i := 1; i < len(w); i++ {
			c := w[i]
			switch c {
			case 'p':
				o.print = true
			case 'f':
				o.funcs = true
			case 'F':
				o.funcNames = true
			case 'g':
				o.global = true
			case 'n':
				if variant == "export" {
					o.exportUnset = true
					continue
				}
				fallthrough
			case 'a', 'A', 'i', 'l', 'u', 'r', 'x', 't':
				if variant == "export" && c != 'n' && c != 'f' && c != 'p' {
					r.errorf("%s: -%c: invalid option", variant, c)
					return 2
				}
				if on {
					o.set[c] = true
				} else {
					o.unset[c] = true
				}
				o.anyAttribute = true
			default:
				r.errorf("%s: -%c: invalid option", variant, c)
				return 2
			}
		}
	}
	if o.global {
		o.local = false
	}
	if o.funcs || o.funcNames {
		return r.declareFuncs(o, items)
	}
	if o.print || len(items) == 0 {
		return r.declarePrint(o, items)
	}
	status := 0
	for _, it := range items {
		if err := r.declareOne(o, it); err != nil {
			r.errorf("%s: %s", variant, err)
			status = 1
		}
	}
	return status
}

type declError string

func (e declError) Error() string { return string(e) }

func (r *runner) declareOne(o declOpts, it declItem) error {
	name := it.name
	if !validName(name) {
		return declError(fmt.Sprintf("`%s': not a valid identifier", declItemText(it)))
	}
	var v *variable
	if o.local {
		if old := r.lookupVar(name); old != nil && old.readonly {
			return readonlyErr{name}
		}
		top := r.funcScope()
		v = top.mine()[name]
		if v == nil {
			v = &variable{local: true}
			if o.set['x'] || r.allexport {
				v.exported = true
			}
			// local inherits nothing, but an existing global's value
			// stays visible until assigned (bash: local x is unset).
			top.vars[name] = v
		}
	} else if o.global || r.inFunc == 0 {
		v = r.scopes[0].mine()[r.resolveRefGlobal(name)]
		if v == nil {
			v = &variable{}
			r.scopes[0].mine()[name] = v
		}
	} else {
		v = r.ensureVar(name)
	}
	if v.readonly && (it.value != nil || it.array != nil || o.unset['r']) {
		return readonlyErr{name}
	}
	if o.exportUnset {
		v.exported = false
		return nil
	}
	if o.set['a'] && v.kind == kindString {
		v.toIndexed()
	}
	if o.set['A'] && v.kind != kindAssoc {
		if v.kind == kindIndexed && v.arr.len() > 0 {
			return declError(fmt.Sprintf("%s: cannot convert indexed to associative array", name))
		}
		v.kind = kindAssoc
		v.assoc = map[string]string{}
		v.keys = nil
	}
	apply := func(c byte, on bool) {
		switch c {
		case 'i':
			v.integer = on
		case 'l':
			v.lower = on
			if on {
				v.upper = false
			}
		case 'u':
			v.upper = on
			if on {
				v.lower = false
			}
		case 'x':
			v.exported = on
		case 'n':
			v.nameref = on
		}
	}
	for c := range o.set {
		apply(c, true)
	}
	for c := range o.unset {
		apply(c, false)
	}
	switch {
	case it.array != nil:
		if err := r.assignArray(name, it.array, v); err != nil {
			return err
		}
	case it.value != nil:
		if v.nameref && !v.set {
			v.str, v.set = *it.value, true
			break
		}
		if err := r.assign(name, it.index, *it.value, it.append); err != nil {
			return err
		}
	}
	if o.set['r'] {
		v.readonly = true
	}
	return nil
}

// resolveRefGlobal resolves namerefs for a global declaration.
func (r *runner) resolveRefGlobal(name string) string {
	return name
}

func declItemText(it declItem) string {
	s := it.name
	if it.index != nil {
		s += "[" + *it.index + "]"
	}
	if it.value != nil {
		s += "=" + *it.value
	}
	return s
}

// funcScope is the innermost function scope (skipping temporary
// prefix-assignment scopes).
func (r *runner) funcScope() *scope {
	for i := len(r.scopes) - 1; i > 0; i-- {
		if !r.scopes[i].temp {
			return r.scopes[i]
		}
	}
	return r.scopes[0]
}

// assignArray assigns name=(...) or name+=(...).
func (r *runner) assignArray(name string, as *syntax.Assign, v *variable) error {
	if v == nil {
		if r.inFunc > 0 {
			v = r.ensureVar(name)
		} else {
			v = r.ensureVar(name)
		}
	}
	if v.readonly {
		return readonlyErr{name}
	}
	if r.xtrace {
		var parts []string
		for _, el := range as.Array.Elems {
			if el.Value != nil {
				parts = append(parts, r.literal(el.Value))
			}
		}
		op := "="
		if as.Append {
			op = "+="
		}
		r.trace(name + op + "(" + strings.Join(quoteFields(parts), " ") + ")")
	}
	// Like bash, every value is expanded before the old elements go, so
	// a=("${a[@]}" x) sees the old array.
	vals := make([][]string, len(as.Array.Elems))
	for i, el := range as.Array.Elems {
		switch {
		case el.Value == nil:
		case el.Index != nil:
			vals[i] = []string{r.assignWord(el.Value)}
		default:
			vals[i] = r.fields(el.Value)
		}
	}
	if v.kind == kindAssoc {
		if !as.Append {
			v.assoc = map[string]string{}
			v.keys = nil
		}
		var pending []string
		for i, el := range as.Array.Elems {
			if el.Index != nil {
				key := ""
				if w, ok := el.Index.(*syntax.Word); ok {
					key = r.literal(w)
				} else {
					key = r.arithText(el.Index)
				}
				val := ""
				if len(vals[i]) > 0 {
					val = vals[i][0]
				}
				v.setAssoc(key, r.transform(v, name, val, "", false))
				r.grow(int64(2*len(key)+len(val)) + 64)
				continue
			}
			if as.Array.Elems[0].Index != nil {
				// Key-value pairs only when the list starts with one.
				for _, w := range vals[i] {
					r.errorf("%s: %s: must use subscript when assigning associative array", name, w)
				}
				continue
			}
			pending = append(pending, vals[i]...)
		}
		for i := 0; i < len(pending); i += 2 {
			val := ""
			if i+1 < len(pending) {
				val = pending[i+1]
			}
			v.setAssoc(pending[i], val)
			r.grow(int64(2*len(pending[i])+len(val)) + 64)
		}
		v.set = true
		r.checkArray(len(v.assoc))
		return nil
	}
	if v.kind == kindString || !as.Append {
		if as.Append {
			v.toIndexed()
		} else {
			v.kind, v.str, v.arr = kindIndexed, "", array{}
		}
	}
	next := v.maxIndex() + 1
	for k, el := range as.Array.Elems {
		if el.Index != nil {
			i := int(r.arith(el.Index))
			if i < 0 {
				i += v.maxIndex() + 1
			}
			val := ""
			if len(vals[k]) > 0 {
				val = vals[k][0]
			}
			v.arr.set(i, r.transform(v, name, val, "", false))
			r.grow(int64(len(val)) + 24)
			next = i + 1
			continue
		}
		for _, f := range vals[k] {
			v.arr.set(next, r.transform(v, name, f, "", false))
			r.grow(int64(len(f)) + 24)
			next++
		}
	}
	v.set = true
	r.checkArray(v.arr.len())
	return nil
}

func (r *runner) declareFuncs(o declOpts, items []declItem) int {
	names := []string{}
	if len(items) == 0 {
		for k := range r.funcs {
			names = append(names, k)
		}
		sort.Strings(names)
	} else {
		for _, it := range items {
			names = append(names, it.name)
		}
	}
	status := 0
	for _, n := range names {
		body, ok := r.funcs[n]
		if !ok {
			status = 1
			continue
		}
		if o.set['x'] || o.variant == "export" {
			continue
		}
		if o.funcNames && len(items) > 0 {
			r.write(1, n+"\n")
		} else if o.funcNames {
			r.write(1, "declare -f "+n+"\n")
		} else {
			r.write(1, funcText(n, body))
		}
	}
	return status
}

func (r *runner) declarePrint(o declOpts, items []declItem) int {
	if len(items) == 0 {
		all := map[string]*variable{}
		for _, s := range r.scopes {
			for k, v := range s.vars {
				all[k] = v
			}
		}
		names := make([]string, 0, len(all))
		for k := range all {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, n := range names {
			v := all[n]
			if o.variant == "export" && !v.exported || o.variant == "readonly" && !v.readonly {
				continue
			}
			if o.set['x'] && !v.exported || o.set['r'] && !v.readonly || o.set['a'] && v.kind != kindIndexed || o.set['A'] && v.kind != kindAssoc {
				continue
			}
			if !o.print && o.variant != "export" && o.variant != "readonly" && !o.anyAttribute {
				if v.kind == kindString && v.set {
					r.write(1, n+"="+setQuote(v.str)+"\n")
				} else if v.kind != kindString {
					r.write(1, n+"="+arrayBody(v)+"\n")
				}
				continue
			}
			r.write(1, r.declareLine(n, v, false)+"\n")
		}
		return 0
	}
	status := 0
	for _, it := range items {
		v := r.lookupVar(it.name)
		if v == nil || !v.nameref {
			v = r.getVar(it.name) // declare -p ref shows the reference itself
		}
		if v == nil {
			r.errorf("declare: %s: not found", it.name)
			status = 1
			continue
		}
		r.write(1, r.declareLine(it.name, v, false)+"\n")
	}
	return status
}

// declareLine is declare -p's line for one variable.
func (r *runner) declareLine(name string, v *variable, short bool) string {
	flags := attrString(v)
	if flags == "" {
		flags = "-"
	}
	prefix := "declare -" + flags + " " + name
	switch {
	case !v.set:
		return prefix
	case v.kind != kindString:
		return prefix + "=" + arrayBody(v)
	}
	return prefix + "=" + dquote(v.str)
}

// dquote quotes s in double quotes as declare -p does.
func dquote(s string) string {
	if needsANSI(s) || strings.ContainsAny(s, "\t\n") {
		return ansiQuote(s)
	}
	var sb strings.Builder
	sb.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\\', '$', '`':
			sb.WriteByte('\\')
		}
		sb.WriteByte(s[i])
	}
	sb.WriteByte('"')
	return sb.String()
}

func arrayBody(v *variable) string {
	var sb strings.Builder
	sb.WriteByte('(')
	if v.kind == kindAssoc {
		for _, k := range assocOrder(v.keys) {
			key := k
			if !isSafeKey(k) {
				key = dquote(k)
			}
			sb.WriteString("[" + key + "]=" + dquote(v.assoc[k]) + " ")
		}
	} else {
		for i, k := range v.arr.keys {
			if i > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString("[" + strconv.Itoa(k) + "]=" + dquote(v.arr.vals[i]))
		}
	}
	sb.WriteByte(')')
	return sb.String()
}

func isSafeKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if !traceSafe(c) {
			return false
		}
	}
	return true
}

func biUnset(r *runner, args []string) int {
	mode := byte('v')
	a := args[1:]
	explicit := false
	for len(a) > 0 && strings.HasPrefix(a[0], "-") && len(a[0]) > 1 {
		for _, c := range a[0][1:] {
			switch c {
			case 'f', 'v', 'n':
				mode = byte(c)
				explicit = true
			default:
				r.errorf("unset: -%c: invalid option", c)
				r.write(2, "unset: usage: unset [-f] [-v] [-n] [name ...]\n")
				return 2
			}
		}
		a = a[1:]
	}
	status := 0
	for _, name := range a {
		if mode == 'f' {
			delete(r.funcsW(), name)
			continue
		}
		base, idx, hasIdx := strings.Cut(name, "[")
		if hasIdx && strings.HasSuffix(idx, "]") {
			idx = idx[:len(idx)-1]
			v := r.getVar(base)
			if v == nil {
				continue
			}
			if v.readonly {
				r.errorf("unset: %s: cannot unset: readonly variable", base)
				status = 1
				continue
			}
			switch {
			case idx == "@" || idx == "*":
				r.unsetVar(base)
			case v.kind == kindAssoc:
				v.unsetAssoc(idx)
			case v.kind == kindIndexed:
				i, ok := r.arrayIndex(v, idx)
				if !ok {
					r.errorf("unset: [%s]: bad array subscript", idx)
					status = 1
					continue
				}
				v.arr.unset(i)
			default:
				if r.arithExpr(idx) == 0 {
					r.unsetVar(base)
				}
			}
			continue
		}
		if !validName(name) && !explicit {
			// Without -v, a name that cannot be a variable's is taken
			// as a function's.
			delete(r.funcsW(), name)
			continue
		}
		if !validName(name) {
			r.errorf("unset: `%s': not a valid identifier", name)
			status = 1
			continue
		}
		if r.lookupVar(r.resolveRef(name)) == nil && !explicit {
			delete(r.funcsW(), name)
			continue
		}
		if mode == 'n' {
			// unset -n removes a nameref itself, not what it names.
			if v := r.lookupVar(name); v != nil && v.nameref {
				if v.readonly {
					r.errorf("unset: %s: cannot unset: readonly variable", name)
					status = 1
					continue
				}
				for i := len(r.scopes) - 1; i >= 0; i-- {
					if _, ok := r.scopes[i].vars[name]; ok {
						delete(r.scopes[i].mine(), name)
						break
					}
				}
				continue
			}
		}
		if err := r.unsetVar(name); err != nil {
			r.errorf("unset: %s: cannot unset: readonly variable", name)
			status = 1
		}
	}
	return status
}
