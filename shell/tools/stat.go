package tools

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"rung.dev/rung/shell"
)

// stat displays file status like GNU stat 9.1. The file view exposes
// stat(2), not statx(2), so the birth time is unknown: %w prints "-" and
// %W "0" (GNU prints them when the filesystem records a birth time).
// -f (file system status), SELinux contexts (%C) and the mount point (%m:
// the container's mounts, which the host's differ from) are refused.
// Other letters print "?" as GNU's do; a precision on %X %Y %Z prints
// fractions of a second.

var statSpec = fuNewSpec([]string{"L,dereference", "c,format=", "printf=", "t,terse"},
	"f,file-system", "cached=", "help", "version")

func runStat(ctx context.Context, c *shell.Call) int {
	opts, files, status, ok := statSpec.parse(c, 1)
	if !ok {
		return status
	}
	var deref, terse, hasFormat bool
	format := ""
	for _, o := range opts {
		switch o.Key {
		case "dereference":
			deref = true
		case "format":
			format, hasFormat = o.Value+"\n", true
		case "printf":
			format, hasFormat = statEscapes(o.Value), true
		case "terse":
			terse = true
		}
	}
	if len(files) == 0 {
		return usage(c, errors.New("missing operand"), 1)
	}
	if hasFormat {
		if err := statCheckFormat(format); err != "" {
			return c.Fail("format directive " + err)
		}
	}
	loc := fuLocation(c)
	own := newOwners(c)
	for _, f := range files {
		if ctx.Err() != nil {
			return 130
		}
		var st fuStat
		var err error
		if deref {
			st, err = fuStatPath(c, f)
		} else {
			st, err = fuLstat(c, f)
		}
		if err != nil {
			c.Errorf("cannot statx %s: %s", fuQuote(f), fuErr(err))
			status = 1
			continue
		}
		s := &statFile{c: c, own: own, name: f, st: st, loc: loc, deref: deref}
		var fm string
		switch {
		case hasFormat:
			fm = format
		case terse:
			fm = "%n %s %b %f %u %g %D %i %h %t %T %X %Y %Z %W %o\n"
		default:
			fm = statDefault(st)
			s.plainName = true
		}
		c.Stdout.Write([]byte(s.format(fm)))
	}
	return status
}

func statDefault(st fuStat) string {
	dev := "%h"
	if m := st.Mode & 0o170000; m == 0o020000 || m == 0o060000 {
		dev = "%-5h Device type: %Hr,%Lr"
	}
	return "  File: %N\n  Size: %-10s\tBlocks: %-10b IO Block: %-6o %F\n" +
		"Device: %Hd,%Ld\tInode: %-10i  Links: " + dev + "\n" +
		"Access: (%04a/%10.10A)  Uid: (%5u/%8U)   Gid: (%5g/%8G)\n" +
		"Access: %x\nModify: %y\nChange: %z\n Birth: %w\n"
}

// statCheck is stat's Check: besides unknown options, a format with a
// directive the tool lacks, and the default format, which ends with the
// birth time; see statFormatRefused for the rest.
func statCheck(args []string) error {
	if err := statSpec.check(args); err != nil {
		return err
	}
	opts, _, err := statSpec.opts.Parse(args)
	if err != nil {
		return nil
	}
	format, terse := "", false
	hasFormat := false
	for _, o := range opts {
		switch o.Key {
		case "format", "printf":
			format, hasFormat = o.Value, true
		case "terse":
			terse = true
		}
	}
	switch {
	case !hasFormat && !terse:
		return fmt.Errorf("stat's default format (birth time): %w", shell.ErrUnsupported)
	case !hasFormat || format == shell.Unknown:
		return nil
	}
	if d := statCheckFormat(format); d != "" {
		return fmt.Errorf("stat format directive %s: %w", d, shell.ErrUnsupported)
	}
	if d := statFormatRefused(format); d != "" {
		return fmt.Errorf("stat %s: %w", d, shell.ErrUnsupported)
	}
	return nil
}

// statFormatRefused returns the first directive of format the Check
// refuses though the tool has it: %w and %W (the view's stat(2) has no
// birth time).
func statFormatRefused(f string) string {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("-#0 +'.0123456789", f[j]) >= 0 {
			j++
		}
		if j < len(f) && f[j] != '%' && strings.IndexByte("wW", f[j]) >= 0 {
			return f[i : j+1]
		}
		i = j
	}
	return ""
}

