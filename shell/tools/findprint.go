package tools

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// findItem is one piece of a -printf format: literal text, or a
// directive with its flags and width.
type findItem struct {
	lit  string
	verb byte   // 0 for literal
	sub  byte   // the k of %Tk, %Ak, %Ck
	spec string // flags and width, "-10" etc.
}

func findParsePrintf(s string, warn func(string)) ([]findItem, error) {
	var items []findItem
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			items = append(items, findItem{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s):
			i++
			switch e := s[i]; e {
			case 'n':
				lit.WriteByte('\n')
			case 't':
				lit.WriteByte('\t')
			case 'r':
				lit.WriteByte('\r')
			case 'a':
				lit.WriteByte('\a')
			case 'b':
				lit.WriteByte('\b')
			case 'f':
				lit.WriteByte('\f')
			case 'v':
				lit.WriteByte('\v')
			case '\\':
				lit.WriteByte('\\')
			case 'c':
				flush()
				items = append(items, findItem{verb: 'c' | 0x80})
				return items, nil
			case '0', '1', '2', '3', '4', '5', '6', '7':
				j := i
				for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
					j++
				}
				n, _ := strconv.ParseUint(s[i:j], 8, 8)
				lit.WriteByte(byte(n))
				i = j - 1
			default:
				lit.WriteByte('\\')
				lit.WriteByte(e)
			}
		case ch == '%' && i+1 < len(s):
			i++
			if s[i] == '%' {
				lit.WriteByte('%')
				continue
			}
			j := i
			for j < len(s) && strings.IndexByte("-+ #0123456789.", s[j]) >= 0 {
				j++
			}
			if j >= len(s) {
				return nil, &findUsage{"error: % at end of format string"}
			}
			it := findItem{spec: s[i:j], verb: s[j]}
			if strings.IndexByte("TAC", s[j]) >= 0 {
				if j+1 >= len(s) {
					return nil, &findUsage{fmt.Sprintf("error: missing time format after %%%c", s[j])}
				}
				j++
				it.sub = s[j]
			}
			if it.verb == 'Z' {
				return nil, &findUnsupported{"-printf %Z"} // SELinux context
			}
			if strings.IndexByte("pfhHPsmMydDlugUGnikbtacTACSYF", it.verb) < 0 {
				// GNU warns and prints an unknown directive as it is.
				warn(fmt.Sprintf("warning: unrecognized format directive `%%%c'", it.verb))
				lit.WriteString(s[i-1 : j+1])
				i = j
				continue
			}
			flush()
			items = append(items, it)
			i = j
		default:
			lit.WriteByte(ch)
		}
	}
	flush()
	return items, nil
}

func (f *finder) printf(e *findEnt, items []findItem) {
	for _, it := range items {
		if it.verb == 0 {
			f.out.WriteString(it.lit)
			continue
		}
		if it.verb == 'c'|0x80 {
			f.quit = true
			return
		}
		v, numeric := f.directive(e, it)
		spec := it.spec
		if spec == "" {
			f.out.WriteString(v)
			continue
		}
		if numeric {
			fmt.Fprintf(f.out, "%"+spec+"s", v)
		} else {
			fmt.Fprintf(f.out, "%"+strings.TrimLeft(spec, "+ #0")+"s", v)
		}
	}
}

