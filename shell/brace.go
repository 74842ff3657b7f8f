package shell

import (
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// braceExpand returns the words that brace expansion makes of w, in
// order; w itself when it has no brace expression.
func braceExpand(w *syntax.Word) []*syntax.Word {
	has := false
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "{") {
			has = true
			break
		}
	}
	if !has {
		return []*syntax.Word{w}
	}
	cp := &syntax.Word{Parts: slices.Clone(w.Parts)}
	if !syntax.SplitBraces(cp) {
		return []*syntax.Word{w}
	}
	var out []*syntax.Word
	for _, parts := range braceParts(cp.Parts) {
		out = append(out, &syntax.Word{Parts: mergeLits(parts)})
	}
	return out
}

// mergeLits joins adjacent literals, so "a" "~" stays one literal.
func mergeLits(parts []syntax.WordPart) []syntax.WordPart {
	var out []syntax.WordPart
	for _, p := range parts {
		if l, ok := p.(*syntax.Lit); ok && len(out) > 0 {
			if prev, ok := out[len(out)-1].(*syntax.Lit); ok {
				out[len(out)-1] = &syntax.Lit{Value: prev.Value + l.Value}
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

func braceParts(parts []syntax.WordPart) [][]syntax.WordPart {
	results := [][]syntax.WordPart{{}}
	for _, p := range parts {
		be, ok := p.(*syntax.BraceExp)
		if !ok {
			for i := range results {
				results[i] = append(results[i], p)
			}
			continue
		}
		var alts [][]syntax.WordPart
		if be.Sequence {
			seq, ok := braceSeq(be)
			if !ok {
				alts = [][]syntax.WordPart{{&syntax.Lit{Value: braceString(be)}}}
			}
			for _, s := range seq {
				if s == "\\" {
					// {Z..a}: quote removal takes the lone backslash,
					// leaving an empty word that is kept.
					alts = append(alts, []syntax.WordPart{&syntax.SglQuoted{}})
					continue
				}
				alts = append(alts, []syntax.WordPart{&syntax.Lit{Value: s}})
			}
		} else {
			for _, el := range be.Elems {
				alts = append(alts, braceParts(el.Parts)...)
			}
		}
		var next [][]syntax.WordPart
		for _, res := range results {
			for _, alt := range alts {
				n := make([]syntax.WordPart, 0, len(res)+len(alt))
				n = append(n, res...)
				n = append(n, alt...)
				next = append(next, n)
			}
		}
		results = next
	}
	return results
}

// braceString prints a brace expression back as literal text.
func braceString(be *syntax.BraceExp) string {
	var parts []string
	for _, el := range be.Elems {
		parts = append(parts, el.Lit())
	}
	if be.Sequence {
		return "{" + strings.Join(parts, "..") + "}"
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// braceSeq expands {x..y[..incr]}.
func braceSeq(be *syntax.BraceExp) ([]string, bool) {
	if len(be.Elems) < 2 {
		return nil, false
	}
	from, to := be.Elems[0].Lit(), be.Elems[1].Lit()
	incr := int64(1)
	if len(be.Elems) > 2 {
		n, err := strconv.ParseInt(be.Elems[2].Lit(), 10, 64)
		if err != nil {
			return nil, false
		}
		incr = n
	}
	if incr < 0 {
		incr = -incr
	}
	if incr == 0 {
		incr = 1
	}
	a, errA := strconv.ParseInt(from, 10, 64)
	b, errB := strconv.ParseInt(to, 10, 64)
	if errA == nil && errB == nil {
		width := 0
		if pad(from) || pad(to) {
			width = max(len(from), len(to))
		}
		var out []string
		for i := a; ; {
			s := strconv.FormatInt(i, 10)
			if width > 0 {
				neg := strings.HasPrefix(s, "-")
				s = strings.TrimPrefix(s, "-")
				w := width
				if neg {
					w--
				}
				for len(s) < w {
					s = "0" + s
				}
				if neg {
					s = "-" + s
				}
			}
			out = append(out, s)
			if len(out) > 1<<20 {
				return nil, false
			}
			if a <= b {
				i += incr
				if i > b {
					break
				}
			} else {
				i -= incr
				if i < b {
					break
				}
			}
		}
		return out, true
	}
	if len(from) == 1 && len(to) == 1 && isAlpha(from[0]) && isAlpha(to[0]) {
		var out []string
		x, y := int64(from[0]), int64(to[0])
		for i := x; ; {
			out = append(out, string(rune(i)))
			if x <= y {
				i += incr
				if i > y {
					break
				}
			} else {
				i -= incr
				if i < y {
					break
				}
			}
		}
		return out, true
	}
	return nil, false
}

func pad(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return len(s) > 1 && s[0] == '0'
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
