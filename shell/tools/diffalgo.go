package tools

import "context"

// This file computes which lines differ the way GNU diff 3.8 does, so
// that hunks come out the same: identical prefix and suffix trimmed,
// "confusing" lines discarded (analyze.c's discard_confusing_lines),
// Myers' O(ND) search for the middle snake (gnulib's diffseq.h), then
// change boundaries shifted (shift_boundaries).

// diffAnalysis holds one comparison. changed0/changed1 have one extra
// slot at each end (index 0 and n+1), always false, as GNU's sentinels.
type diffAnalysis struct {
	eq0, eq1           []int // equivalence class per line (class 0 unused)
	changed0, changed1 []bool
	// compareseq state
	xv, yv       []int
	xreal, yreal []int
	fd, bd       []int
	off          int // index offset of diagonal k in fd/bd
	tooExpensive int
	steps        int
	ctx          context.Context
}

// diffLines compares two line lists already mapped to equivalence
// classes (equal classes mean equal lines). It returns per-line changed
// flags for each side.
//
// Like GNU's find_identical_ends, the identical prefix and suffix are left
// out of the analysis except for horizon lines at each end (diff keeps
// as many as the output context), which bounds where shift_boundaries
// may move a change.
func diffLines(ctx context.Context, eq0, eq1 []int, nclasses int, minimal bool, horizon int) ([]bool, []bool) {
	a := &diffAnalysis{eq0: eq0, eq1: eq1, ctx: ctx}
	n0, n1 := len(eq0), len(eq1)
	a.changed0 = make([]bool, n0+2)
	a.changed1 = make([]bool, n1+2)
	pre := 0
	for pre < n0 && pre < n1 && eq0[pre] == eq1[pre] {
		pre++
	}
	suf := 0
	for suf < n0-pre && suf < n1-pre && eq0[n0-1-suf] == eq1[n1-1-suf] {
		suf++
	}
	pre = max(0, pre-horizon)
	suf = max(0, suf-horizon)
	m0, m1 := eq0[pre:n0-suf], eq1[pre:n1-suf]
	// The changed slices keep one false sentinel on each side.
	c0 := a.changed0[pre : n0-suf+2]
	c1 := a.changed1[pre : n1-suf+2]
	a.discardAndCompare(m0, m1, c0[1:len(c0)-1], c1[1:len(c1)-1], nclasses, minimal)
	shiftBoundaries(c0, c1, m0, m1)
	shiftBoundaries(c1, c0, m1, m0)
	return a.changed0[1 : n0+1], a.changed1[1 : n1+1]
}

// discardAndCompare runs discard_confusing_lines and compareseq over the
// middle part.
func (a *diffAnalysis) discardAndCompare(e0, e1 []int, ch0, ch1 []bool, nclasses int, minimal bool) {
	count0 := make([]int, nclasses+1)
	count1 := make([]int, nclasses+1)
	for _, e := range e0 {
		count0[e]++
	}
	for _, e := range e1 {
		count1[e]++
	}
	d0 := markDiscards(e0, count1)
	d1 := markDiscards(e1, count0)
	refineDiscards(d0)
	refineDiscards(d1)
	collect := func(e []int, d []byte, ch []bool) ([]int, []int) {
		var v, real []int
		for i := range e {
			if minimal || d[i] == 0 {
				v = append(v, e[i])
				real = append(real, i)
			} else {
				ch[i] = true
			}
		}
		return v, real
	}
	a.xv, a.xreal = collect(e0, d0, ch0)
	a.yv, a.yreal = collect(e1, d1, ch1)
	diags := len(a.xv) + len(a.yv) + 3
	a.fd = make([]int, diags)
	a.bd = make([]int, diags)
	a.off = len(a.yv) + 1
	te := 1
	for d := diags; d != 0; d >>= 2 {
		te <<= 1
	}
	a.tooExpensive = max(4096, te)
	a.compareseq(0, len(a.xv), 0, len(a.yv), minimal, ch0, ch1)
}

