package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/itchyny/gojq"
	"rung.dev/rung/shell"
)

// jqPrelude redefines the builtins whose results depend on object key
// order so that they follow the input's order as jq 1.6 does.
const jqPrelude = `def keys_unsorted: _rung_keys;
def to_entries: [_rung_keys[] as $k | {key: $k, value: .[$k]}];
def from_entries: _rung_from_entries;
def with_entries(f): to_entries | map(f) | from_entries;
def tojson: _rung_tojson;
def tostring: if type == "string" then . else _rung_tojson end;
def recurse: recurse(.[]?);
def _rung_recurse_chk: recurse(_rung_chk | .[]?);
def paths: path(..) | select(length > 0);
def paths(f): . as $dot | paths | select(. as $p | $dot | getpath($p) | f);
def leaf_paths: paths(scalars);
def add: reduce .[] as $x (null; . + $x);
def map(f): [.[] | f];
def map_values(f): if type == "object" then with_entries(.value |= f) else .[] |= f end;
`

// jqBufferMax is how much output is held back so that an object of
// unknown key order can still be refused; past it, output streams.
const jqBufferMax = 8 << 20

type jqRun struct {
	ctx   context.Context
	c     *shell.Call
	o     *jqOpts
	order *jqOrder
	enc   *jqEncoder

	out, errb bytes.Buffer
	committed bool // output has been written through to c.Stdout
	halted    bool
	haltCode  int

	inputs *jqInputs
	// ret is jq 1.6's per-input result: 0 ok, 5 error, 11 last output
	// false or null (-e), 14 no output; the last input's ret decides.
	ret      int
	parseErr bool
	// runErr: a filter stopped with an error of gojq's own (not
	// error(v)), which it words otherwise than jq 1.6, so the run is
	// refused while its output can still be held back.
	runErr bool
}

func (r *jqRun) run() int {
	o := r.o
	r.enc = &jqEncoder{order: r.order, sortKeys: o.sortKeys, ascii: o.ascii}
	switch {
	case o.compact || o.indent == 0 && !o.tab:
	case o.tab:
		r.enc.indent = "\t"
	default:
		r.enc.indent = strings.Repeat(" ", o.indent)
	}
	code, err := r.compile()
	if err != nil {
		// gojq words compile errors otherwise than jq 1.6
		// ("nosuchfn/0 is not defined at <top-level>, line 1:").
		return r.c.Fail("jq 1.6's wording of a compile error")
	}
	r.inputs = &jqInputs{r: r}
	if o.null {
		r.eval(code, nil)
	} else if o.slurp {
		all := []any{}
		if o.rawIn {
			var b strings.Builder
			for {
				v, ok := r.inputs.Next()
				if !ok {
					break
				}
				if s, isStr := v.(string); isStr {
					b.WriteString(s)
				}
			}
			r.eval(code, b.String())
		} else {
			for {
				v, ok := r.inputs.Next()
				if !ok {
					break
				}
				if _, isErr := v.(error); isErr {
					continue
				}
				all = append(all, v)
			}
			if r.inputs.failed == 0 {
				r.eval(code, all)
			}
		}
	} else {
		for {
			if err := r.ctx.Err(); err != nil {
				return r.finish(130)
			}
			v, ok := r.inputs.Next()
			if !ok {
				break
			}
			if _, isErr := v.(error); isErr {
				continue
			}
			r.eval(code, v)
			r.inputs.release()
		}
	}
	if r.refuse() {
		return r.c.Fail("object key order")
	}
	if r.runErr && !r.committed {
		return r.c.Fail("jq 1.6's wording of a run-time error")
	}
	status := r.ret
	switch {
	case r.halted:
		status = r.haltCode
	case r.parseErr:
		status = 4 // what jq 1.6 exits with after "parse error"
	case r.inputs.failed > 0 && status < 10 && status != 5:
		status = 2
	case status >= 10 && o.exit:
		status -= 10
	case status >= 10:
		status = 0
	}
	return r.finish(status)
}

func (r *jqRun) refuse() bool { return r.enc.unordered && !r.committed }