// statCheckFormat returns the first directive we do not implement, or "".
func statCheckFormat(f string) string {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("-#0 +'.0123456789", f[j]) >= 0 {
			j++
		}
		if j < len(f) && (f[j] == 'H' || f[j] == 'L') {
			switch {
			case j+1 == len(f):
				return "%" + f[i+1:]
			case f[j+1] != 'd' && f[j+1] != 'r':
				i = j // "?", then the next byte as it is
				continue
			}
			j++
		}
		if j >= len(f) {
			return ""
		}
		if strings.IndexByte("%aAbBdDfFgGhinNostTuUwWxXyYzZrR", f[j]) < 0 && !statUnknownLetter(f[j]) {
			return "%" + f[i+1:j+1]
		}
		i = j
	}
	return ""
}

// statUnknownLetter: a letter GNU stat prints as "?" in a file's
// format (the file system's directives among them), flags and width
// ignored. %C (SELinux context), %m (mount point) and %I (an invalid
// directive: a printf flag) are not.
func statUnknownLetter(b byte) bool {
	return (b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z') && strings.IndexByte("CIm", b) < 0
}

type statFile struct {
	c         *shell.Call
	own       *owners
	name      string
	st        fuStat
	loc       *time.Location
	deref     bool
	plainName bool // default format: name and link target unquoted
}

func (s *statFile) format(f string) string {
	var sb strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			sb.WriteByte(f[i])
			continue
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("-#0 +'.0123456789", f[j]) >= 0 {
			j++
		}
		flags := f[i+1 : j]
		mod := byte(0)
		if j < len(f) && (f[j] == 'H' || f[j] == 'L') && j+1 < len(f) && strings.IndexByte("dr", f[j+1]) >= 0 {
			mod = f[j]
			j++
		}
		if j >= len(f) {
			sb.WriteString(f[i:])
			break
		}
		if f[j] == '%' {
			sb.WriteByte('%')
			i = j
			continue
		}
		if strings.IndexByte("XYZ", f[j]) >= 0 && strings.Contains(flags, ".") {
			sb.WriteString(statTimePad(flags, s.timeOf(f[j])))
			i = j
			continue
		}
		val, numeric := s.directive(f[j], mod)
		if val == "?" {
			sb.WriteString(val) // GNU ignores the flags of an unknown directive
		} else {
			sb.WriteString(statPad(flags, val, numeric))
		}
		i = j
	}
	return sb.String()
}

// statPad applies printf-style flags, width and precision to a value.
func statPad(flags, val string, numeric bool) string {
	if flags == "" {
		return val
	}
	spec := "%" + strings.ReplaceAll(flags, "'", "")
	if numeric {
		if n, err := strconv.ParseInt(val, 10, 64); err == nil {
			return fmt.Sprintf(spec+"d", n)
		}
		if n, err := strconv.ParseUint(val, 10, 64); err == nil {
			return fmt.Sprintf(spec+"d", n)
		}
	}
	return fmt.Sprintf(spec+"s", val)
}

func (s *statFile) directive(d, mod byte) (string, bool) {
	st := s.st
	u := func(n uint64) (string, bool) { return strconv.FormatUint(n, 10), true }
	switch d {
	case 'a':
		return strconv.FormatUint(uint64(st.Mode&0o7777), 8), true
	case 'A':
		return fuModeString(st.Mode), false
	case 'b':
		return u(uint64(st.Blocks))
	case 'B':
		return "512", true
	case 'd':
		switch mod {
		case 'H':
			return u(uint64(devMajor(st.Dev)))
		case 'L':
			return u(uint64(devMinor(st.Dev)))
		}
		return u(st.Dev)
	case 'r':
		switch mod {
		case 'H':
			return u(uint64(devMajor(st.Rdev)))
		case 'L':
			return u(uint64(devMinor(st.Rdev)))
		}
		return u(st.Rdev)
	case 'R':
		return strconv.FormatUint(st.Rdev, 16), false
	case 'D':
		return strconv.FormatUint(st.Dev, 16), false
	case 'f':
		return strconv.FormatUint(uint64(st.Mode), 16), false
	case 'F':
		return fuTypeName(st), false
	case 'g':
		return u(uint64(st.Gid))
	case 'G':
		return s.own.groupName(st.Gid), false
	case 'h':
		return u(st.Nlink)
	case 'i':
		return u(st.Ino)
	case 'n':
		return s.name, false
	case 'N':
		return s.quotedName(), false
	case 'o':
		return u(uint64(st.Blksize))
	case 's':
		return strconv.FormatInt(st.Size, 10), true
	case 't':
		return strconv.FormatUint(uint64(devMajor(st.Rdev)), 16), false
	case 'T':
		return strconv.FormatUint(uint64(devMinor(st.Rdev)), 16), false
	case 'u':
		return u(uint64(st.Uid))
	case 'U':
		return s.own.user(st.Uid), false
	case 'w':
		return "-", false
	case 'W':
		return "0", true
	case 'x':
		return s.time(st.Atim), false
	case 'X':
		return strconv.FormatInt(st.Atim.Unix(), 10), true
	case 'y':
		return s.time(st.Mtim), false
	case 'Y':
		return strconv.FormatInt(st.Mtim.Unix(), 10), true
	case 'z':
		return s.time(st.Ctim), false
	case 'Z':
		return strconv.FormatInt(st.Ctim.Unix(), 10), true
	}
	return "?", false
}