func markDiscards(e []int, other []int) []byte {
	d := make([]byte, len(e))
	many := 5
	for tem := len(e) / 64; ; {
		tem >>= 2
		if tem <= 0 {
			break
		}
		many *= 2
	}
	for i, c := range e {
		if c == 0 {
			continue
		}
		switch n := other[c]; {
		case n == 0:
			d[i] = 1
		case n > many:
			d[i] = 2
		}
	}
	return d
}

// refineDiscards keeps provisional discards (2) only inside runs of
// discards, as GNU does.
func refineDiscards(d []byte) {
	end := len(d)
	for i := 0; i < end; i++ {
		if d[i] == 2 {
			d[i] = 0
			continue
		}
		if d[i] == 0 {
			continue
		}
		j, provisional := i, 0
		for ; j < end && d[j] != 0; j++ {
			if d[j] == 2 {
				provisional++
			}
		}
		for j > i && d[j-1] == 2 {
			j--
			d[j] = 0
			provisional--
		}
		length := j - i
		if provisional*4 > length {
			for j > i {
				j--
				if d[j] == 2 {
					d[j] = 0
				}
			}
		} else {
			minimum := 1
			for tem := length >> 2; ; {
				tem >>= 2
				if tem <= 0 {
					break
				}
				minimum <<= 1
			}
			minimum++
			consec := 0
			for j = 0; j < length; j++ {
				switch {
				case d[i+j] != 2:
					consec = 0
				default:
					consec++
					if minimum == consec {
						j -= consec
					} else if minimum < consec {
						d[i+j] = 0
					}
				}
			}
			consec = 0
			for j = 0; j < length; j++ {
				if j >= 8 && d[i+j] == 1 {
					break
				}
				if d[i+j] == 2 {
					consec = 0
					d[i+j] = 0
				} else if d[i+j] == 0 {
					consec = 0
				} else {
					consec++
				}
				if consec == 3 {
					break
				}
			}
			i += length - 1
			consec = 0
			for j = 0; j < length; j++ {
				if j >= 8 && d[i-j] == 1 {
					break
				}
				if d[i-j] == 2 {
					consec = 0
					d[i-j] = 0
				} else if d[i-j] == 0 {
					consec = 0
				} else {
					consec++
				}
				if consec == 3 {
					break
				}
			}
		}
	}
}

func (a *diffAnalysis) compareseq(xoff, xlim, yoff, ylim int, minimal bool, ch0, ch1 []bool) {
	xv, yv := a.xv, a.yv
	for xoff < xlim && yoff < ylim && xv[xoff] == yv[yoff] {
		xoff++
		yoff++
	}
	for xoff < xlim && yoff < ylim && xv[xlim-1] == yv[ylim-1] {
		xlim--
		ylim--
	}
	switch {
	case xoff == xlim:
		for ; yoff < ylim; yoff++ {
			ch1[a.yreal[yoff]] = true
		}
	case yoff == ylim:
		for ; xoff < xlim; xoff++ {
			ch0[a.xreal[xoff]] = true
		}
	default:
		xmid, ymid, loMin, hiMin := a.diag(xoff, xlim, yoff, ylim, minimal)
		a.compareseq(xoff, xmid, yoff, ymid, loMin, ch0, ch1)
		a.compareseq(xmid, xlim, ymid, ylim, hiMin, ch0, ch1)
	}
}

