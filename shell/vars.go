package shell

import (
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
)

// varKind says which of a variable's value fields is in use.
type varKind uint8

const (
	kindString varKind = iota
	kindIndexed
	kindAssoc
)

// variable is one shell variable. A variable that is declared but has no
// value (declare x, local x) has set == false.
type variable struct {
	kind     varKind
	set      bool
	str      string
	arr      array   // indexed array elements (sparse)
	sbuf     *strBuf // room after str for appends; see appendStr
	assoc    map[string]string
	keys     []string // assoc keys in insertion order
	exported bool
	readonly bool
	integer  bool
	lower    bool
	upper    bool
	nameref  bool
	local    bool // created by local/declare inside a function
}

func (v *variable) clone() *variable {
	c := *v
	c.cloneMaps()
	return &c
}

// cloneMaps gives a shallow copy of a variable its own array elements.
func (v *variable) cloneMaps() {
	v.arr = v.arr.clone()
	if v.assoc != nil {
		v.assoc = maps.Clone(v.assoc)
		v.keys = slices.Clone(v.keys)
	}
}

// values returns the element values in order (a string is one element).
func (v *variable) values() []string {
	switch v.kind {
	case kindIndexed:
		if v.arr.len() == 0 {
			return nil
		}
		return slices.Clone(v.arr.vals)
	case kindAssoc:
		out := make([]string, 0, len(v.keys))
		for _, k := range assocOrder(v.keys) {
			out = append(out, v.assoc[k])
		}
		return out
	}
	if !v.set {
		return nil
	}
	return []string{v.str}
}

// keyList returns ${!a[@]}.
func (v *variable) keyList() []string {
	switch v.kind {
	case kindIndexed:
		var out []string
		for _, i := range v.arr.keys {
			out = append(out, strconv.Itoa(i))
		}
		return out
	case kindAssoc:
		return slices.Clone(assocOrder(v.keys))
	}
	if !v.set {
		return nil
	}
	return []string{"0"}
}

func (v *variable) setAssoc(k, val string) {
	if v.assoc == nil {
		v.assoc = map[string]string{}
	}
	if _, ok := v.assoc[k]; !ok {
		v.keys = append(v.keys, k)
	}
	v.assoc[k] = val
}

func (v *variable) unsetAssoc(k string) {
	if _, ok := v.assoc[k]; !ok {
		return
	}
	delete(v.assoc, k)
	v.keys = slices.DeleteFunc(v.keys, func(s string) bool { return s == k })
}

// scalar is the value of $v: element 0 of an array.
func (v *variable) scalar() (string, bool) {
	switch v.kind {
	case kindIndexed:
		return v.arr.get(0)
	case kindAssoc:
		s, ok := v.assoc["0"]
		return s, ok
	}
	return v.str, v.set
}

func (v *variable) count() int {
	switch v.kind {
	case kindIndexed:
		return v.arr.len()
	case kindAssoc:
		return len(v.assoc)
	}
	if v.set {
		return 1
	}
	return 0
}

// maxIndex is the largest index of an indexed array, or -1.
func (v *variable) maxIndex() int { return v.arr.maxIndex() }

// toIndexed turns a string variable into an indexed array whose element 0
// is its value, if set.
func (v *variable) toIndexed() {
	v.kind = kindIndexed
	v.arr = array{}
	if v.set {
		v.arr.set(0, v.str)
	}
	v.str = ""
}

// scope is one level of dynamic scoping: the globals, or one function call.
//
// A subshell shares its parent's variables until it changes them: copyState
// gives the copy its own scope values whose vars are the parent's map, and
// marks both sides shared. A shared map and the variables in it are never
// changed again by anyone; a runner that wants to change a shared scope, or
// hand out one of its variables, first takes a deep copy (mine). Code that
// only reads may use vars directly. Each scope value belongs to one runner.
//
// The sharers are counted: a subshell that has finished gives its share
// back (release), and a runner left as the only sharer takes the map back
// without copying it. So a loop running a command substitution or a
// pipeline and then assigning does not copy every variable (and every
// array) on each pass, which made a+=("$(cmd)") quadratic.
type scope struct {
	vars map[string]*variable
	temp bool // prefix assignments of one command (A=1 cmd)
	// inherited is what vars held when mine copied them from a shared
	// map: a copied runner counts only its growth (see memCheck).
	inherited int64
	// frozen is set while vars is shared with another runner's scope, and
	// so read only. Every scope sharing the map shares it.
	frozen *frozenVars
}

// frozenVars holds what has been derived from a shared, read-only vars
// map, so that the runners sharing it derive it once. Safe for concurrent
// use.
type frozenVars struct {
	env atomic.Pointer[[]string] // environOf(vars), once computed
	// refs counts the scope values (and the Shell's base) that share the
	// map and may still read it.
	refs atomic.Int32
}

