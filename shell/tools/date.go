package tools

import (
	"context"
	"strconv"
	"strings"
	"time"

	"rung.dev/rung/shell"
)

// date: GNU date 9.1 output (+FORMAT with glibc strftime's conversions and
// flags, -u, -I, -R, --rfc-3339, -r FILE, -d STRING with the forms agents
// use; see dateparse.go). The zone comes from TZ in the call's
// environment; without TZ the sandbox is UTC. Setting the clock is refused.

var dateOpts = NewOptions("d,date=", "u,utc,universal", "I,iso-8601=?", "R,rfc-email", "rfc-822", "rfc-2822",
	"rfc-3339=", "r,reference=", "s,set=", "f,file=", "debug", "resolution")

var dateUnimpl = []string{"set", "file", "debug", "resolution"}

// dateCheck refuses unimplemented options and an operand that would set
// the clock.
func dateCheck(args []string) error {
	if err := txCheck(dateOpts, dateUnimpl...)(args); err != nil {
		return err
	}
	_, ops, _ := dateOpts.Parse(args)
	for _, op := range ops {
		if op != shell.Unknown && !strings.HasPrefix(op, "+") {
			return errUnsupportedf("date %s", op)
		}
	}
	return nil
}

func dateLocation(c *shell.Call, utc bool) *time.Location {
	if utc {
		return time.UTC
	}
	tz, ok := c.LookupEnv("TZ")
	if !ok || tz == "" {
		return time.UTC
	}
	tz = strings.TrimPrefix(tz, ":")
	if loc, err := time.LoadLocation(tz); err == nil {
		return loc
	}
	// POSIX "NAME[+-]H[:MM]" with no rules: offset is west of UTC.
	i := 0
	for i < len(tz) && isAlpha(tz[i]) {
		i++
	}
	name, rest := tz[:i], tz[i:]
	if name == "" {
		name = "UTC"
	}
	off := 0
	if rest != "" {
		sign := 1
		if rest[0] == '+' || rest[0] == '-' {
			if rest[0] == '-' {
				sign = -1
			}
			rest = rest[1:]
		}
		h, m, _ := strings.Cut(rest, ":")
		hh, err1 := strconv.Atoi(h)
		mm, _ := strconv.Atoi("0" + m)
		if err1 == nil {
			off = -sign * (hh*3600 + mm*60)
		}
	}
	return time.FixedZone(name, off)
}