// directive returns the text of one %-directive and whether it is a number.
func (f *finder) directive(e *findEnt, it findItem) (string, bool) {
	fi := e.fi
	st := e.stat()
	switch it.verb {
	case 'p':
		return e.path, false
	case 'f':
		return e.baseName(), false
	case 'h':
		p := strings.TrimRight(e.path, "/")
		i := strings.LastIndexByte(p, '/')
		switch {
		case i < 0:
			return ".", false
		case i == 0:
			return "/", false
		}
		return p[:i], false
	case 'H':
		return e.start, false
	case 'P':
		if e.isTop {
			return "", false
		}
		rel := strings.TrimPrefix(e.path, e.start)
		return strings.TrimPrefix(rel, "/"), false
	case 'd':
		return strconv.Itoa(e.depth), true
	case 'D':
		if st != nil {
			return strconv.FormatUint(st.Dev, 10), true
		}
	case 's':
		if fi != nil {
			return strconv.FormatInt(fi.Size(), 10), true
		}
	case 'm':
		if st != nil {
			return strconv.FormatUint(uint64(st.Mode&0o7777), 8), true
		}
	case 'M':
		if fi != nil {
			return findModeString(fi, st), false
		}
	case 'y', 'Y':
		info := fi
		if it.verb == 'Y' {
			info = e.otherInfo()
			if f.follow != 'P' {
				info = fi
			}
			if fi != nil && fi.Mode()&fs.ModeSymlink != 0 {
				if _, err := f.c.FS.Stat(e.abs); err != nil {
					return "N", false
				}
				info, _ = f.c.FS.Stat(e.abs)
			}
		}
		return findTypeLetter(info), false
	case 'l':
		if fi != nil && fi.Mode()&fs.ModeSymlink != 0 {
			t, _ := f.c.FS.Readlink(e.abs)
			return t, false
		}
		return "", false
	case 'u', 'g':
		if st != nil {
			if f.own == nil {
				f.own = newOwners(f.c)
			}
			if it.verb == 'g' {
				return f.own.groupName(st.Gid), false
			}
			return f.own.user(st.Uid), false
		}
	case 'U':
		if st != nil {
			return strconv.FormatUint(uint64(st.Uid), 10), true
		}
	case 'G':
		if st != nil {
			return strconv.FormatUint(uint64(st.Gid), 10), true
		}
	case 'n':
		if st != nil {
			return strconv.FormatUint(st.Nlink, 10), true
		}
	case 'i':
		if st != nil {
			return strconv.FormatUint(st.Ino, 10), true
		}
	case 'k':
		if st != nil {
			return strconv.FormatInt((st.Blocks+1)/2, 10), true
		}
	case 'b':
		if st != nil {
			return strconv.FormatInt(st.Blocks, 10), true
		}
	case 't', 'a', 'c':
		which := map[byte]byte{'t': 'm', 'a': 'a', 'c': 'c'}[it.verb]
		return findCtime(findStatTime(fi, which).In(findTZ(f))), false
	case 'T', 'A', 'C':
		which := map[byte]byte{'T': 'm', 'A': 'a', 'C': 'c'}[it.verb]
		return findTime(findStatTime(fi, which).In(findTZ(f)), it.sub), false
	case 'S':
		if st != nil && fi.Size() > 0 {
			return strconv.FormatFloat(float64(st.Blocks*512)/float64(fi.Size()), 'g', 6, 64), true
		}
		return "1", true
	case 'F':
		return "btrfs", false
	}
	return "", false
}

func findTZ(f *finder) *time.Location {
	if tz, ok := f.c.LookupEnv("TZ"); ok && tz != "" {
		if loc, err := time.LoadLocation(tz); err == nil {
			return loc
		}
	}
	return time.UTC
}

func findTypeLetter(fi fs.FileInfo) string {
	if fi == nil {
		return "N"
	}
	m := fi.Mode()
	switch {
	case m.IsDir():
		return "d"
	case m&fs.ModeSymlink != 0:
		return "l"
	case m&fs.ModeNamedPipe != 0:
		return "p"
	case m&fs.ModeSocket != 0:
		return "s"
	case m&fs.ModeCharDevice != 0:
		return "c"
	case m&fs.ModeDevice != 0:
		return "b"
	}
	return "f"
}

// findCtime is GNU find's %t: ctime(3) with the nanoseconds (and a
// trailing 0, as findutils prints ten fractional digits).
func findCtime(t time.Time) string {
	return fmt.Sprintf("%s %2d %02d:%02d:%02d.%09d0 %d", t.Format("Mon Jan"), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Year())
}

