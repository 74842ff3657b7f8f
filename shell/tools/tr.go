package tools

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"rung.dev/rung/shell"
)

// tr: GNU tr 9.1 over bytes (-c -C -d -s -t; ranges, classes, [c*n],
// [=c=], backslash escapes).

var trOpts = NewOptions("c,C,complement", "d,delete", "s,squeeze-repeats", "t,truncate-set1")

type trItem struct {
	b      byte
	repeat int    // 1 normally; n for [c*n]; -1 for [c*]
	class  string // "upper" or "lower" when the byte came from that class
}

var trClasses = map[string]func(b byte) bool{
	"alnum":  func(b byte) bool { return isAlpha(b) || isDigit(b) },
	"alpha":  isAlpha,
	"blank":  func(b byte) bool { return b == ' ' || b == '\t' },
	"cntrl":  func(b byte) bool { return b < 0x20 || b == 0x7f },
	"digit":  isDigit,
	"graph":  func(b byte) bool { return b > 0x20 && b < 0x7f },
	"lower":  func(b byte) bool { return b >= 'a' && b <= 'z' },
	"print":  func(b byte) bool { return b >= 0x20 && b < 0x7f },
	"punct":  func(b byte) bool { return b > 0x20 && b < 0x7f && !isAlpha(b) && !isDigit(b) },
	"space":  func(b byte) bool { return b == ' ' || b >= '\t' && b <= '\r' },
	"upper":  func(b byte) bool { return b >= 'A' && b <= 'Z' },
	"xdigit": func(b byte) bool { return isDigit(b) || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' },
}

// trUnescape decodes one possibly escaped byte at s[i]; it returns the
// byte, the next index and whether it was escaped.
func trUnescape(s string, i int) (byte, int, bool) {
	if s[i] != '\\' || i+1 >= len(s) {
		return s[i], i + 1, false
	}
	c := s[i+1]
	switch c {
	case 'a':
		return 7, i + 2, true
	case 'b':
		return 8, i + 2, true
	case 'f':
		return 12, i + 2, true
	case 'n':
		return '\n', i + 2, true
	case 'r':
		return '\r', i + 2, true
	case 't':
		return '\t', i + 2, true
	case 'v':
		return 11, i + 2, true
	}
	if c >= '0' && c <= '7' {
		v, j := 0, i+1
		for j < len(s) && j < i+4 && s[j] >= '0' && s[j] <= '7' {
			nv := v*8 + int(s[j]-'0')
			if nv > 255 {
				break
			}
			v = nv
			j++
		}
		return byte(v), j, true
	}
	return c, i + 2, true
}

// parseTrSet expands a SET operand; set2 allows [c*n] items.
func parseTrSet(s string, set2 bool) ([]trItem, error) {
	var items []trItem
	for i := 0; i < len(s); {
		if s[i] == '[' && i+1 < len(s) {
			if (s[i+1] == ':' || s[i+1] == '=') && i+2 < len(s) {
				end := -1
				for j := i + 2; j+1 < len(s); j++ {
					if s[j] == s[i+1] && s[j+1] == ']' {
						end = j
						break
					}
				}
				if end >= 0 {
					name := s[i+2 : end]
					if s[i+1] == ':' {
						fn, ok := trClasses[name]
						if !ok {
							return nil, fmt.Errorf("invalid character class %s", txQuote(name))
						}
						for b := 0; b < 256; b++ {
							if fn(byte(b)) {
								items = append(items, trItem{b: byte(b), repeat: 1, class: name})
							}
						}
						i = end + 2
						continue
					}
					if len(name) == 1 {
						items = append(items, trItem{b: name[0], repeat: 1, class: "="})
						i = end + 2
						continue
					}
					if name == "" {
						return nil, fmt.Errorf("missing equivalence class character '[==]'")
					}
					return nil, fmt.Errorf("%s: equivalence class operand must be a single character", name)
				}
			}
			// [c*n] or [c*]
			b, j, _ := trUnescape(s, i+1)
			if j < len(s) && s[j] == '*' {
				k := j + 1
				for k < len(s) && s[k] != ']' {
					k++
				}
				if k < len(s) {
					num := s[j+1 : k]
					if !set2 && num == "" {
						return nil, fmt.Errorf("the [c*] repeat construct may not appear in string1")
					}
					n := -1
					if num != "" {
						base := 10
						if num[0] == '0' {
							base = 8
						}
						v, err := strconv.ParseUint(num, base, 31)
						if err != nil {
							return nil, fmt.Errorf("invalid repeat count %s in [c*n] construct", txQuote(num))
						}
						n = int(v)
						if n == 0 {
							n = -1
						}
					}
					items = append(items, trItem{b: b, repeat: n})
					i = k + 1
					continue
				}
			}
		}
		b, j, _ := trUnescape(s, i)
		if j < len(s) && s[j] == '-' && j+1 < len(s) {
			hi, k, _ := trUnescape(s, j+1)
			if hi < b {
				return nil, fmt.Errorf("range-endpoints of %s are in reverse collating sequence order", txQuote(s[i:k]))
			}
			for x := int(b); x <= int(hi); x++ {
				items = append(items, trItem{b: byte(x), repeat: 1})
			}
			i = k
			continue
		}
		items = append(items, trItem{b: b, repeat: 1})
		i = j
	}
	return items, nil
}

func runTr(ctx context.Context, c *shell.Call) int {
	opts, sets, st, ok := txParse(c, trOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	var comp, del, squeeze, trunc bool
	for _, o := range opts {
		switch o.Key {
		case "complement":
			comp = true
		case "delete":
			del = true
		case "squeeze-repeats":
			squeeze = true
		case "truncate-set1":
			trunc = true
		}
	}
	translate := !del && len(sets) > 1
	switch {
	case len(sets) == 0:
		return txUsageMsg(c, "missing operand")
	case !del && !squeeze && len(sets) == 1:
		return txUsageMsg(c, fmt.Sprintf("missing operand after %s\nTwo strings must be given when translating.", locQuote(sets[0])))
	case del && squeeze && len(sets) == 1:
		return txUsageMsg(c, fmt.Sprintf("missing operand after %s\nTwo strings must be given when deleting and squeezing.", locQuote(sets[0])))
	case len(sets) > 2, del && !squeeze && len(sets) > 1:
		msg := "extra operand " + locQuote(sets[len(sets)-1])
		if del && !squeeze && len(sets) == 2 {
			msg += "\nOnly one string may be given when deleting without squeezing repeats."
		}
		return txUsageMsg(c, msg)
	}
	s1, err := parseTrSet(sets[0], false)
	if err != nil {
		c.Errorf("%s", err)
		return 1
	}
	if !set1Repeats(s1) {
		s1 = trExpand(s1, 0)
	}
	s1Class := false
	for _, it := range s1 {
		s1Class = s1Class || it.class != "" && it.class != "="
	}
	var in1 [256]bool
	for _, it := range s1 {
		in1[it.b] = true
	}
	if comp {
		var cs []trItem
		for b := 0; b < 256; b++ {
			if !in1[b] {
				cs = append(cs, trItem{b: byte(b), repeat: 1})
			}
		}
		s1 = cs
		in1 = [256]bool{}
		for _, it := range s1 {
			in1[it.b] = true
		}
	}
	var s2 []trItem
	var in2 [256]bool
	if len(sets) > 1 {
		if s2, err = parseTrSet(sets[1], true); err != nil {
			c.Errorf("%s", err)
			return 1
		}
		s2 = trExpand(s2, len(s1))
		if translate {
			if msg := trValidate(s1, s2, comp && s1Class, trunc); msg != "" {
				c.Errorf("%s", msg)
				return 1
			}
		}
		for _, it := range s2 {
			in2[it.b] = true
		}
	}
	var xlat [256]byte
	for i := range xlat {
		xlat[i] = byte(i)
	}
	if translate {
		if len(s2) == 0 {
			if len(s1) > 0 {
				c.Errorf("when not truncating set1, string2 must be non-empty")
				return 1
			}
		}
		if trunc && len(s1) > len(s2) {
			s1 = s1[:len(s2)]
		}
		for len(s2) < len(s1) {
			s2 = append(s2, s2[len(s2)-1])
		}
		for i, it := range s1 {
			xlat[it.b] = s2[i].b
		}
	}
	sq := in1
	if len(sets) > 1 {
		sq = in2
	}
	return trRun(ctx, c, trMode{del: del, squeeze: squeeze, in1: &in1, sq: &sq, xlat: &xlat})
}

// trExpand resolves [c*] (fill to n) and [c*n] items into single bytes.
func trExpand(items []trItem, n int) []trItem {
	fixed := 0
	for _, it := range items {
		if it.repeat > 0 {
			fixed += it.repeat
		}
	}
	var out []trItem
	for _, it := range items {
		k := it.repeat
		if k < 0 {
			k = max(0, n-fixed)
			fixed += k
		}
		for range k {
			out = append(out, trItem{b: it.b, repeat: 1, class: it.class})
		}
	}
	return out
}

type trMode struct {
	del, squeeze bool
	in1, sq      *[256]bool
	xlat         *[256]byte
}

func trRun(ctx context.Context, c *shell.Call, m trMode) int {
	out := newTxOut(c.Stdout)
	buf := make([]byte, 64<<10)
	r := txCtxReader{ctx, c.Stdin}
	last := -1
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			if m.del && m.in1[b] {
				continue
			}
			if !m.del {
				b = m.xlat[b]
			}
			if m.squeeze && m.sq[b] && int(b) == last {
				continue
			}
			last = int(b)
			out.WriteByte(b)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			out.Flush()
			if txIsCtx(err) {
				return txCtxStatus
			}
			c.Errorf("read error: %s", txErr(err))
			return 1
		}
		if out.err() != nil {
			return 1
		}
	}
	if out.Flush() != nil {
		return 1
	}
	return 0
}

