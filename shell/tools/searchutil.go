package tools

import (
	"unicode"
	"unicode/utf8"
)

// srchFnmatch reports whether name matches the shell glob pat the way
// srchFnmatch(3) does without flags: "*" and "?" match any character,
// including "/" and a leading ".", "[...]" is a bracket expression ("!" or
// "^" negates, [:class:] works) and a backslash quotes the next character.
func srchFnmatch(pat, name string) bool {
	return srchFnmatchFold(pat, name, false)
}

// srchFnmatchFold is srchFnmatch, ignoring case when fold is set.
func srchFnmatchFold(pat, name string, fold bool) bool {
	// Iterative matcher with one backtrack point for the last "*".
	px, nx := 0, 0
	starPx, starNx := -1, -1
	for px < len(pat) || nx < len(name) {
		if px < len(pat) {
			switch pat[px] {
			case '*':
				starPx, starNx = px, nx
				px++
				continue
			case '?':
				if nx < len(name) {
					_, w := utf8.DecodeRuneInString(name[nx:])
					px++
					nx += w
					continue
				}
			case '[':
				if nx < len(name) {
					r, w := utf8.DecodeRuneInString(name[nx:])
					if ok, l := srchGlobClass(pat[px:], r, fold); l > 0 {
						if ok {
							px += l
							nx += w
							continue
						}
						break
					}
					// An unterminated "[" is an ordinary character.
					if r == '[' {
						px++
						nx++
						continue
					}
				}
			default:
				if pat[px] == '\\' && px+1 < len(pat) {
					px++
				}
				pr, pw := utf8.DecodeRuneInString(pat[px:])
				if nx < len(name) {
					r, w := utf8.DecodeRuneInString(name[nx:])
					if r == pr || fold && reFoldEq(r, pr) {
						px += pw
						nx += w
						continue
					}
				}
			}
		}
		if starPx >= 0 && starNx < len(name) {
			_, w := utf8.DecodeRuneInString(name[starNx:])
			starNx += w
			px, nx = starPx+1, starNx
			continue
		}
		return false
	}
	return true
}

// srchGlobClass matches r against the bracket expression at the start of p.
// It returns the expression's length, 0 when it is not terminated.
func srchGlobClass(p string, r rune, fold bool) (bool, int) {
	i := 1
	neg := false
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		neg = true
		i++
	}
	matched := false
	first := true
	for {
		if i >= len(p) {
			return false, 0
		}
		if p[i] == ']' && !first {
			i++
			break
		}
		first = false
		if p[i] == '[' && i+1 < len(p) && p[i+1] == ':' {
			end := srchIndexFrom(p, ":]", i+2)
			if end >= 0 {
				if reClassHas(p[i+2:end], r) {
					matched = true
				}
				i = end + 2
				continue
			}
		}
		if p[i] == '\\' && i+1 < len(p) {
			i++
		}
		lo, w := utf8.DecodeRuneInString(p[i:])
		i += w
		hi := lo
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			i++
			if p[i] == '\\' && i+1 < len(p) {
				i++
			}
			hi, w = utf8.DecodeRuneInString(p[i:])
			i += w
		}
		if r >= lo && r <= hi {
			matched = true
		} else if fold {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				if f >= lo && f <= hi {
					matched = true
				}
			}
		}
	}
	return matched != neg, i
}

func srchIndexFrom(s, sub string, from int) int {
	for i := from; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