func (r *jqRun) finish(status int) int {
	r.c.Stdout.Write(r.out.Bytes())
	r.c.Stderr.Write(r.errb.Bytes())
	r.out.Reset()
	r.errb.Reset()
	return status
}

func (r *jqRun) compile() (*gojq.Code, error) {
	q, err := gojq.Parse(jqPrelude + r.o.filter)
	if err != nil {
		return nil, err
	}
	jqRewrite(reflect.ValueOf(q), false)
	names := append([]string{"$ARGS"}, r.o.names...)
	opts := []gojq.CompilerOption{
		gojq.WithVariables(names),
		gojq.WithEnvironLoader(func() []string { return r.c.Env }),
		gojq.WithFunction("_rung_order", 1, 1, r.fnOrder),
		gojq.WithFunction("_rung_keys", 0, 0, r.fnKeys),
		gojq.WithFunction("_rung_from_entries", 0, 0, r.fnFromEntries),
		gojq.WithFunction("_rung_tojson", 0, 0, r.fnToJSON),
		gojq.WithFunction("_rung_chk", 0, 0, r.fnCheckIter),
		gojq.WithFunction("_rung_vals", 0, 0, r.fnValues),
		gojq.WithInputIter(jqInputIter{r}),
	}
	return gojq.Compile(q, opts...)
}

func (r *jqRun) eval(code *gojq.Code, input any) {
	positional := r.o.positional
	if positional == nil {
		positional = []any{}
	}
	args := map[string]any{"positional": positional, "named": r.o.named}
	r.order.record(args, []string{"positional", "named"})
	r.order.record(r.o.named, r.o.namedKeys)
	vals := append([]any{args}, r.o.values...)
	iter := code.RunWithContext(r.ctx, input, vals...)
	r.ret = 14
	for {
		v, ok := iter.Next()
		if !ok {
			return
		}
		if err, isErr := v.(error); isErr {
			var halt *gojq.HaltError
			if errors.As(err, &halt) {
				r.halt(halt)
				return
			}
			r.errb.WriteString("jq: error (at " + r.inputs.where() + ")" + r.errText(err) + "\n")
			r.ret = 5
			var ve interface{ Value() any }
			if !errors.As(err, &ve) {
				r.runErr = true // not error(v): gojq's own wording
			}
			return
		}
		r.emit(v)
	}
}

func (r *jqRun) halt(h *gojq.HaltError) {
	if v := h.Value(); v != nil {
		if s, ok := v.(string); ok {
			r.errb.WriteString(s)
		} else {
			r.errb.Write(r.enc.encode(nil, v, 0))
			r.errb.WriteByte('\n')
		}
	}
	r.halted, r.haltCode = true, h.ExitCode()
	r.inputs.stop = true
}

// errText is the part of jq's error line after "(at file:line)".
func (r *jqRun) errText(err error) string {
	var ve interface{ Value() any }
	if errors.As(err, &ve) {
		v := ve.Value()
		if s, ok := v.(string); ok {
			return ": " + s
		}
		return " (not a string): " + string(r.enc.encode(nil, v, 0))
	}
	return ": " + err.Error()
}

func (r *jqRun) emit(v any) {
	r.ret = 0
	if r.o.exit && (v == nil || v == false) {
		r.ret = 11
	}
	if s, ok := v.(string); ok && r.o.raw {
		r.out.WriteString(s)
	} else {
		r.out.Write(r.enc.encode(nil, v, 0))
	}
	if !r.o.join {
		r.out.WriteByte('\n')
	}
	if r.out.Len() > jqBufferMax && !r.refuse() {
		r.c.Stdout.Write(r.out.Bytes())
		r.out.Reset()
		r.committed = true
	}
}

func (r *jqRun) fnOrder(v any, args []any) any {
	m, ok := v.(map[string]any)
	keys, ok2 := args[0].([]any)
	if !ok || !ok2 {
		return v
	}
	seen := map[string]bool{}
	ks := make([]string, 0, len(keys))
	for _, k := range keys {
		s, _ := k.(string)
		if !seen[s] {
			seen[s] = true
			ks = append(ks, s)
		}
	}
	r.order.record(m, ks)
	return v
}