func (s *statFile) timeOf(d byte) time.Time {
	switch d {
	case 'X':
		return s.st.Atim
	case 'Y':
		return s.st.Mtim
	}
	return s.st.Ctim
}

// statTimePad is %X, %Y or %Z with a precision: seconds since the epoch
// and that many digits of the fraction (9 when the precision is empty,
// zeros past 9), then flags and width over the whole number.
func statTimePad(flags string, t time.Time) string {
	dot := strings.IndexByte(flags, '.')
	prec := 9
	if p := flags[dot+1:]; p != "" {
		prec, _ = strconv.Atoi(p)
	}
	sec, ns := t.Unix(), int64(t.Nanosecond())
	neg := sec < 0
	if neg && ns > 0 {
		sec, ns = sec+1, 1e9-ns
	}
	digits := strconv.FormatInt(sec, 10)
	if neg && sec == 0 {
		digits = "-0"
	}
	if prec == 0 {
		digits = strconv.FormatInt(t.Unix(), 10) // whole seconds round down
	} else {
		frac := fmt.Sprintf("%09d", ns)
		if prec < 9 {
			frac = frac[:prec]
		} else {
			frac += strings.Repeat("0", prec-9)
		}
		digits += "." + frac
	}
	k := 0
	for k < dot && strings.IndexByte("-#0 +'", flags[k]) >= 0 {
		k++
	}
	width, _ := strconv.Atoi(flags[k:dot])
	flags = flags[:k]
	sign := ""
	if !neg {
		if strings.Contains(flags, "+") {
			sign = "+"
		} else if strings.Contains(flags, " ") {
			sign = " "
		}
	} else {
		sign, digits = "-", digits[1:]
	}
	pad := width - len(sign) - len(digits)
	switch {
	case pad <= 0:
		return sign + digits
	case strings.Contains(flags, "-"):
		return sign + digits + strings.Repeat(" ", pad)
	case strings.Contains(flags, "0"):
		return sign + strings.Repeat("0", pad) + digits
	}
	return strings.Repeat(" ", pad) + sign + digits
}

func (s *statFile) time(t time.Time) string {
	return t.In(s.loc).Format("2006-01-02 15:04:05.000000000 -0700")
}

func (s *statFile) quotedName() string {
	q := fuQuote
	if s.plainName {
		q = func(n string) string { return n }
	}
	out := q(s.name)
	if s.st.isLink() && !s.deref {
		if t, err := s.c.FS.Readlink(s.c.Abs(s.name)); err == nil {
			out += " -> " + q(t)
		}
	}
	return out
}

// fuTypeName is stat's %F, and the type rm -i names in its prompts.
func fuTypeName(st fuStat) string {
	switch st.Mode & 0o170000 {
	case 0o100000:
		if st.Size == 0 {
			return "regular empty file"
		}
		return "regular file"
	case 0o040000:
		return "directory"
	case 0o120000:
		return "symbolic link"
	case 0o010000:
		return "fifo"
	case 0o140000:
		return "socket"
	case 0o020000:
		return "character special file"
	case 0o060000:
		return "block special file"
	}
	return "weird file"
}

// statEscapes interprets --printf's backslash escapes.
func statEscapes(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			sb.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		case '\\':
			sb.WriteByte('\\')
		case 'a':
			sb.WriteByte('\a')
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'r':
			sb.WriteByte('\r')
		case 'v':
			sb.WriteByte('\v')
		case '"':
			sb.WriteByte('"')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n, k := 0, 0
			for k < 3 && i < len(s) && s[i] >= '0' && s[i] <= '7' {
				n = n*8 + int(s[i]-'0')
				i++
				k++
			}
			i--
			sb.WriteByte(byte(n))
		default:
			sb.WriteByte('\\')
			sb.WriteByte(s[i])
		}
	}
	return sb.String()
}
