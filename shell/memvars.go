package shell

// Variables are counted against the exec's memory budget by counting them
// again from time to time, rather than by adjusting a total on every change
// (which every path that changes a variable, unset, local and subshell
// copies would have to get exactly right, forever). Assignments add an
// estimate of their net growth to runner.grown, one addition each; when it
// passes runner.recountAt, the next command walks the runner's variables
// and puts the true figure in the budget. The threshold is at least 1 MiB
// and half of what was counted last, and never more than the room left,
// so the walks cost O(1) per byte assigned and a breach is seen by the
// command after the one that made it.
//
// The exec's main runner counts every variable it can see. A copy (a
// pipeline stage, a command substitution, a job) counts only the scopes it
// took its own copy of, less what they held when it copied them: the rest
// is its parent's, counted there. Its count leaves the budget when it ends
// (release).

// minRecount is the least growth that triggers a count.
const minRecount = 1 << 20

// varOverhead approximates the bytes a variable costs besides its value:
// the variable itself and its map entry.
const varOverhead = 160

// varBytes is what one variable holds, name included.
func varBytes(name string, v *variable) int64 {
	n := int64(len(name)) + varOverhead + v.strBytes()
	switch v.kind {
	case kindIndexed:
		n += v.arr.bytes()
	case kindAssoc:
		for k, s := range v.assoc {
			n += int64(2*len(k)+len(s)) + 64 // the map entry and the key in keys
		}
	}
	return n
}

// scopeBytes is what a scope's variables hold.
func scopeBytes(vars map[string]*variable) int64 {
	var n int64
	for k, v := range vars {
		n += varBytes(k, v)
	}
	return n
}

// grow notes that an assignment grew the variables by about n bytes (n
// may be negative).
func (r *runner) grow(n int64) { r.grown += n }

// memCheck counts the variables again when they have grown enough since
// the last count; it reports false when they do not fit the budget, whose
// limit then ends the exec.
func (r *runner) memCheck() bool {
	if r.grown < r.recountAt {
		return true
	}
	var total int64
	for _, s := range r.scopes {
		switch {
		case r.copied && s.frozen != nil && s.frozen.refs.Load() > 1:
			// Still the parent's: counted there. (A map lent only to
			// runners that have finished is this runner's again.)
		case r.copied:
			total += max(0, scopeBytes(s.vars)-s.inherited)
		default:
			total += scopeBytes(s.vars)
		}
	}
	r.grown = 0
	delta := total - r.counted
	ok := r.sh.mem.take(delta, true)
	if ok {
		r.counted = total
	}
	room := r.sh.mem.max - r.sh.mem.used.Load()
	r.recountAt = max(1, min(max(minRecount, r.counted/2), room))
	return ok
}

// uncount takes a finished copy's count out of the budget.
func (r *runner) uncount() {
	r.sh.mem.give(r.counted)
	r.counted = 0
}