func (r *jqRun) fnKeys(v any, _ []any) any {
	switch v := v.(type) {
	case map[string]any:
		keys, ok := r.order.keys(v)
		if !ok {
			r.enc.unordered = true
		}
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = k
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i := range v {
			out[i] = i
		}
		return out
	}
	return fmt.Errorf("%s (%s) has no keys", jqTypeName(v), jqShort(v))
}

func (r *jqRun) fnFromEntries(v any, _ []any) any {
	arr, ok := v.([]any)
	if !ok {
		return fmt.Errorf("cannot iterate over %s", jqTypeName(v))
	}
	m := map[string]any{}
	var keys []string
	for _, e := range arr {
		em, ok := e.(map[string]any)
		if !ok {
			return fmt.Errorf("cannot index %s with \"key\"", jqTypeName(e))
		}
		var k any
		// jq 1.6's: {(.key // .Key // .name // .Name): (if has("value") then .value else .Value end)}
		for _, name := range []string{"key", "Key", "name", "Name"} {
			if x, ok := em[name]; ok && x != nil && x != false {
				k = x
				break
			}
		}
		var ks string
		switch k := k.(type) {
		case string:
			ks = k
		case nil:
			return fmt.Errorf("cannot use null (null) as object key")
		default:
			return fmt.Errorf("object keys must be strings")
		}
		val, has := em["value"]
		if !has {
			val = em["Value"]
		}
		if _, dup := m[ks]; !dup {
			keys = append(keys, ks)
		}
		m[ks] = val
	}
	r.order.record(m, keys)
	return m
}

// fnCheckIter runs before every .[]: gojq visits an object's values in
// sorted key order, jq 1.6 in insertion order.
func (r *jqRun) fnCheckIter(v any, _ []any) any {
	if m, ok := v.(map[string]any); ok && len(m) > 1 {
		keys, known := r.order.keys(m)
		if !known || !sort.StringsAreSorted(keys) {
			r.enc.unordered = true
		}
	}
	return v
}

// fnValues runs before .[] outside path expressions: an object becomes
// the array of its values in jq 1.6's order, so iteration follows it.
func (r *jqRun) fnValues(v any, _ []any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	keys, known := r.order.keys(m)
	if !known {
		r.enc.unordered = true
	}
	vals := make([]any, len(keys))
	for i, k := range keys {
		vals[i] = m[k]
	}
	return vals
}

func (r *jqRun) fnToJSON(v any, _ []any) any {
	e := &jqEncoder{order: r.order}
	s := string(e.encode(nil, v, 0))
	if e.unordered {
		r.enc.unordered = true
	}
	return s
}

func jqTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "number"
}

func jqShort(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 11 {
		return string(b[:10]) + "..."
	}
	return string(b)
}

// jqPathFuncs take path expressions as arguments.
var jqPathFuncs = map[string]bool{"path": true, "paths": true, "del": true, "pick": true, "leaf_paths": true}

