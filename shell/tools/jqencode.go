package tools

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// jqEncoder writes values as jq 1.6 prints them.
type jqEncoder struct {
	order     *jqOrder
	indent    string // "" compact
	sortKeys  bool
	ascii     bool
	unordered bool // an object of unknown key order was written
}

func (e *jqEncoder) encode(b []byte, v any, depth int) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case float64:
		return jqNumber(b, v)
	case int:
		return jqNumber(b, float64(v))
	case json.Number:
		f, _ := v.Float64()
		return jqNumber(b, f)
	case int64:
		return jqNumber(b, float64(v))
	case *big.Int:
		f, _ := new(big.Float).SetInt(v).Float64()
		return jqNumber(b, f)
	case string:
		return e.str(b, v)
	case []any:
		if len(v) == 0 {
			return append(b, "[]"...)
		}
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.newline(b, depth+1)
			b = e.encode(b, x, depth+1)
		}
		b = e.newline(b, depth)
		return append(b, ']')
	case map[string]any:
		if len(v) == 0 {
			return append(b, "{}"...)
		}
		var keys []string
		if e.sortKeys {
			keys = make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
		} else {
			var ok bool
			keys, ok = e.order.keys(v)
			if !ok {
				e.unordered = true
			}
		}
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.newline(b, depth+1)
			b = e.str(b, k)
			b = append(b, ':')
			if e.indent != "" {
				b = append(b, ' ')
			}
			b = e.encode(b, v[k], depth+1)
		}
		b = e.newline(b, depth)
		return append(b, '}')
	}
	return e.str(b, fmt.Sprint(v))
}

func (e *jqEncoder) newline(b []byte, depth int) []byte {
	if e.indent == "" {
		return b
	}
	b = append(b, '\n')
	for i := 0; i < depth; i++ {
		b = append(b, e.indent...)
	}
	return b
}

func (e *jqEncoder) str(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				b = append(b, `\"`...)
			case c == '\\':
				b = append(b, `\\`...)
			case c == '\n':
				b = append(b, `\n`...)
			case c == '\t':
				b = append(b, `\t`...)
			case c == '\r':
				b = append(b, `\r`...)
			case c == '\b':
				b = append(b, `\b`...)
			case c == '\f':
				b = append(b, `\f`...)
			case c < 0x20 || c == 0x7f:
				b = fmt.Appendf(b, `\u%04x`, c)
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if e.ascii {
			if r >= 0x10000 {
				r -= 0x10000
				b = fmt.Appendf(b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3ff))
			} else {
				b = fmt.Appendf(b, `\u%04x`, r)
			}
		} else if r == utf8.RuneError && size == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// jqNumber formats a double as jq 1.6 does: the shortest digits that
// read back, in exponent form when the exponent is below -4 or the
// number has more than 15 digits past the last significant one;
// infinities print as ±DBL_MAX and NaN as null.
func jqNumber(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "null"...)
	case math.IsInf(f, 1):
		f = math.MaxFloat64
	case math.IsInf(f, -1):
		f = -math.MaxFloat64
	}
	if f == 0 {
		if math.Signbit(f) {
			return append(b, "-0"...)
		}
		return append(b, '0')
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddddde±XX
	neg := s[0] == '-'
	if neg {
		s = s[1:]
		b = append(b, '-')
	}
	mant, expStr, _ := strings.Cut(s, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expStr)
	decpt := exp + 1
	if decpt <= -4 || decpt > len(digits)+15 {
		b = append(b, digits[0])
		if len(digits) > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		if exp < 0 {
			b = append(b, '-')
			exp = -exp
		} else {
			b = append(b, '+')
		}
		if exp < 10 {
			b = append(b, '0')
		}
		return strconv.AppendInt(b, int64(exp), 10)
	}
	switch {
	case decpt <= 0:
		b = append(b, "0."...)
		for i := decpt; i < 0; i++ {
			b = append(b, '0')
		}
		return append(b, digits...)
	case decpt >= len(digits):
		b = append(b, digits...)
		for i := len(digits); i < decpt; i++ {
			b = append(b, '0')
		}
		return b
	}
	b = append(b, digits[:decpt]...)
	b = append(b, '.')
	return append(b, digits[decpt:]...)
}
