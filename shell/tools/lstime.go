package tools

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// formatTime renders t in the configured time style.
func (l *lister) formatTime(t time.Time) string {
	t = t.In(l.cfg.loc)
	now := l.cfg.now
	recent := t.After(now.Add(-31556952/2*time.Second)) && !t.After(now)
	switch l.cfg.timeStyle {
	case "full-iso":
		return t.Format("2006-01-02 15:04:05.000000000 -0700")
	case "long-iso":
		return t.Format("2006-01-02 15:04")
	case "iso":
		if recent {
			return t.Format("01-02 15:04")
		}
		return t.Format("2006-01-02 ")
	case "", "locale":
		// Files listed together often share a second (and the rendering
		// shows only minutes): reuse the last rendering for the same
		// second.
		sec := t.Unix()
		if l.lastTime != "" && sec == l.lastSec && recent == l.lastRecent {
			return l.lastTime
		}
		var out string
		if recent {
			out = t.Format("Jan _2 15:04")
		} else {
			out = t.Format("Jan _2  2006")
		}
		l.lastSec, l.lastRecent, l.lastTime = sec, recent, out
		return out
	}
	old, rec, two := strings.Cut(l.cfg.timeStyle[1:], "\n")
	if !two {
		rec = old
	}
	f := old
	if recent {
		f = rec
	}
	s, _ := fuStrftime(f, t)
	return s
}

// fuStrftime formats t with the common strftime conversions; ok is false
// when f uses one it does not know.
func fuStrftime(f string, t time.Time) (string, bool) {
	var sb strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			sb.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case '%':
			sb.WriteByte('%')
		case 'Y':
			sb.WriteString(strconv.Itoa(t.Year()))
		case 'y':
			fmt.Fprintf(&sb, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&sb, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&sb, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&sb, "%2d", t.Day())
		case 'H':
			fmt.Fprintf(&sb, "%02d", t.Hour())
		case 'k':
			fmt.Fprintf(&sb, "%2d", t.Hour())
		case 'I':
			fmt.Fprintf(&sb, "%02d", (t.Hour()+11)%12+1)
		case 'l':
			fmt.Fprintf(&sb, "%2d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&sb, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&sb, "%02d", t.Second())
		case 'N':
			fmt.Fprintf(&sb, "%09d", t.Nanosecond())
		case 'p':
			sb.WriteString(t.Format("PM"))
		case 'b', 'h':
			sb.WriteString(t.Format("Jan"))
		case 'B':
			sb.WriteString(t.Format("January"))
		case 'a':
			sb.WriteString(t.Format("Mon"))
		case 'A':
			sb.WriteString(t.Format("Monday"))
		case 'j':
			fmt.Fprintf(&sb, "%03d", t.YearDay())
		case 'z':
			sb.WriteString(t.Format("-0700"))
		case 'Z':
			sb.WriteString(t.Format("MST"))
		case 's':
			sb.WriteString(strconv.FormatInt(t.Unix(), 10))
		case 'T':
			sb.WriteString(t.Format("15:04:05"))
		case 'R':
			sb.WriteString(t.Format("15:04"))
		case 'F':
			fmt.Fprintf(&sb, "%d-%02d-%02d", t.Year(), int(t.Month()), t.Day())
		case 'D':
			sb.WriteString(t.Format("01/02/06"))
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		default:
			return "", false
		}
	}
	return sb.String(), true
}
