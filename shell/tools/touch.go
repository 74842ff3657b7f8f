package tools

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"rung.dev/rung/shell"
)

// touch changes file timestamps like GNU touch. -d accepts the common
// date forms (ISO 8601 dates and times, "@seconds", "now", "yesterday",
// "tomorrow", "N units ago", "+N units"); anything else is refused as
// unsupported rather than guessed. -h is refused: the file view cannot set a
// symlink's own times.

var touchSpec = fuNewSpec([]string{
	"a", "c,no-create", "d,date=", "f", "m", "r,reference=", "t=", "time=",
}, "h,no-dereference", "help", "version")

func runTouch(ctx context.Context, c *shell.Call) int {
	opts, files, status, ok := touchSpec.parse(c, 1)
	if !ok {
		return status
	}
	var atimeOnly, mtimeOnly, noCreate bool
	var when, whenA time.Time
	set := false
	loc := fuLocation(c)
	for _, o := range opts {
		switch o.Key {
		case "a":
			atimeOnly = true
		case "m":
			mtimeOnly = true
		case "no-create":
			noCreate = true
		case "time":
			switch o.Value {
			case "atime", "access", "use":
				atimeOnly = true
			case "mtime", "modify":
				mtimeOnly = true
			default:
				c.Errorf("invalid argument %s for '--time'", fuQuote(o.Value))
				return usage(c, errors.New("valid arguments are 'atime', 'access', 'use', 'mtime', 'modify'"), 1)
			}
		case "date":
			t, ok := fuParseDate(o.Value, loc, time.Now())
			if !ok {
				return c.Fail("date string " + fuQuote(o.Value))
			}
			when, whenA, set = t, t, true
		case "t":
			t, ok := touchStamp(o.Value, loc)
			if !ok {
				c.Errorf("invalid date format %s", fuQuote(o.Value))
				return 1
			}
			when, whenA, set = t, t, true
		case "reference":
			st, err := fuStatPath(c, o.Value)
			if err != nil {
				c.Errorf("failed to get attributes of %s: %s", fuQuote(o.Value), fuErr(err))
				return 1
			}
			when, whenA, set = st.Mtim, st.Atim, true
		}
	}
	if len(files) == 0 {
		return usage(c, errors.New("missing file operand"), 1)
	}
	if !set {
		when = time.Now()
		whenA = when
	}
	if !atimeOnly && !mtimeOnly {
		atimeOnly, mtimeOnly = true, true
	}
	at, mt := time.Time{}, time.Time{} // zero: leave unchanged
	if atimeOnly {
		at = whenA
	}
	if mtimeOnly {
		mt = when
	}
	for _, f := range files {
		if ctx.Err() != nil {
			return 130
		}
		if f == "-" {
			// GNU touches standard output's file; ours is never a file.
			continue
		}
		abs := c.Abs(f)
		if _, err := c.FS.Stat(abs); err != nil && errors.Is(err, fs.ErrNotExist) {
			if noCreate {
				continue
			}
			fh, err := c.FS.OpenFile(abs, os.O_WRONLY|os.O_CREATE, 0o666)
			if err != nil {
				c.Errorf("cannot touch %s: %s", fuQuote(f), fuErr(err))
				status = 1
				continue
			}
			fh.Close()
			if !set && at.Equal(mt) {
				continue
			}
		}
		if err := c.FS.Chtimes(abs, at, mt); err != nil {
			if noCreate && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			c.Errorf("setting times of %s: %s", fuQuote(f), fuErr(err))
			status = 1
		}
	}
	return status
}