func findTime(t time.Time, k byte) string {
	frac := fmt.Sprintf("%02d.%09d0", t.Second(), t.Nanosecond())
	switch k {
	case '@':
		return fmt.Sprintf("%d.%09d0", t.Unix(), t.Nanosecond())
	case 'Y':
		return strconv.Itoa(t.Year())
	case 'm':
		return fmt.Sprintf("%02d", int(t.Month()))
	case 'd':
		return fmt.Sprintf("%02d", t.Day())
	case 'e':
		return fmt.Sprintf("%2d", t.Day())
	case 'H':
		return fmt.Sprintf("%02d", t.Hour())
	case 'I':
		h := t.Hour() % 12
		if h == 0 {
			h = 12
		}
		return fmt.Sprintf("%02d", h)
	case 'k':
		return fmt.Sprintf("%2d", t.Hour())
	case 'l':
		h := t.Hour() % 12
		if h == 0 {
			h = 12
		}
		return fmt.Sprintf("%2d", h)
	case 'M':
		return fmt.Sprintf("%02d", t.Minute())
	case 'S':
		return frac
	case 'T':
		return fmt.Sprintf("%02d:%02d:%s", t.Hour(), t.Minute(), frac)
	case '+':
		return fmt.Sprintf("%s+%02d:%02d:%s", t.Format("2006-01-02"), t.Hour(), t.Minute(), frac)
	case 'F':
		return t.Format("2006-01-02")
	case 'D':
		return t.Format("01/02/06")
	case 'y':
		return t.Format("06")
	case 'j':
		return fmt.Sprintf("%03d", t.YearDay())
	case 'a':
		return t.Format("Mon")
	case 'A':
		return t.Format("Monday")
	case 'b', 'h':
		return t.Format("Jan")
	case 'B':
		return t.Format("January")
	case 'p':
		return t.Format("PM")
	case 'r':
		return t.Format("03:04:05 PM")
	case 'R':
		return t.Format("15:04")
	case 's':
		return strconv.FormatInt(t.Unix(), 10)
	case 'u':
		w := int(t.Weekday())
		if w == 0 {
			w = 7
		}
		return strconv.Itoa(w)
	case 'w':
		return strconv.Itoa(int(t.Weekday()))
	case 'x':
		return t.Format("01/02/06")
	case 'X':
		return t.Format("15:04:05")
	case 'c':
		return t.Format("Mon Jan _2 15:04:05 2006")
	case 'Z':
		return t.Format("MST")
	case 'z':
		return t.Format("-0700")
	}
	return ""
}

// findModeString is ls -l's mode column.
func findModeString(fi fs.FileInfo, st *unix.Stat_t) string {
	m := fi.Mode()
	if st != nil {
		m = m.Type() | fs.FileMode(st.Mode&0o777)
		if st.Mode&unix.S_ISUID != 0 {
			m |= fs.ModeSetuid
		}
		if st.Mode&unix.S_ISGID != 0 {
			m |= fs.ModeSetgid
		}
		if st.Mode&unix.S_ISVTX != 0 {
			m |= fs.ModeSticky
		}
	}
	b := []byte(findTypeLetter(fi))
	if b[0] == 'f' {
		b[0] = '-'
	}
	rwx := "rwxrwxrwx"
	for i := 0; i < 9; i++ {
		if m&(1<<uint(8-i)) != 0 {
			b = append(b, rwx[i])
		} else {
			b = append(b, '-')
		}
	}
	if m&fs.ModeSetuid != 0 {
		b[3] = "Ss"[findBtoi(b[3] == 'x')]
	}
	if m&fs.ModeSetgid != 0 {
		b[6] = "Ss"[findBtoi(b[6] == 'x')]
	}
	if m&fs.ModeSticky != 0 {
		b[9] = "Tt"[findBtoi(b[9] == 'x')]
	}
	return string(b)
}

func findBtoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
