package tools

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// parseDate understands the date strings agents pass to date -d: "@EPOCH",
// ISO dates and times ("2024-01-02", "2024-01-02 03:04:05",
// "2024-01-02T03:04:05Z", with a zone name or numeric offset), month-name
// dates ("Jan 5 2024", "5 January 2024"), MM/DD/YYYY, weekday names with
// next/last, "now", "today", "yesterday", "tomorrow" and relative items
// ("+1 day", "2 weeks ago", "next month"). now carries the zone.
func parseDate(s string, now time.Time) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "@"); ok {
		f, n, ok := txStrtod([]byte(rest))
		if !ok || n != len(rest) || math.IsInf(f, 0) || math.IsNaN(f) {
			return time.Time{}, false
		}
		sec := math.Floor(f)
		return time.Unix(int64(sec), int64(math.Round((f-sec)*1e9))).In(now.Location()), true
	}
	p := &dateParser{toks: dateTokens(strings.ToLower(s)), loc: now.Location()}
	if !p.parse() {
		return time.Time{}, false
	}
	y, mo, d := now.Date()
	h, mi, sec := now.Clock()
	nsec := now.Nanosecond()
	if p.haveDate {
		y, mo, d = p.year, time.Month(p.month), p.day
		if p.year < 0 {
			y = now.Year()
		}
	}
	if p.haveDate || p.haveWday || p.haveTime {
		h, mi, sec, nsec = 0, 0, 0, 0
	}
	if p.haveTime {
		h, mi, sec, nsec = p.hour, p.min, p.sec, p.nsec
	}
	loc := p.loc
	if p.haveZone {
		loc = time.FixedZone("", p.zone)
	}
	t := time.Date(y, mo, d, h, mi, sec, nsec, loc)
	if t.Month() != mo && p.haveDate || p.haveDate && (p.month < 1 || p.month > 12 || p.day < 1 || p.day > 31) {
		return time.Time{}, false
	}
	if p.haveWday && !p.haveDate {
		wd := int(t.Weekday())
		days := (p.wday-wd+7)%7 + 7*p.wdayOrd
		if p.wdayOrd > 0 && wd != p.wday {
			days -= 7
		}
		t = t.AddDate(0, 0, days)
	}
	if p.relY != 0 || p.relM != 0 || p.relD != 0 {
		t = t.AddDate(p.relY, p.relM, p.relD)
	}
	t = t.Add(time.Duration(p.relS) * time.Second)
	return t, true
}

type dateParser struct {
	toks []string
	i    int
	loc  *time.Location

	haveDate, haveTime, haveZone, haveWday bool
	year, month, day                       int
	hour, min, sec, nsec                   int
	zone                                   int // seconds east of UTC
	wday, wdayOrd                          int
	relY, relM, relD                       int
	relS                                   int64
}

// dateTokens splits into words, numbers (with sign) and punctuation.
func dateTokens(s string) []string {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == ',':
			i++
		case isAlpha(c):
			j := i
			for j < len(s) && (isAlpha(s[j]) || s[j] == '.') {
				j++
			}
			toks = append(toks, strings.TrimRight(s[i:j], "."))
			i = j
		case isDigit(c) || (c == '+' || c == '-') && i+1 < len(s) && isDigit(s[i+1]) &&
			(i == 0 || s[i-1] == ' ' || s[i-1] == '\t' || isAlpha(s[i-1])):
			j := i + 1
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			toks = append(toks, s[i:i+1])
			i++
		}
	}
	return toks
}

func (p *dateParser) peek(k int) string {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return ""
}

var dateZones = map[string]int{"utc": 0, "ut": 0, "gmt": 0, "z": 0, "est": -5, "edt": -4, "cst": -6,
	"cdt": -5, "mst": -7, "mdt": -6, "pst": -8, "pdt": -7, "cet": 1, "cest": 2, "bst": 1, "jst": 9}

var dateUnits = map[string]int64{"year": -1, "month": -2, "fortnight": 14 * 86400, "week": 7 * 86400,
	"day": 86400, "hour": 3600, "minute": 60, "min": 60, "second": 1, "sec": 1}