// touchStamp parses -t's [[CC]YY]MMDDhhmm[.ss].
func touchStamp(s string, loc *time.Location) (time.Time, bool) {
	sec := 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		if len(s)-i != 3 {
			return time.Time{}, false
		}
		n, err := strconv.Atoi(s[i+1:])
		if err != nil || n > 60 {
			return time.Time{}, false
		}
		sec, s = n, s[:i]
	}
	if strings.Trim(s, "0123456789") != "" {
		return time.Time{}, false
	}
	year := time.Now().In(loc).Year()
	switch len(s) {
	case 8:
	case 10:
		yy, _ := strconv.Atoi(s[:2])
		if yy < 69 {
			year = 2000 + yy
		} else {
			year = 1900 + yy
		}
		s = s[2:]
	case 12:
		year, _ = strconv.Atoi(s[:4])
		s = s[4:]
	default:
		return time.Time{}, false
	}
	num := func(i int) int { n, _ := strconv.Atoi(s[i : i+2]); return n }
	mon, day, hh, mm := num(0), num(2), num(4), num(6)
	if mon < 1 || mon > 12 || day < 1 || day > 31 || hh > 23 || mm > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(mon), day, hh, mm, sec, 0, loc)
	if t.Day() != day {
		return time.Time{}, false
	}
	return t, true
}

// fuParseDate parses the date strings agents commonly give -d: "now",
// "@SECONDS[.frac]", "YYYY-MM-DD", "YYYY-MM-DD[ T]HH:MM[:SS[.frac]]" with
// an optional zone ("Z", "UTC", "+HH:MM", "+HHMM"). ok is false otherwise.
func fuParseDate(s string, loc *time.Location, now time.Time) (time.Time, bool) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "now", "", "today":
		return now, true
	case "yesterday":
		return now.AddDate(0, 0, -1), true
	case "tomorrow":
		return now.AddDate(0, 0, 1), true
	}
	if t, ok := fuRelDate(strings.ToLower(s), now); ok {
		return t, true
	}
	if rest, ok := strings.CutPrefix(s, "@"); ok {
		secs, frac, _ := strings.Cut(rest, ".")
		n, err := strconv.ParseInt(secs, 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		ns := int64(0)
		if frac != "" {
			if strings.Trim(frac, "0123456789") != "" {
				return time.Time{}, false
			}
			frac = (frac + "000000000")[:9]
			ns, _ = strconv.ParseInt(frac, 10, 64)
		}
		if strings.HasPrefix(secs, "-") {
			ns = -ns // @-5.5 is 5.5 s before the epoch
		}
		return time.Unix(n, ns), true
	}
	zone := loc
	for _, z := range []string{" UTC", "Z", " GMT", " Z"} {
		if strings.HasSuffix(s, z) {
			s, zone = strings.TrimSuffix(s, z), time.UTC
			break
		}
	}
	layouts := []string{
		"2006-01-02", "2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05",
		"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999",
		"2006-01-02 15:04:05-07:00", "2006-01-02T15:04:05-07:00", "2006-01-02 15:04:05 -0700",
		"2006-01-02T15:04:05.999999999-07:00", "2006-01-02 15:04 -0700", "2006-01-02 15:04:05-0700",
		"2006/01/02", "2006/01/02 15:04", "2006/01/02 15:04:05",
	}
	for _, l := range layouts {
		if t, err := time.ParseInLocation(l, s, zone); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// fuRelDate parses "[+-]N unit[s] [ago]" (units second through year, as
// GNU's parse_datetime names them); days, months and years move on the
// calendar, keeping the time of day.
func fuRelDate(s string, now time.Time) (time.Time, bool) {
	f := strings.Fields(s)
	ago := len(f) == 3 && f[2] == "ago"
	if !(len(f) == 2 || ago) {
		return time.Time{}, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(f[0], "+"))
	if err != nil {
		return time.Time{}, false
	}
	if ago {
		n = -n
	}
	switch strings.TrimSuffix(f[1], "s") {
	case "sec", "second":
		return now.Add(time.Duration(n) * time.Second), true
	case "min", "minute":
		return now.Add(time.Duration(n) * time.Minute), true
	case "hour":
		return now.Add(time.Duration(n) * time.Hour), true
	case "day":
		return now.AddDate(0, 0, n), true
	case "week":
		return now.AddDate(0, 0, 7*n), true
	case "fortnight":
		return now.AddDate(0, 0, 14*n), true
	case "month":
		return now.AddDate(0, n, 0), true
	case "year":
		return now.AddDate(n, 0, 0), true
	}
	return time.Time{}, false
}
