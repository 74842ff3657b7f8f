package tools

import (
	"bytes"
	"fmt"
	"strconv"
)

// This file holds sort's key fields: parsing -k specs and comparing lines
// the way GNU sort's keycompare and compare do in C.UTF-8 (byte order).

// sortKey is one -k field, or the whole-line key made of global options.
type sortKey struct {
	sword, schar int // start field and char (0-based); sword < 0: line start
	eword, echar int // end field (0-based) and char (0 = field end); eword < 0: line end
	skipSBlanks  bool
	skipEBlanks  bool
	ignore       *[256]bool // bytes to ignore (-d, -i); nil for none
	fold         bool       // -f
	numeric      bool       // -n
	general      bool       // -g
	human        bool       // -h
	month        bool       // -M
	version      bool       // -V
	reverse      bool       // -r
}

var sortDict, sortNonPrint [256]bool

func init() {
	for i := range 256 {
		b := byte(i)
		isAlnum := b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
		sortDict[i] = !(isAlnum || b == ' ' || b == '\t')
		sortNonPrint[i] = !(b >= 0x20 && b < 0x7f)
	}
}

// defaultOrder reports whether k has no ordering option of its own (GNU's
// default_key_compare), so it inherits the global ones.
func (k *sortKey) defaultOrder() bool {
	return k.ignore == nil && !k.fold && !k.skipSBlanks && !k.skipEBlanks && !k.month &&
		!k.numeric && !k.general && !k.human && !k.version
}

// setOrdering applies option letters to k; end says they follow POS2.
// It returns the unconsumed rest.
func (k *sortKey) setOrdering(s string, end bool) string {
	for len(s) > 0 {
		switch s[0] {
		case 'b':
			if end {
				k.skipEBlanks = true
			} else {
				k.skipSBlanks = true
			}
		case 'd':
			k.ignore = &sortDict
		case 'f':
			k.fold = true
		case 'g':
			k.general = true
		case 'h':
			k.human = true
		case 'i':
			if k.ignore == nil {
				k.ignore = &sortNonPrint
			}
		case 'M':
			k.month = true
		case 'n':
			k.numeric = true
		case 'r':
			k.reverse = true
		case 'V':
			k.version = true
		case 'R':
			return s // refused by the caller
		default:
			return s
		}
		s = s[1:]
	}
	return s
}

// parseSortKey parses a -k POS1[,POS2] spec.
func parseSortKey(spec string) (*sortKey, error) {
	k := &sortKey{}
	s := spec
	n, rest, ok := sortNum(s)
	if !ok {
		return nil, fmt.Errorf("invalid number at field start: invalid count at start of %s", locQuote(spec))
	}
	if n == 0 {
		return nil, fmt.Errorf("field number is zero: invalid field specification %s", locQuote(spec))
	}
	k.sword, s = n-1, rest
	if len(s) > 0 && s[0] == '.' {
		n, rest, ok = sortNum(s[1:])
		if !ok {
			return nil, fmt.Errorf("invalid number after '.': invalid count at start of %s", locQuote(s[1:]))
		}
		if n == 0 {
			return nil, fmt.Errorf("character offset is zero: invalid field specification %s", locQuote(spec))
		}
		k.schar, s = n-1, rest
	}
	s = k.setOrdering(s, false)
	k.eword = -1
	if len(s) > 0 && s[0] == ',' {
		n, rest, ok = sortNum(s[1:])
		if !ok {
			return nil, fmt.Errorf("invalid number after ',': invalid count at start of %s", locQuote(s[1:]))
		}
		if n == 0 {
			return nil, fmt.Errorf("field number is zero: invalid field specification %s", locQuote(spec))
		}
		k.eword, s = n-1, rest
		if len(s) > 0 && s[0] == '.' {
			n, rest, ok = sortNum(s[1:])
			if !ok {
				return nil, fmt.Errorf("invalid number after '.': invalid count at start of %s", locQuote(s[1:]))
			}
			k.echar, s = n, rest
		}
		s = k.setOrdering(s, true)
	}
	if s != "" {
		if s[0] == 'R' {
			return nil, errSortRandom
		}
		return nil, fmt.Errorf("stray character in field spec: invalid field specification %s", locQuote(spec))
	}
	return k, nil
}

var errSortRandom = fmt.Errorf("random sort")

func sortNum(s string) (int, string, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, s, false
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil {
		n = 1 << 40
	}
	return n, s[i:], true
}