func dateUnit(w string) (int64, bool) {
	if v, ok := dateUnits[w]; ok {
		return v, true
	}
	if strings.HasSuffix(w, "s") {
		v, ok := dateUnits[strings.TrimSuffix(w, "s")]
		return v, ok
	}
	return 0, false
}

func dateMonth(w string) int {
	if len(w) < 3 {
		return 0
	}
	for i, m := range dateMonths {
		lm := strings.ToLower(m)
		if w == lm || w == lm[:3] || w == "sept" && i == 8 {
			return i + 1
		}
	}
	return 0
}

func dateWeekday(w string) int {
	for i, d := range dateDays {
		ld := strings.ToLower(d)
		if w == ld || w == ld[:3] || len(w) >= 3 && strings.HasPrefix(ld, w) && (w == "tues" || w == "wednes" || w == "thur" || w == "thurs") {
			return i
		}
	}
	return -1
}

func isNum(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

func (p *dateParser) addRel(n int64, unit int64) {
	switch unit {
	case -1:
		p.relY += int(n)
	case -2:
		p.relM += int(n)
	case 86400:
		p.relD += int(n)
	case 7 * 86400:
		p.relD += int(7 * n)
	case 14 * 86400:
		p.relD += int(14 * n)
	default:
		p.relS += n * unit
	}
}

func (p *dateParser) parse() bool {
	relStart := -1
	for p.i < len(p.toks) {
		t := p.peek(0)
		switch {
		case isNum(t) && p.peek(1) == "-" && isNum(p.peek(2)) && p.peek(3) == "-" && isNum(p.peek(4)):
			if p.haveDate {
				return false
			}
			p.year, _ = strconv.Atoi(t)
			p.month, _ = strconv.Atoi(p.peek(2))
			p.day, _ = strconv.Atoi(p.peek(4))
			p.haveDate = true
			p.i += 5
			if len(t) == 2 {
				p.year += 1900
				if p.year < 1969 {
					p.year += 100
				}
			}
			if p.peek(0) == "t" {
				p.i++
			}
		case isNum(t) && p.peek(1) == "/" && isNum(p.peek(2)):
			p.month, _ = strconv.Atoi(t)
			p.day, _ = strconv.Atoi(p.peek(2))
			p.year = -1
			p.i += 3
			if p.peek(0) == "/" && isNum(p.peek(1)) {
				p.year, _ = strconv.Atoi(p.peek(1))
				if len(p.peek(1)) <= 2 {
					p.year += 1900
					if p.year < 1969 {
						p.year += 100
					}
				}
				p.i += 2
			}
			p.haveDate = true
		case isNum(t) && p.peek(1) == ":" && isNum(p.peek(2)):
			if !p.parseTime() {
				return false
			}
		case dateMonth(t) > 0:
			p.month, p.year, p.day = dateMonth(t), -1, 1
			p.i++
			if isNum(p.peek(0)) && len(p.peek(0)) <= 2 {
				p.day, _ = strconv.Atoi(p.peek(0))
				p.i++
			}
			if isNum(p.peek(0)) && len(p.peek(0)) == 4 && p.peek(1) != ":" {
				p.year, _ = strconv.Atoi(p.peek(0))
				p.i++
			}
			p.haveDate = true
		case isNum(t) && len(t) <= 2 && dateMonth(p.peek(1)) > 0:
			p.day, _ = strconv.Atoi(t)
			p.month, p.year = dateMonth(p.peek(1)), -1
			p.i += 2
			if isNum(p.peek(0)) && len(p.peek(0)) == 4 && p.peek(1) != ":" {
				p.year, _ = strconv.Atoi(p.peek(0))
				p.i++
			}
			p.haveDate = true
		case dateWeekday(t) >= 0:
			p.wday, p.haveWday = dateWeekday(t), true
			p.i++
		case t == "next" || t == "last" || t == "this":
			ord := map[string]int{"next": 1, "last": -1, "this": 0}[t]
			w := p.peek(1)
			if d := dateWeekday(w); d >= 0 {
				p.wday, p.wdayOrd, p.haveWday = d, ord, true
				p.i += 2
				continue
			}
			u, ok := dateUnit(w)
			if !ok {
				return false
			}
			if relStart < 0 {
				relStart = p.i
			}
			p.addRel(int64(ord), u)
			p.i += 2
		case t == "now" || t == "today":
			p.i++
		case t == "yesterday" || t == "tomorrow":
			p.relD += map[string]int{"yesterday": -1, "tomorrow": 1}[t]
			p.i++
		case t == "ago":
			p.relY, p.relM, p.relD, p.relS = -p.relY, -p.relM, -p.relD, -p.relS
			p.i++
		case t == "am" || t == "pm" || t == "a.m" || t == "p.m":
			return false
		case isSigned(t) || isNum(t):
			n, _ := strconv.ParseInt(t, 10, 64)
			if u, ok := dateUnit(p.peek(1)); ok {
				p.addRel(n, u)
				p.i += 2
				continue
			}
			if p.haveTime && !p.haveZone && (t[0] == '+' || t[0] == '-') {
				if !p.parseNumZone() {
					return false
				}
				continue
			}
			if isNum(t) && len(t) == 4 && p.haveDate && p.year < 0 {
				p.year = int(n)
				p.i++
				continue
			}
			return false
		default:
			if u, ok := dateUnit(t); ok {
				p.addRel(1, u)
				p.i++
				continue
			}
			if off, ok := dateZones[t]; ok && !p.haveZone {
				p.zone, p.haveZone = off*3600, true
				p.i++
				if s := p.peek(0); isSigned(s) {
					if _, ok := dateUnit(p.peek(1)); !ok {
						z := p.zone
						if !p.parseNumZone() {
							return false
						}
						p.zone += z
					}
				}
				continue
			}
			return false
		}
	}
	return true
}

func isSigned(s string) bool { return len(s) > 1 && (s[0] == '+' || s[0] == '-') && isNum(s[1:]) }

func (p *dateParser) parseTime() bool {
	p.hour, _ = strconv.Atoi(p.peek(0))
	p.min, _ = strconv.Atoi(p.peek(2))
	p.sec, p.nsec = 0, 0
	p.i += 3
	if p.peek(0) == ":" && isNum(p.peek(1)) {
		p.sec, _ = strconv.Atoi(p.peek(1))
		p.i += 2
		if (p.peek(0) == "." || p.peek(0) == ",") && isNum(p.peek(1)) {
			frac := (p.peek(1) + "000000000")[:9]
			p.nsec, _ = strconv.Atoi(frac)
			p.i += 2
		}
	}
	switch p.peek(0) {
	case "am", "a.m":
		if p.hour < 1 || p.hour > 12 {
			return false
		}
		p.hour %= 12
		p.i++
	case "pm", "p.m":
		if p.hour < 1 || p.hour > 12 {
			return false
		}
		p.hour = p.hour%12 + 12
		p.i++
	}
	if p.hour > 23 || p.min > 59 || p.sec > 60 {
		return false
	}
	p.haveTime = true
	return true
}

// parseNumZone reads "+hh", "+hhmm" or "+hh:mm" at the current token.
func (p *dateParser) parseNumZone() bool {
	t := p.peek(0)
	sign := 1
	if t[0] == '-' {
		sign = -1
	}
	digits := t[1:]
	var h, m int
	switch {
	case p.peek(1) == ":" && isNum(p.peek(2)):
		h, _ = strconv.Atoi(digits)
		m, _ = strconv.Atoi(p.peek(2))
		p.i += 2
	case len(digits) <= 2:
		h, _ = strconv.Atoi(digits)
	case len(digits) == 4:
		h, _ = strconv.Atoi(digits[:2])
		m, _ = strconv.Atoi(digits[2:])
	default:
		return false
	}
	p.i++
	if h > 24 || m > 59 {
		return false
	}
	p.zone, p.haveZone = sign*(h*3600+m*60), true
	return true
}