func runDate(ctx context.Context, c *shell.Call) int {
	opts, ops, st, ok := txParse(c, dateOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	if o, bad := txRefused(opts, dateUnimpl...); bad {
		return txFail(c, o)
	}
	var dateStr, ref string
	hasDate, hasRef, utc := false, false, false
	format := ""
	nFormats := 0
	for _, o := range opts {
		switch o.Key {
		case "date":
			dateStr, hasDate = o.Value, true
		case "utc", "universal":
			utc = true
		case "iso-8601":
			f, ok := dateISO(o.Value)
			if !ok {
				c.Errorf("invalid argument %s for '--iso-8601'", txQuote(o.Value))
				return 1
			}
			format = f
			nFormats++
		case "rfc-email", "rfc-822", "rfc-2822":
			format = "%a, %d %b %Y %H:%M:%S %z"
			nFormats++
		case "rfc-3339":
			f := map[string]string{"date": "%Y-%m-%d", "seconds": "%Y-%m-%d %H:%M:%S%:z",
				"ns": "%Y-%m-%d %H:%M:%S.%N%:z"}[o.Value]
			if f == "" {
				c.Errorf("invalid argument %s for '--rfc-3339'", txQuote(o.Value))
				return 1
			}
			format = f
			nFormats++
		case "reference":
			ref, hasRef = o.Value, true
		}
	}
	for _, op := range ops {
		if strings.HasPrefix(op, "+") {
			if nFormats > 0 {
				c.Errorf("multiple output formats specified")
				return 1
			}
			format = op[1:]
			nFormats++
			continue
		}
		if len(ops) == 1 && !hasDate {
			return c.Fail("setting the date")
		}
		return txUsageMsg(c, "extra operand "+txQuote(op))
	}
	if len(ops) > 1 {
		return txUsageMsg(c, "extra operand "+txQuote(ops[1]))
	}
	if hasDate && hasRef {
		c.Errorf("the options to specify dates for printing are mutually exclusive")
		return txUsageMsg(c, "")
	}
	loc := dateLocation(c, utc)
	now := time.Now().In(loc)
	t := now
	switch {
	case hasDate:
		var ok bool
		t, ok = parseDate(dateStr, now)
		if !ok {
			c.Errorf("invalid date %s", txQuote(dateStr))
			return 1
		}
		t = t.In(loc)
	case hasRef:
		fi, err := c.FS.Stat(c.Abs(ref))
		if err != nil {
			c.Errorf("%s: %s", ref, txErr(err))
			return 1
		}
		t = fi.ModTime().In(loc)
	}
	if nFormats == 0 {
		format = "%a %b %e %H:%M:%S %Z %Y"
	}
	out := newTxOut(c.Stdout)
	out.WriteString(strftime(format, t))
	out.WriteByte('\n')
	if out.Flush() != nil {
		return 1
	}
	return 0
}

func dateISO(v string) (string, bool) {
	switch {
	case v == "" || strings.HasPrefix("date", v):
		return "%Y-%m-%d", true
	case strings.HasPrefix("hours", v):
		return "%Y-%m-%dT%H%:z", true
	case strings.HasPrefix("minutes", v):
		return "%Y-%m-%dT%H:%M%:z", true
	case strings.HasPrefix("seconds", v):
		return "%Y-%m-%dT%H:%M:%S%:z", true
	case strings.HasPrefix("ns", v):
		return "%Y-%m-%dT%H:%M:%S,%N%:z", true
	}
	return "", false
}

var (
	dateDays   = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	dateMonths = []string{"January", "February", "March", "April", "May", "June", "July", "August",
		"September", "October", "November", "December"}
)

// strftime formats t like glibc strftime in the C locale, with GNU date's
// %N, %q, %:z family, and the - _ 0 ^ # flags and field widths.
func strftime(f string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		start := i
		i++
		var pad byte // 0 default, '-', '_', '0'
		upper, swap := false, false
		for ; i < len(f); i++ {
			switch f[i] {
			case '-', '_', '0':
				pad = f[i]
				continue
			case '^':
				upper = true
				continue
			case '#':
				swap = true
				continue
			}
			break
		}
		width := -1
		for i < len(f) && isDigit(f[i]) {
			if width < 0 {
				width = 0
			}
			width = min(width*10+int(f[i]-'0'), 1<<20)
			i++
		}
		colons := 0
		for i < len(f) && f[i] == ':' {
			colons++
			i++
		}
		for i < len(f) && (f[i] == 'E' || f[i] == 'O') {
			i++
		}
		if i >= len(f) {
			b.WriteString(f[start:])
			break
		}
		conv := f[i]
		s, num, defWidth, defPad, ok := strftimeConv(conv, colons, width, t)
		if !ok {
			b.WriteString(f[start : i+1])
			continue
		}
		if upper {
			s = strings.ToUpper(s)
		}
		if swap {
			switch conv {
			case 'p', 'Z':
				s = strings.ToLower(s)
			case 'P':
			default:
				s = strings.ToUpper(s)
			}
		}
		if conv == 'N' && pad == '-' {
			pad = 0 // %-N still prints every digit
		}
		b.WriteString(strftimePad(s, num, width, defWidth, defPad, pad))
	}
	return b.String()
}

func strftimePad(s string, num bool, width, defWidth int, defPad, pad byte) string {
	if pad == '-' {
		if num {
			t := strings.TrimLeft(s, " 0")
			if t == "" && s != "" {
				t = "0"
			}
			if strings.HasPrefix(s, "-") {
				return s
			}
			return t
		}
		return s
	}
	w := defWidth
	if width >= 0 {
		w = width
	}
	p := defPad
	if pad == '_' {
		p = ' '
	} else if pad == '0' {
		p = '0'
	}
	if !num && pad != '0' {
		p = ' '
	}
	if num && width < 0 && (pad == '_' || pad == '0') {
		// Re-pad the default-width field with the requested character.
		s = strings.TrimLeft(s, " ")
		if p == ' ' {
			t := strings.TrimLeft(s, "0")
			if t == "" {
				t = "0"
			}
			s = t
		}
	}
	if len(s) >= w {
		return s
	}
	fill := strings.Repeat(string(p), w-len(s))
	if p == '0' && strings.HasPrefix(s, "-") {
		return "-" + fill + s[1:]
	}
	return fill + s
}