// share marks s as shared; the caller then hands its vars to another scope
// value, made by s.lend.
func (s *scope) share() {
	if s.frozen == nil {
		s.frozen = &frozenVars{}
		s.frozen.refs.Store(1)
	}
}

// lend returns a new scope value sharing s's variables (s must be shared).
func (s *scope) lend() scope {
	s.frozen.refs.Add(1)
	return scope{vars: s.vars, temp: s.temp, frozen: s.frozen, inherited: s.inherited}
}

// release gives back s's share of a shared map; s is not used again.
func (s *scope) release() {
	if s.frozen != nil {
		s.frozen.refs.Add(-1)
		s.frozen = nil
	}
}

// mine returns the scope's variables for changing, first copying them if
// they are shared with another runner.
func (s *scope) mine() map[string]*variable {
	if s.frozen == nil {
		return s.vars
	}
	if s.frozen.refs.Load() == 1 {
		// Every other sharer has finished: the map is s's alone again.
		// (No one can start sharing it meanwhile: only s's own runner
		// lends it.)
		s.frozen = nil
		return s.vars
	}
	s.frozen.refs.Add(-1)
	vars := make(map[string]*variable, len(s.vars))
	// The copies are carved from one slice: one allocation per scope
	// instead of one per variable.
	pool := make([]variable, 0, len(s.vars))
	var held int64
	for k, v := range s.vars {
		pool = append(pool, *v)
		cv := &pool[len(pool)-1]
		cv.cloneMaps()
		vars[k] = cv
		held += varBytes(k, cv)
	}
	s.vars, s.frozen, s.inherited = vars, nil, held
	return vars
}

// lookupVar finds name from the innermost scope outwards. The variable
// returned may be changed: a shared scope holding it is copied first.
func (r *runner) lookupVar(name string) *variable {
	for i := len(r.scopes) - 1; i >= 0; i-- {
		s := r.scopes[i]
		if v, ok := s.vars[name]; ok {
			if s.frozen != nil {
				v = s.mine()[name]
			}
			return v
		}
	}
	return nil
}

// peekVar is lookupVar for reading only: the variable returned must not
// be changed, and it may be shared with other runners.
func (r *runner) peekVar(name string) *variable {
	for i := len(r.scopes) - 1; i >= 0; i-- {
		if v, ok := r.scopes[i].vars[name]; ok {
			return v
		}
	}
	return nil
}

// resolveRef follows namerefs (at most 10 levels, as bash warns past that).
func (r *runner) resolveRef(name string) string {
	for range 10 {
		v := r.peekVar(name)
		if v == nil || !v.nameref || !v.set {
			return name
		}
		name = v.str
	}
	return name
}

// getVar returns the variable for name after nameref resolution, or nil.
func (r *runner) getVar(name string) *variable {
	if v := r.specialVar(name); v != nil {
		return v
	}
	return r.lookupVar(r.resolveRef(name))
}

// readVar is getVar for reading only (see peekVar); special reports
// whether the variable is one computed on each read ($RANDOM, FUNCNAME),
// which must not be read twice.
func (r *runner) readVar(name string) (v *variable, special bool) {
	if v := r.specialVar(name); v != nil {
		return v, true
	}
	return r.peekVar(r.resolveRef(name)), false
}

// varValue returns $name.
func (r *runner) varValue(name string) (string, bool) {
	v := r.specialVar(name)
	if v == nil {
		v = r.peekVar(r.resolveRef(name))
	}
	if v == nil {
		return "", false
	}
	return v.scalar()
}

// ensureVar returns the variable name may be assigned through, creating
// a global when none exists.
func (r *runner) ensureVar(name string) *variable {
	name = r.resolveRef(name)
	if v := r.lookupVar(name); v != nil {
		return v
	}
	v := &variable{}
	if r.allexport {
		v.exported = true
	}
	r.scopes[0].mine()[name] = v
	return v
}

// readonlyErr reports an assignment to a readonly variable.
type readonlyErr struct{ name string }

func (e readonlyErr) Error() string { return e.name + ": readonly variable" }

// transform applies the integer/case attributes to a value being assigned.
func (r *runner) transform(v *variable, name, val string, appendTo string, appending bool) string {
	if v.integer {
		n := r.arithFatal(val)
		if appending {
			n += r.arithFatal(appendTo)
		}
		return strconv.FormatInt(n, 10)
	}
	if appending {
		val = appendTo + val
	}
	switch {
	case v.lower:
		val = strings.ToLower(val)
	case v.upper:
		val = strings.ToUpper(val)
	}
	return val
}

// setVar assigns a scalar to name (element 0 of an array).
func (r *runner) setVar(name, val string) error {
	return r.assign(name, nil, val, false)
}