// jqRewrite adapts the parsed query to jq 1.6's key order: every {...}
// with constant keys records its construction order, and every .[]
// either iterates objects in recorded order (in value context) or, inside
// a path expression where values cannot be replaced, checks that gojq's
// sorted order is the same.
func jqRewrite(v reflect.Value, pathCtx bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		switch x := v.Interface().(type) {
		case *gojq.Query:
			if x.Op >= gojq.OpAssign && x.Op <= gojq.OpUpdateAlt {
				jqRewrite(reflect.ValueOf(x.Left), true)
				jqRewrite(reflect.ValueOf(x.Right), pathCtx)
				return
			}
		case *gojq.Func:
			if jqPathFuncs[x.Name] {
				for _, a := range x.Args {
					jqRewrite(reflect.ValueOf(a), true)
				}
				return
			}
		case *gojq.FuncDef:
			if x.Name == "_rung_recurse_chk" {
				return // written with its check already
			}
		case *gojq.Term:
			switch {
			case x.Type == gojq.TermTypeRecurse && pathCtx:
				// .. in a path expression: gojq's order, checked
				x.Type, x.Func = gojq.TermTypeFunc, &gojq.Func{Name: "_rung_recurse_chk"}
			case x.Str != nil && x.Format == "" && len(x.Str.Queries) > 0:
				// "\(v)": format v with our tostring (jq 1.6's numbers and key order)
				for i, q := range x.Str.Queries {
					if q.Term != nil && q.Term.Str != nil {
						continue // a literal part
					}
					toStr := &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: "tostring"}}}
					x.Str.Queries[i] = &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeQuery,
						Query: &gojq.Query{Left: q, Op: gojq.OpPipe, Right: toStr}}}
				}
			case x.Type == gojq.TermTypeFormat && (x.Format == "@json" || x.Format == "@text") && x.Str == nil:
				x.Type, x.Format, x.Func = gojq.TermTypeFunc, "", &gojq.Func{Name: "tojson"}
				if x.Format == "@text" {
					x.Func.Name = "tostring"
				}
			}
		}
		jqRewrite(v.Elem(), pathCtx)
		if t, ok := v.Interface().(*gojq.Term); ok {
			if t.Object != nil {
				jqWrapObject(t)
			}
			jqWrapIter(t, pathCtx)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				jqRewrite(v.Field(i), pathCtx)
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			jqRewrite(v.Index(i), pathCtx)
		}
	}
}

func jqWrapObject(t *gojq.Term) {
	var keys []string
	for _, kv := range t.Object.KeyVals {
		switch {
		case kv.Key != "":
			keys = append(keys, strings.TrimPrefix(kv.Key, "$"))
		case kv.KeyString != nil && len(kv.KeyString.Queries) == 0:
			keys = append(keys, kv.KeyString.Str)
		default:
			return // a computed key: order unknown
		}
	}
	if len(keys) < 2 {
		return
	}
	lit, _ := json.Marshal(keys)
	call, err := gojq.Parse("_rung_order(" + string(lit) + ")")
	if err != nil {
		return
	}
	inner := &gojq.Term{Type: gojq.TermTypeObject, Object: t.Object}
	*t = gojq.Term{
		Type: gojq.TermTypeQuery,
		Query: &gojq.Query{
			Left:  &gojq.Query{Term: inner},
			Op:    gojq.OpPipe,
			Right: call,
		},
		SuffixList: t.SuffixList,
	}
}

// jqWrapIter turns t's first .[] suffix into "| _rung_vals | .[]" (or
// _rung_chk in a path expression).
func jqWrapIter(t *gojq.Term, pathCtx bool) {
	i := slices.IndexFunc(t.SuffixList, func(s *gojq.Suffix) bool { return s.Iter })
	if i < 0 {
		return
	}
	j := i + 1 // a following ? belongs to the iteration
	for j < len(t.SuffixList) && t.SuffixList[j].Optional && t.SuffixList[j].Index == nil && !t.SuffixList[j].Iter {
		j++
	}
	rest := &gojq.Term{Type: gojq.TermTypeIdentity, SuffixList: t.SuffixList[j:]}
	jqWrapIter(rest, pathCtx)
	base := *t
	base.SuffixList = t.SuffixList[:i]
	iter := &gojq.Term{Type: gojq.TermTypeIdentity, SuffixList: t.SuffixList[i:j]}
	hook := "_rung_vals"
	if pathCtx {
		hook = "_rung_chk"
	}
	chk := &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: hook}}
	q := &gojq.Query{Left: &gojq.Query{Term: &base}, Op: gojq.OpPipe, Right: &gojq.Query{
		Left: &gojq.Query{Term: chk}, Op: gojq.OpPipe, Right: &gojq.Query{Term: iter}}}
	if len(rest.SuffixList) > 0 {
		q = &gojq.Query{Left: q, Op: gojq.OpPipe, Right: &gojq.Query{Term: rest}}
	}
	*t = gojq.Term{Type: gojq.TermTypeQuery, Query: q}
}
