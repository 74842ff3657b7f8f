package tools

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds how ls filters names (-I, --hide, -B) and prints them
// (quoting styles, -q, -m).

// lsFormats are --format's words.
var lsFormats = map[string]lsFormat{
	"long": lsLong, "verbose": lsLong, "commas": lsCommas, "horizontal": lsAcross, "across": lsAcross,
	"vertical": lsColumns, "single-column": lsOnePerLine,
}

// lsQuotingStyles are --quoting-style's words that ls implements; GNU's
// locale and clocale styles quote with the locale's quotes and are not
// among them.
var lsQuotingStyles = map[string]bool{
	"literal": true, "shell": true, "shell-always": true, "shell-escape": true, "shell-escape-always": true,
	"c": true, "escape": true,
}

// lsQuotingUnimpl are GNU's quoting styles that ls refuses (the run goes
// to the container): they depend on the locale's quotation marks.
var lsQuotingUnimpl = map[string]bool{"c-maybe": true, "locale": true, "clocale": true}

// ignored reports whether a directory entry is left out by -I, -B or
// --hide. The patterns match as fnmatch(3) with FNM_PERIOD does: a
// leading dot only matches a dot.
func (l *lister) ignored(name string) bool {
	for _, pats := range [][]string{l.cfg.ignore, l.cfg.hide} {
		for _, p := range pats {
			if name[0] == '.' && (p == "" || p[0] != '.') {
				continue
			}
			if srchFnmatch(p, name) {
				return true
			}
		}
	}
	return false
}

// shown is name as ls prints it in the configured quoting style.
func (l *lister) shown(name string) string {
	switch l.cfg.quoting {
	case "escape":
		return lsCEscape(name, false)
	case "c":
		return `"` + lsCEscape(name, true) + `"`
	case "shell", "shell-always", "shell-escape", "shell-escape-always":
		return lsShellQuote(name, l.cfg.quoting, l.cfg.hideCtl)
	}
	if l.cfg.hideCtl {
		return lsHideControl(name)
	}
	return name
}

// lsHideControl replaces what is not printable with '?', as -q does.
func lsHideControl(s string) string {
	if lsPrintable(s) {
		return s
	}
	var sb strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n == 1 || !unicode.IsPrint(r) {
			sb.WriteByte('?')
		} else {
			sb.WriteString(s[:n])
		}
		s = s[n:]
	}
	return sb.String()
}

func lsPrintable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// lsCEscape renders s with C escapes: backslash, control characters and
// invalid bytes as \ooo; in a double-quoted name (quoted), a '"' is
// escaped, else a space is (the escape style).
func lsCEscape(s string, quoted bool) string {
	var sb strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == '\\':
			sb.WriteString(`\\`)
		case r == '"' && quoted:
			sb.WriteString(`\"`)
		case r == ' ' && !quoted:
			sb.WriteString(`\ `)
		case r < 0x80 && lsCEscapes[byte(r)] != 0:
			sb.WriteByte('\\')
			sb.WriteByte(lsCEscapes[byte(r)])
		case r == utf8.RuneError && n == 1 || !unicode.IsPrint(r):
			for i := 0; i < n; i++ {
				sb.WriteByte('\\')
				o := strconv.FormatUint(uint64(s[i]), 8)
				sb.WriteString(strings.Repeat("0", 3-len(o)) + o)
			}
		default:
			sb.WriteString(s[:n])
		}
		s = s[n:]
	}
	return sb.String()
}

var lsCEscapes = [128]byte{'\a': 'a', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't', '\v': 'v'}

// lsShellQuote renders s for a shell: single quotes when it holds a
// character the shell would read specially (always, in the -always
// styles), double quotes when it holds a single quote and nothing a
// double quote would expand; in the -escape styles a character that is
// not printable is written as $'\ooo' between quoted parts, else (-q)
// as '?' or as itself.
func lsShellQuote(s, style string, hideCtl bool) string {
	escape := strings.HasPrefix(style, "shell-escape")
	always := strings.HasSuffix(style, "-always")
	if !lsPrintable(s) && !escape {
		if hideCtl {
			s = lsHideControl(s)
		}
	}
	need := always || s == ""
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '#', '~':
			need = need || i == 0
		case ' ', '!', '"', '$', '&', '(', ')', '*', ';', '<', '=', '>', '[', '^', '`', '|', '\'', '\\', '?', '\t', '\n':
			need = true
		}
	}
	if escape && !lsPrintable(s) {
		need = true
	}
	if !need {
		return s
	}
	if escape && !lsPrintable(s) {
		var sb strings.Builder
		sb.WriteByte('\'')
		for len(s) > 0 {
			r, n := utf8.DecodeRuneInString(s)
			switch {
			case r == '\'':
				sb.WriteString(`'\''`)
			case r == utf8.RuneError && n == 1 || !unicode.IsPrint(r):
				sb.WriteString(`'$'`)
				if r < 0x80 && lsCEscapes[byte(r)] != 0 {
					sb.WriteByte('\\')
					sb.WriteByte(lsCEscapes[byte(r)])
				} else {
					for i := 0; i < n; i++ {
						o := strconv.FormatUint(uint64(s[i]), 8)
						sb.WriteString(`\` + strings.Repeat("0", 3-len(o)) + o)
					}
				}
				sb.WriteString(`''`)
			default:
				sb.WriteString(s[:n])
			}
			s = s[n:]
		}
		sb.WriteByte('\'')
		out := sb.String()
		// GNU drops the empty '' pairs its escapes leave behind.
		out = strings.TrimSuffix(out, "''")
		out = strings.TrimPrefix(out, "''")
		return out
	}
	if strings.Contains(s, "'") && lsShellQuote(strings.ReplaceAll(s, "'", ""), "shell", false) == strings.ReplaceAll(s, "'", "") {
		// A single quote is the only special character.
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printCommas prints ents as -m does: separated by ", ", a line broken
// before a name that would reach the width.
func (l *lister) printCommas(ents []*lsEntry) {
	pos := 0
	for i, e := range ents {
		name := l.shown(e.name) + l.indicator(e.st.Mode, e.statOK)
		n := utf8.RuneCountInString(name)
		if i > 0 {
			l.w.WriteByte(',')
			if l.cfg.width == 0 || pos+n+2 < l.cfg.width {
				l.w.WriteByte(' ')
				pos += 2
			} else {
				l.w.WriteByte('\n')
				pos = 0
			}
		}
		l.w.WriteString(name)
		pos += n
	}
	if len(ents) > 0 {
		l.w.WriteByte('\n')
	}
}