// assign sets name, or name[index] when index is non-nil, optionally
// appending. It checks readonly and applies attributes.
func (r *runner) assign(name string, index *string, val string, appending bool) error {
	if r.isSpecialAssign(name, val) {
		return nil
	}
	v := r.ensureVar(name)
	if v.readonly {
		return readonlyErr{name}
	}
	r.checkString(val)
	if index == nil && v.kind == kindString {
		if appending && !v.integer && !v.lower && !v.upper {
			if !v.set {
				v.str = ""
			}
			if int64(len(v.str)+len(val)) > r.sh.limits.StringBytes {
				r.sh.breach("string_bytes", r.sh.limits.StringBytes)
				panic(fatal{})
			}
			r.grow(int64(len(val)))
			v.str, v.set = v.appendStr(val), true
			return nil
		}
		val = r.transform(v, name, val, v.str, appending)
		r.grow(int64(len(val) - len(v.str)))
		v.str, v.set, v.sbuf = val, true, nil
		return nil
	}
	if index == nil {
		zero := "0"
		index = &zero
	}
	switch v.kind {
	case kindAssoc:
		old, ok := v.assoc[*index]
		val = r.transform(v, name, val, old, appending)
		r.grow(int64(len(val) - len(old)))
		if !ok {
			r.grow(int64(2*len(*index)) + 64)
		}
		v.setAssoc(*index, val)
	default:
		if v.kind == kindString {
			v.toIndexed()
		}
		i, ok := r.arrayIndex(v, *index)
		if !ok {
			r.fatalf(1, "%s[%s]: bad array subscript", name, *index)
		}
		old, ok := v.arr.get(i)
		val = r.transform(v, name, val, old, appending)
		r.grow(int64(len(val) - len(old)))
		if !ok {
			r.grow(24)
		}
		v.arr.set(i, val)
		r.checkArray(v.arr.len())
	}
	v.set = true
	return nil
}

// arrayIndex evaluates an indexed-array subscript; negative indices count
// from the end. It reports false for one before the first element (a
// bad array subscript, which each caller reports as bash does).
func (r *runner) arrayIndex(v *variable, sub string) (int, bool) {
	i := int(r.arithExpr(sub))
	if i < 0 {
		i += v.maxIndex() + 1
	}
	return i, i >= 0
}

// unsetVar removes name from the innermost scope that has it.
func (r *runner) unsetVar(name string) error {
	name = r.resolveRef(name)
	for i := len(r.scopes) - 1; i >= 0; i-- {
		if v, ok := r.scopes[i].vars[name]; ok {
			if v.readonly {
				return readonlyErr{name}
			}
			vars := r.scopes[i].mine()
			if i > 0 && v.local {
				// bash: unsetting a local leaves it unset in that scope.
				vars[name] = &variable{local: true}
				return nil
			}
			delete(vars, name)
			return nil
		}
	}
	return nil
}

// environ returns the exported variables as NAME=value, sorted.
func (r *runner) environ() []string {
	if len(r.scopes) == 1 {
		s := r.scopes[0]
		if s.frozen == nil {
			return environOf(s.vars)
		}
		// Every stage of a pipeline starts with its parent's variables:
		// they build the environment once between them. The slice is
		// clipped so that a caller appending to it never writes into it.
		if p := s.frozen.env.Load(); p != nil {
			return *p
		}
		env := slices.Clip(environOf(s.vars))
		s.frozen.env.Store(&env)
		return env
	}
	// A function is running: an inner scope's name shadows an outer one.
	seen := map[string]bool{}
	n := 0
	for _, s := range r.scopes {
		n = max(n, len(s.vars))
	}
	out := make([]string, 0, n)
	for i := len(r.scopes) - 1; i >= 0; i-- {
		for k, v := range r.scopes[i].vars {
			if seen[k] {
				continue
			}
			seen[k] = true
			if v.exported && v.set && v.kind == kindString {
				out = append(out, k+"="+v.str)
			}
		}
	}
	sort.Strings(out)
	return out
}

// environOf is environ for a single scope, where no name is shadowed. The
// strings share one buffer: two allocations for the whole environment.
func environOf(vars map[string]*variable) []string {
	size, n := 0, 0
	for k, v := range vars {
		if v.exported && v.set && v.kind == kindString {
			size += len(k) + 1 + len(v.str)
			n++
		}
	}
	out := make([]string, 0, n)
	var b strings.Builder
	b.Grow(size)
	for k, v := range vars {
		if v.exported && v.set && v.kind == kindString {
			// The builder never grows past the capacity reserved above,
			// so the bytes of each string taken here never move or
			// change: later writes only go after them.
			start := b.Len()
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(v.str)
			out = append(out, b.String()[start:])
		}
	}
	sort.Strings(out)
	return out
}

// validName reports whether s is a shell variable name.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}
