package tools

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// jqOrder remembers the key order of objects, which gojq's maps lose:
// objects decoded from input and objects built by {...} with constant
// keys. It is not safe for concurrent use.
type jqOrder struct {
	m map[uintptr]jqOrdered
}

type jqOrdered struct {
	obj  map[string]any // kept so the address is not reused
	keys []string
}

func (o *jqOrder) record(m map[string]any, keys []string) {
	if len(m) < 2 {
		return
	}
	if o.m == nil {
		o.m = map[uintptr]jqOrdered{}
	}
	o.m[reflect.ValueOf(m).Pointer()] = jqOrdered{m, keys}
}

// keys returns m's keys in their known order; ok is false when the order
// is unknown (gojq made the object and it has two keys or more).
func (o *jqOrder) keys(m map[string]any) ([]string, bool) {
	if e, ok := o.m[reflect.ValueOf(m).Pointer()]; ok && len(e.keys) == len(m) {
		good := true
		for _, k := range e.keys {
			if _, ok := m[k]; !ok {
				good = false
				break
			}
		}
		if good {
			return e.keys, true
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, len(m) < 2
}

// jqDecoder reads a stream of JSON values the way jq 1.6 does: numbers
// become float64, invalid UTF-8 becomes U+FFFD, object key order is
// recorded in order.
type jqDecoder struct {
	r     *bufio.Reader
	order *jqOrder
	line  int
	col   int
}

type jqParseError struct{ msg string }

func (e *jqParseError) Error() string { return e.msg }

func newJQDecoder(r io.Reader, order *jqOrder) *jqDecoder {
	return &jqDecoder{r: bufio.NewReaderSize(r, 64<<10), order: order, line: 1}
}

func (d *jqDecoder) fail(format string, args ...any) {
	panic(&jqParseError{fmt.Sprintf(format, args...) + fmt.Sprintf(" at line %d, column %d", d.line, d.col)})
}

func (d *jqDecoder) read() (byte, bool) {
	c, err := d.r.ReadByte()
	if err != nil {
		return 0, false
	}
	if c == '\n' {
		d.line++
		d.col = 0
	} else {
		d.col++
	}
	return c, true
}

func (d *jqDecoder) unread() {
	d.r.UnreadByte()
	d.col--
}

func (d *jqDecoder) skipSpace() (byte, bool) {
	for {
		c, ok := d.read()
		if !ok {
			return 0, false
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, true
		}
	}
}

// Next returns the next value; io.EOF at the end, *jqParseError when the
// input is not JSON.
func (d *jqDecoder) Next() (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(*jqParseError)
			if !ok {
				panic(r)
			}
			err = pe
		}
	}()
	c, ok := d.skipSpace()
	if !ok {
		return nil, io.EOF
	}
	return d.value(c), nil
}

func (d *jqDecoder) value(c byte) any {
	switch {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return d.str()
	case strings.IndexByte("[{:,]}", c) < 0:
		return d.token(c)
	}
	d.fail("Invalid numeric literal")
	return nil
}

// token reads a bare token (a number or a literal) as jq 1.6's scanner
// does: every byte up to whitespace, a structural character or a quote.
// A bad token is reported where the byte that ended it is.
func (d *jqDecoder) token(c byte) any {
	b := []byte{c}
	for {
		line, col := d.line, d.col
		c, ok := d.read()
		if !ok {
			v, msg := jqLiteral(b)
			if msg != "" {
				panic(&jqParseError{fmt.Sprintf("%s at EOF at line %d, column %d", msg, d.line, d.col)})
			}
			return v
		}
		if strings.IndexByte(" \t\r\n[{:,]}\"", c) >= 0 {
			v, msg := jqLiteral(b)
			if msg != "" {
				d.fail("%s", msg)
			}
			d.r.UnreadByte()
			d.line, d.col = line, col
			return v
		}
		b = append(b, c)
	}
}