func set1Repeats(items []trItem) bool {
	for _, it := range items {
		if it.repeat != 1 {
			return false
		}
	}
	return true
}

// trValidate applies GNU tr's checks on string2 when translating.
func trValidate(s1, s2 []trItem, compClass, trunc bool) string {
	for _, it := range s2 {
		switch it.class {
		case "", "upper", "lower":
		case "=":
			return "[=c=] expressions may not appear in string2 when translating"
		default:
			return "when translating, the only character classes that may appear in\nstring2 are 'upper' and 'lower'"
		}
	}
	for i, it := range s2 {
		if it.class != "upper" && it.class != "lower" || i > 0 && s2[i-1].class == it.class {
			continue
		}
		if i >= len(s1) || s1[i].class != "upper" && s1[i].class != "lower" || i > 0 && s1[i-1].class == s1[i].class {
			return "misaligned [:upper:] and/or [:lower:] construct"
		}
	}
	if compClass {
		for _, it := range s2 {
			if it.b != s2[0].b {
				return "when translating with complemented character classes,\nstring2 must map all characters in the domain to one"
			}
		}
	}
	if !trunc && len(s2) > 0 && len(s1) > len(s2) && s2[len(s2)-1].class != "" {
		return "when translating with string1 longer than string2,\nthe latter string must not end with a character class"
	}
	return ""
}
