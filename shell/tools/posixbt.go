package tools

import (
	"unicode"
	"unicode/utf8"
)

// reBTBudget bounds the work of one backtracking search (steps of the
// matcher). Past it the search gives up and reports no match: patterns
// with back-references are exponential in the worst case, and a tool
// must never hang the exec.
const reBTBudget = 20_000_000

// reBTProg matches a parsed pattern by exhaustive backtracking, keeping the
// longest match at the leftmost position (POSIX semantics). It is used
// only for what RE2 cannot do: back-references and word anchors in
// positions RE2's \b cannot stand for.
type reBTProg struct {
	root    *reASTNode
	ngroups int
	fl      reMatchFlags
}

type reBTState struct {
	b       []byte
	fl      reMatchFlags
	caps    []int
	best    []int
	steps   int
	aborted bool
}

// find returns the leftmost-longest match starting at or after from.
func (p *reBTProg) find(b []byte, from int) []int {
	st := &reBTState{b: b, fl: p.fl, caps: make([]int, 2*p.ngroups+2)}
	for s := from; s <= len(b); {
		for i := range st.caps {
			st.caps[i] = -1
		}
		start := s
		st.m(p.root, s, func(j int) bool {
			if st.best == nil || j > st.best[1] {
				st.caps[0], st.caps[1] = start, j
				st.best = append(st.best[:0], st.caps...)
			}
			return j == len(b)
		})
		if st.best != nil || st.aborted {
			return st.best
		}
		if s >= len(b) {
			break
		}
		_, w := utf8.DecodeRune(b[s:])
		s += w
	}
	return nil
}

func (st *reBTState) wordAt(i int) bool {
	if i < 0 || i >= len(st.b) {
		return false
	}
	r, _ := utf8.DecodeRune(st.b[i:])
	return reClassHas("w", r)
}

func (st *reBTState) wordBefore(i int) bool {
	if i <= 0 {
		return false
	}
	r, _ := utf8.DecodeLastRune(st.b[:i])
	return reClassHas("w", r)
}

func reFoldEq(a, b rune) bool {
	if a == b {
		return true
	}
	for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
		if f == b {
			return true
		}
	}
	return false
}

// m matches n at i and calls k with each end position; it returns true to
// stop the whole search.
func (st *reBTState) m(n *reASTNode, i int, k func(int) bool) bool {
	st.steps++
	if st.steps > reBTBudget {
		st.aborted = true
		return true
	}
	b := st.b
	switch n.op {
	case rxLit, rxAny, rxClass:
		if i >= len(b) {
			return false
		}
		r, w := utf8.DecodeRune(b[i:])
		switch n.op {
		case rxLit:
			if r != n.r && !(st.fl.icase && reFoldEq(r, n.r)) {
				return false
			}
		case rxAny:
			if r == '\n' && !st.fl.dotNL || r == utf8.RuneError && w == 1 {
				return false
			}
		case rxClass:
			if r == '\n' && st.fl.noNL || !n.cls.has(r, st.fl.icase) {
				return false
			}
		}
		return k(i + w)
	case rxBol:
		if i == 0 || st.fl.multiline && b[i-1] == '\n' {
			return k(i)
		}
		return false
	case rxEol:
		if i == len(b) || st.fl.multiline && b[i] == '\n' {
			return k(i)
		}
		return false
	case rxBufStart:
		return i == 0 && k(i)
	case rxBufEnd:
		return i == len(b) && k(i)
	case rxWordB:
		return st.wordBefore(i) != st.wordAt(i) && k(i)
	case rxNotWordB:
		return st.wordBefore(i) == st.wordAt(i) && k(i)
	case rxWordStart:
		return !st.wordBefore(i) && st.wordAt(i) && k(i)
	case rxWordEnd:
		return st.wordBefore(i) && !st.wordAt(i) && k(i)
	case rxEmpty:
		return k(i)
	case rxGroup:
		g := 2 * n.n
		return st.m(n.subs[0], i, func(j int) bool {
			os, oe := st.caps[g], st.caps[g+1]
			st.caps[g], st.caps[g+1] = i, j
			stop := k(j)
			st.caps[g], st.caps[g+1] = os, oe
			return stop
		})
	case rxConcat:
		return st.seq(n.subs, i, k)
	case rxAlt:
		for _, s := range n.subs {
			if st.m(s, i, k) {
				return true
			}
		}
		return false
	case rxRepeat:
		return st.rep(n, 0, i, k)
	case rxBackref:
		s, e := st.caps[2*n.n], st.caps[2*n.n+1]
		if s < 0 {
			return false
		}
		ref := b[s:e]
		if i+len(ref) > len(b) {
			return false
		}
		if st.fl.icase {
			if !reEqualFoldBytes(ref, b[i:i+len(ref)]) {
				return false
			}
		} else if string(ref) != string(b[i:i+len(ref)]) {
			return false
		}
		return k(i + len(ref))
	}
	return false
}

func (st *reBTState) seq(subs []*reASTNode, i int, k func(int) bool) bool {
	if len(subs) == 0 {
		return k(i)
	}
	return st.m(subs[0], i, func(j int) bool { return st.seq(subs[1:], j, k) })
}

func (st *reBTState) rep(n *reASTNode, count, i int, k func(int) bool) bool {
	if n.max < 0 || count < n.max {
		stop := st.m(n.subs[0], i, func(j int) bool {
			if j == i && count >= n.min {
				return false // an empty iteration adds nothing
			}
			return st.rep(n, count+1, j, k)
		})
		if stop {
			return true
		}
	}
	if count >= n.min {
		return k(i)
	}
	return false
}

func reEqualFoldBytes(a, b []byte) bool {
	for len(a) > 0 && len(b) > 0 {
		ra, wa := utf8.DecodeRune(a)
		rb, wb := utf8.DecodeRune(b)
		if !reFoldEq(ra, rb) {
			return false
		}
		a, b = a[wa:], b[wb:]
	}
	return len(a) == len(b)
}
