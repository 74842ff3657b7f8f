package tools

import "strings"

// patchApply is the state of applying hunks to one file's lines, in the
// order GNU patch applies them.
type patchApply struct {
	p          *patcher
	file       []string
	noEOL      bool
	out        []string
	outNoEOL   bool
	pos        int // next file line (0-based) not yet copied
	inOffset   int // cumulative offset found by earlier hunks
	lastFrozen int // lines (1-based count) already output
}

// locate is GNU patch's locate_hunk: the 1-based line where h's old text
// matches with fuzz, searching outward from the expected place; 0 when
// it does not match.
func (a *patchApply) locate(h *patchHunk, fuzz int) int {
	patLines := len(h.old)
	inputLines := len(a.file)
	context := max(h.prefix, h.suffix)
	prefixFuzz := fuzz + h.prefix - context
	suffixFuzz := fuzz + h.suffix - context
	firstGuess := h.first() + a.inOffset
	if patLines == 0 {
		if firstGuess < 1 || firstGuess > inputLines+1 {
			return 0
		}
		return firstGuess
	}
	maxPos := inputLines - firstGuess - patLines + 1
	maxNeg := firstGuess - a.lastFrozen - 1
	if firstGuess <= maxNeg {
		maxNeg = firstGuess - 1
	}
	if prefixFuzz < 0 && h.oldStart <= 1 {
		// Only the start of the file can match.
		if suffixFuzz < 0 && (patLines != inputLines || h.prefix < a.lastFrozen) {
			return 0
		}
		offset := 1 - firstGuess
		if a.lastFrozen <= h.prefix && offset <= maxPos && a.match(h, firstGuess+offset, 0, max(suffixFuzz, 0)) {
			a.inOffset += offset
			return firstGuess + offset
		}
		return 0
	} else if prefixFuzz < 0 {
		prefixFuzz = 0
	}
	if suffixFuzz < 0 {
		// Only the end of the file can match.
		offset := firstGuess - (inputLines - patLines + 1)
		if offset <= maxNeg && a.match(h, firstGuess-offset, prefixFuzz, 0) {
			a.inOffset -= offset
			return firstGuess - offset
		}
		return 0
	}
	for offset := 0; offset <= maxPos || offset <= maxNeg; offset++ {
		if offset <= maxPos && a.match(h, firstGuess+offset, prefixFuzz, suffixFuzz) {
			a.inOffset += offset
			return firstGuess + offset
		}
		if offset > 0 && offset <= maxNeg && a.match(h, firstGuess-offset, prefixFuzz, suffixFuzz) {
			a.inOffset -= offset
			return firstGuess - offset
		}
	}
	return 0
}

// match compares h's old lines, less the fuzzed context, at line base.
func (a *patchApply) match(h *patchHunk, base, prefixFuzz, suffixFuzz int) bool {
	if base < 1 {
		return false
	}
	for i := prefixFuzz; i < len(h.old)-suffixFuzz; i++ {
		j := base - 1 + i
		if j < 0 || j >= len(a.file) || a.file[j] != h.old[i] {
			return false
		}
	}
	return true
}

// apply replaces the matched region (keeping the file's own fuzzed
// context lines).
func (a *patchApply) apply(h *patchHunk, where, fuzz int) {
	context := max(h.prefix, h.suffix)
	pf := max(fuzz+h.prefix-context, 0)
	sf := max(fuzz+h.suffix-context, 0)
	start := where - 1
	end := min(start+len(h.old), len(a.file))
	a.out = append(a.out, a.file[a.pos:min(start+pf, len(a.file))]...)
	mid := h.new[min(pf, len(h.new)):max(len(h.new)-sf, min(pf, len(h.new)))]
	a.out = append(a.out, mid...)
	if sf > 0 {
		a.out = append(a.out, a.file[max(end-sf, start):end]...)
	}
	a.pos = end
	a.lastFrozen = end
	if end == len(a.file) && sf == 0 {
		a.outNoEOL = h.newNoEOL
		a.noEOL = false
	}
}

// finish copies the rest of the file and returns the new contents.
func (a *patchApply) finish() []byte {
	if a.pos < len(a.file) {
		a.out = append(a.out, a.file[a.pos:]...)
		a.outNoEOL = a.noEOL
	}
	if len(a.out) == 0 {
		return nil
	}
	s := strings.Join(a.out, "\n")
	if !a.outNoEOL {
		s += "\n"
	}
	return []byte(s)
}