// diag finds the midpoint of the shortest edit script (diffseq.h's diag,
// without the speed_large_files heuristic, which diff uses only for -H).
func (a *diffAnalysis) diag(xoff, xlim, yoff, ylim int, minimal bool) (int, int, bool, bool) {
	fd, bd, xv, yv, o := a.fd, a.bd, a.xv, a.yv, a.off
	dmin, dmax := xoff-ylim, xlim-yoff
	fmid, bmid := xoff-yoff, xlim-ylim
	fmin, fmax, bmin, bmax := fmid, fmid, bmid, bmid
	odd := (fmid-bmid)&1 != 0
	fd[o+fmid] = xoff
	bd[o+bmid] = xlim
	const maxInt = int(^uint(0) >> 1)
	for c := 1; ; c++ {
		if fmin > dmin {
			fmin--
			fd[o+fmin-1] = -1
		} else {
			fmin++
		}
		if fmax < dmax {
			fmax++
			fd[o+fmax+1] = -1
		} else {
			fmax--
		}
		for d := fmax; d >= fmin; d -= 2 {
			tlo, thi := fd[o+d-1], fd[o+d+1]
			x0 := tlo + 1
			if tlo < thi {
				x0 = thi
			}
			x, y := x0, x0-d
			for x < xlim && y < ylim && xv[x] == yv[y] {
				x++
				y++
			}
			fd[o+d] = x
			if odd && bmin <= d && d <= bmax && bd[o+d] <= x {
				return x, y, true, true
			}
		}
		if bmin > dmin {
			bmin--
			bd[o+bmin-1] = maxInt
		} else {
			bmin++
		}
		if bmax < dmax {
			bmax++
			bd[o+bmax+1] = maxInt
		} else {
			bmax--
		}
		for d := bmax; d >= bmin; d -= 2 {
			tlo, thi := bd[o+d-1], bd[o+d+1]
			x0 := thi - 1
			if tlo < thi {
				x0 = tlo
			}
			x, y := x0, x0-d
			for xoff < x && yoff < y && xv[x-1] == yv[y-1] {
				x--
				y--
			}
			bd[o+d] = x
			if !odd && fmin <= d && d <= fmax && x <= fd[o+d] {
				return x, y, true, true
			}
		}
		if minimal {
			continue
		}
		if c >= a.tooExpensive {
			return a.giveUp(xoff, xlim, yoff, ylim, fmin, fmax, bmin, bmax)
		}
	}
}

// giveUp is diffseq.h's "too expensive" exit: the best diagonal of each
// search, whichever got further.
func (a *diffAnalysis) giveUp(xoff, xlim, yoff, ylim, fmin, fmax, bmin, bmax int) (int, int, bool, bool) {
	fd, bd, o := a.fd, a.bd, a.off
	fxybest, fxbest := -1, xlim
	for d := fmax; d >= fmin; d -= 2 {
		x := min(fd[o+d], xlim)
		y := x - d
		if ylim < y {
			x, y = ylim+d, ylim
		}
		if fxybest < x+y {
			fxybest, fxbest = x+y, x
		}
	}
	const maxInt = int(^uint(0) >> 1)
	bxybest, bxbest := maxInt, xoff
	for d := bmax; d >= bmin; d -= 2 {
		x := max(xoff, bd[o+d])
		y := x - d
		if y < yoff {
			x, y = yoff+d, yoff
		}
		if x+y < bxybest {
			bxybest, bxbest = x+y, x
		}
	}
	if (xlim+ylim)-bxybest < fxybest-(xoff+yoff) {
		return fxbest, fxybest - fxbest, true, false
	}
	return bxbest, bxybest - bxbest, false, true
}

// shiftBoundaries is GNU's shift_boundaries for one side: it slides runs
// of changes so that they merge and, failing that, end as far down as
// possible, preferring to line up with changes in the other file. ch and
// other carry a false sentinel at index 0 and n+1.
func shiftBoundaries(ch, other []bool, eq, _ []int) {
	iEnd := len(eq)
	c := func(i int) bool { return ch[i+1] }
	set := func(i int, v bool) { ch[i+1] = v }
	oc := func(j int) bool { return other[j+1] }
	i, j := 0, 0
	for {
		for i < iEnd && !c(i) {
			for oc(j) {
				j++
			}
			j++
			i++
		}
		if i == iEnd {
			break
		}
		start := i
		for i++; c(i); i++ {
		}
		for oc(j) {
			j++
		}
		var runlength, corresponding int
		for {
			runlength = i - start
			for start > 0 && eq[start-1] == eq[i-1] {
				start--
				set(start, true)
				i--
				set(i, false)
				for c(start - 1) {
					start--
				}
				j--
				for oc(j) {
					j--
				}
			}
			corresponding = iEnd
			if oc(j - 1) {
				corresponding = i
			}
			for i != iEnd && eq[start] == eq[i] {
				set(start, false)
				start++
				set(i, true)
				i++
				for c(i) {
					i++
				}
				for j++; oc(j); j++ {
					corresponding = i
				}
			}
			if runlength == i-start {
				break
			}
		}
		for corresponding < i {
			start--
			set(start, true)
			i--
			set(i, false)
			j--
			for oc(j) {
				j--
			}
		}
	}
}