// jqNumberRE is what jq 1.6's strtod reads as a whole token.
var jqNumberRE = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// jqLiteral is jq 1.6's check_literal: a token starting with t, f or n
// (but a three-byte n one: nan) must be that literal; any other must be
// a number.
func jqLiteral(b []byte) (any, string) {
	pattern, v := "", any(nil)
	switch {
	case b[0] == 't':
		pattern, v = "true", true
	case b[0] == 'f':
		pattern, v = "false", false
	case b[0] == 'n' && len(b) != 3:
		pattern = "null"
	}
	if pattern != "" {
		if string(b) != pattern {
			return nil, "Invalid literal"
		}
		return v, ""
	}
	if string(b) == "nan" {
		return math.NaN(), ""
	}
	if !jqNumberRE.Match(b) {
		return nil, "Invalid numeric literal"
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return nil, "Invalid numeric literal"
		}
	}
	return f, "" // out of range: ±Inf, printed as ±DBL_MAX like jq 1.6
}

func (d *jqDecoder) object() any {
	m := map[string]any{}
	var keys []string
	c, ok := d.skipSpace()
	if ok && c == '}' {
		return m
	}
	for {
		if !ok || c != '"' {
			if ok && strings.IndexByte("[{:,]}", c) < 0 {
				// jq checks a bare key as a token first, at its end.
				d.token(c)
				d.read()
			}
			d.fail("Object keys must be strings")
		}
		k := d.str()
		if c, ok = d.skipSpace(); !ok || c != ':' {
			d.fail("Objects must consist of key:value pairs")
		}
		if c, ok = d.skipSpace(); !ok {
			d.fail("Unfinished JSON term")
		}
		if _, dup := m[k]; !dup {
			keys = append(keys, k)
		}
		m[k] = d.value(c)
		if c, ok = d.skipSpace(); !ok {
			d.fail("Unfinished JSON term")
		}
		if c == '}' {
			d.order.record(m, keys)
			return m
		}
		if c != ',' {
			d.fail("Expected separator between values")
		}
		c, ok = d.skipSpace()
	}
}

func (d *jqDecoder) array() any {
	a := []any{}
	c, ok := d.skipSpace()
	if ok && c == ']' {
		return a
	}
	for {
		if !ok {
			d.fail("Unfinished JSON term")
		}
		a = append(a, d.value(c))
		if c, ok = d.skipSpace(); !ok {
			d.fail("Unfinished JSON term")
		}
		if c == ']' {
			return a
		}
		if c != ',' {
			d.fail("Expected separator between values")
		}
		c, ok = d.skipSpace()
	}
}

func (d *jqDecoder) str() string {
	var b strings.Builder
	for {
		c, ok := d.read()
		if !ok {
			d.fail("Unfinished string")
		}
		switch {
		case c == '"':
			return strings.ToValidUTF8(b.String(), "\uFFFD")
		case c == '\\':
			e, ok := d.read()
			if !ok {
				d.fail("Unfinished string")
			}
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case '/', '\\', '"':
				b.WriteByte(e)
			case 'u':
				r := d.hex4()
				if utf16Surrogate(r) {
					if c1, _ := d.read(); c1 == '\\' {
						if c2, _ := d.read(); c2 == 'u' {
							r2 := d.hex4()
							r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
						}
					}
				}
				b.WriteRune(r)
			default:
				d.fail("Invalid escape")
			}
		default:
			b.WriteByte(c)
		}
	}
}

func utf16Surrogate(r rune) bool { return r >= 0xD800 && r < 0xDC00 }

func (d *jqDecoder) hex4() rune {
	var r rune
	for i := 0; i < 4; i++ {
		c, ok := d.read()
		if !ok {
			d.fail("Invalid escape")
		}
		v, err := strconv.ParseUint(string(c), 16, 8)
		if err != nil {
			d.fail("Invalid characters in \\u escape")
		}
		r = r<<4 | rune(v)
	}
	return r
}