// strftimeConv returns a conversion's text, whether it is numeric, and
// its default width and padding.
func strftimeConv(conv byte, colons, width int, t time.Time) (string, bool, int, byte, bool) {
	itoa := strconv.Itoa
	n2 := func(v int) (string, bool, int, byte, bool) { return itoa(v), true, 2, '0', true }
	switch conv {
	case 'a':
		return dateDays[t.Weekday()][:3], false, 0, ' ', true
	case 'A':
		return dateDays[t.Weekday()], false, 0, ' ', true
	case 'b', 'h':
		return dateMonths[t.Month()-1][:3], false, 0, ' ', true
	case 'B':
		return dateMonths[t.Month()-1], false, 0, ' ', true
	case 'c':
		return strftime("%a %b %e %H:%M:%S %Y", t), false, 0, ' ', true
	case 'C':
		return itoa(t.Year() / 100), true, 2, '0', true
	case 'd':
		return n2(t.Day())
	case 'D':
		return strftime("%m/%d/%y", t), false, 0, ' ', true
	case 'e':
		return itoa(t.Day()), true, 2, ' ', true
	case 'F':
		return strftime("%Y-%m-%d", t), false, 0, ' ', true
	case 'g':
		y, _ := t.ISOWeek()
		return n2(((y % 100) + 100) % 100)
	case 'G':
		y, _ := t.ISOWeek()
		return itoa(y), true, 0, '0', true
	case 'H':
		return n2(t.Hour())
	case 'I':
		return n2((t.Hour()+11)%12 + 1)
	case 'j':
		return itoa(t.YearDay()), true, 3, '0', true
	case 'k':
		return itoa(t.Hour()), true, 2, ' ', true
	case 'l':
		return itoa((t.Hour()+11)%12 + 1), true, 2, ' ', true
	case 'm':
		return n2(int(t.Month()))
	case 'M':
		return n2(t.Minute())
	case 'n':
		return "\n", false, 0, ' ', true
	case 'N':
		s := strconv.Itoa(t.Nanosecond())
		s = strings.Repeat("0", 9-len(s)) + s
		if width > 0 && width < 9 {
			s = s[:width]
		}
		return s, true, 9, '0', true
	case 'p':
		if t.Hour() < 12 {
			return "AM", false, 0, ' ', true
		}
		return "PM", false, 0, ' ', true
	case 'P':
		if t.Hour() < 12 {
			return "am", false, 0, ' ', true
		}
		return "pm", false, 0, ' ', true
	case 'q':
		return itoa((int(t.Month())-1)/3 + 1), true, 1, '0', true
	case 'r':
		return strftime("%I:%M:%S %p", t), false, 0, ' ', true
	case 'R':
		return strftime("%H:%M", t), false, 0, ' ', true
	case 's':
		return strconv.FormatInt(t.Unix(), 10), true, 1, '0', true
	case 'S':
		return n2(t.Second())
	case 't':
		return "\t", false, 0, ' ', true
	case 'T':
		return strftime("%H:%M:%S", t), false, 0, ' ', true
	case 'u':
		return itoa((int(t.Weekday())+6)%7 + 1), true, 1, '0', true
	case 'U':
		return n2((t.YearDay() + 6 - int(t.Weekday())) / 7)
	case 'V':
		_, w := t.ISOWeek()
		return n2(w)
	case 'w':
		return itoa(int(t.Weekday())), true, 1, '0', true
	case 'W':
		return n2((t.YearDay() + 6 - (int(t.Weekday())+6)%7) / 7)
	case 'x':
		return strftime("%m/%d/%y", t), false, 0, ' ', true
	case 'X':
		return strftime("%H:%M:%S", t), false, 0, ' ', true
	case 'y':
		return n2(((t.Year() % 100) + 100) % 100)
	case 'Y':
		return itoa(t.Year()), true, 1, '0', true
	case 'z':
		return dateZone(t, colons), false, 0, ' ', colons <= 3
	case 'Z':
		name, _ := t.Zone()
		return name, false, 0, ' ', true
	case '%':
		return "%", false, 0, ' ', true
	}
	return "", false, 0, ' ', false
}

func dateZone(t time.Time, colons int) string {
	_, off := t.Zone()
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	h, m, s := off/3600, off/60%60, off%60
	p2 := func(v int) string {
		if v < 10 {
			return "0" + strconv.Itoa(v)
		}
		return strconv.Itoa(v)
	}
	switch colons {
	case 1:
		return sign + p2(h) + ":" + p2(m)
	case 2:
		return sign + p2(h) + ":" + p2(m) + ":" + p2(s)
	case 3:
		switch {
		case s != 0:
			return sign + p2(h) + ":" + p2(m) + ":" + p2(s)
		case m != 0:
			return sign + p2(h) + ":" + p2(m)
		}
		return sign + p2(h)
	}
	return sign + p2(h) + p2(m)
}