func sortBlank(b byte) bool { return b == ' ' || b == '\t' || b == '\n' }

// begField is GNU begfield: where key k starts in line (no delimiter).
func (s *sorter) begField(line []byte, k *sortKey) int {
	p, lim := 0, len(line)
	for w := k.sword; p < lim && w > 0; w-- {
		if s.tab >= 0 {
			for p < lim && line[p] != byte(s.tab) {
				p++
			}
			if p < lim {
				p++
			}
		} else {
			for p < lim && sortBlank(line[p]) {
				p++
			}
			for p < lim && !sortBlank(line[p]) {
				p++
			}
		}
	}
	if k.skipSBlanks {
		for p < lim && sortBlank(line[p]) {
			p++
		}
	}
	return min(lim, p+k.schar)
}

// limField is GNU limfield: where key k ends in line.
func (s *sorter) limField(line []byte, k *sortKey) int {
	p, lim := 0, len(line)
	eword, echar := k.eword, k.echar
	if echar == 0 {
		eword++
	}
	for p < lim && eword > 0 {
		eword--
		if s.tab >= 0 {
			for p < lim && line[p] != byte(s.tab) {
				p++
			}
			if p < lim && (eword > 0 || echar != 0) {
				p++
			}
		} else {
			for p < lim && sortBlank(line[p]) {
				p++
			}
			for p < lim && !sortBlank(line[p]) {
				p++
			}
		}
	}
	if echar != 0 {
		if k.skipEBlanks {
			for p < lim && sortBlank(line[p]) {
				p++
			}
		}
		p = min(lim, p+echar)
	}
	return p
}

// keyText returns the part of line that key k covers.
func (s *sorter) keyText(line []byte, k *sortKey) []byte {
	lim := len(line)
	if k.eword >= 0 {
		lim = s.limField(line, k)
	}
	beg := 0
	if k.sword >= 0 {
		beg = s.begField(line, k)
	} else if k.skipSBlanks {
		for beg < lim && sortBlank(line[beg]) {
			beg++
		}
	}
	if beg > lim {
		beg = lim
	}
	return line[beg:lim]
}

// keyCompare is GNU keycompare over every key.
func (s *sorter) keyCompare(a, b []byte) int {
	for _, k := range s.keys {
		ta, tb := s.keyText(a, k), s.keyText(b, k)
		var diff int
		switch {
		case k.numeric || k.general || k.human || k.month || k.version:
			if k.ignore != nil || k.fold {
				ta, tb = sortTranslate(ta, k), sortTranslate(tb, k)
			}
			switch {
			case k.numeric:
				diff = sortNumCompare(ta, tb)
			case k.general:
				diff = sortGeneralCompare(ta, tb)
			case k.human:
				diff = sortHumanCompare(ta, tb)
			case k.month:
				diff = sortMonth(ta) - sortMonth(tb)
			default:
				diff = sortFilevercmp(ta, tb)
			}
		case k.ignore != nil || k.fold:
			diff = bytes.Compare(sortTranslate(ta, k), sortTranslate(tb, k))
		default:
			diff = bytes.Compare(ta, tb)
		}
		if diff != 0 {
			if k.reverse {
				return -diff
			}
			return diff
		}
	}
	return 0
}

func sortTranslate(t []byte, k *sortKey) []byte {
	out := make([]byte, 0, len(t))
	for _, c := range t {
		if k.ignore != nil && k.ignore[c] {
			continue
		}
		if k.fold && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		out = append(out, c)
	}
	return out
}

// compare is GNU compare: keys, then (unless -s or -u) the whole line.
func (s *sorter) compare(a, b []byte) int {
	if len(s.keys) > 0 {
		diff := s.keyCompare(a, b)
		if diff != 0 || s.unique || s.stable {
			return diff
		}
	}
	diff := bytes.Compare(a, b)
	if s.reverse {
		return -diff
	}
	return diff
}

var sortMonths = []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}

// sortMonth is GNU getmonth: 1..12 for a leading month abbreviation.
func sortMonth(t []byte) int {
	i := 0
	for i < len(t) && sortBlank(t[i]) {
		i++
	}
	t = t[i:]
	if len(t) < 3 {
		return 0
	}
	for m, name := range sortMonths {
		ok := true
		for j := range 3 {
			c := t[j]
			if c >= 'a' && c <= 'z' {
				c -= 'a' - 'A'
			}
			if c != name[j] {
				ok = false
				break
			}
		}
		if ok {
			return m + 1
		}
	}
	return 0
}
