package shell

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The mvdan/sh parser rejects a few constructs that bash accepts because
// bash decides them later or differently. reparse rewrites the source
// around such an error into an equivalent that the parser takes, keeping
// every line where it was (so $LINENO and the statements already run are
// unchanged), and the script is parsed again. It is only reached on a
// parse error, so scripts that parse cost nothing.
//
//   - A here-document delimiter with an expansion in it (cat <<EOF$(x)):
//     bash takes the word literally, after quote removal. The word and its
//     terminator line become a plain placeholder word.
//   - $(( that does not close with )): bash reads it as a command
//     substitution of a subshell, $( (...) ...). A space is inserted.
//   - $(( ... )) whose content is no arithmetic expression: bash parses
//     arithmetic when it expands it and fails then (status 1, after the
//     commands before it ran). The content is quoted, so that the
//     evaluator reports the error at run time.

// extglobOff returns the syntax error bash reports for an extended glob
// pattern parsed while extglob is off (bash decides that when it reads
// the line, so `shopt -s extglob; echo @(a)` on one line fails), or nil.
// Patterns inside [[ ]] and ${...} are always accepted.
func extglobOff(src string, stmts []*syntax.Stmt) error {
	from, to := stmts[0].Pos().Offset(), stmts[len(stmts)-1].End().Offset()
	if to > uint(len(src)) || from > to || !maybeExtglob(src[from:to]) {
		return nil
	}
	var bad *syntax.ExtGlob
	for _, st := range stmts {
		syntax.Walk(st, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.TestClause, *syntax.ParamExp:
				return false
			case *syntax.ExtGlob:
				if bad == nil {
					bad = n
				}
				return false
			}
			return bad == nil
		})
	}
	if bad == nil {
		return nil
	}
	return syntax.ParseError{Pos: bad.OpPos, Text: "near unexpected token `('"}
}

// maybeExtglob reports whether s has one of ?( *( +( @( !(.
func maybeExtglob(s string) bool {
	for i := 1; i < len(s); i++ {
		if s[i] == '(' && strings.IndexByte("?*+@!", s[i-1]) >= 0 {
			return true
		}
	}
	return false
}

// reparseMax bounds how many rewrites one script may need.
const reparseMax = 16

// reparse returns src rewritten around err, or false when err is not one
// it knows how to work around. warn is a warning bash prints while
// parsing, or "".
func reparse(src string, err error) (fixed, warn string, ok bool) {
	var pe syntax.ParseError
	if !errors.As(err, &pe) {
		return "", "", false
	}
	off := int(pe.Pos.Offset())
	if off < 0 || off > len(src) {
		return "", "", false
	}
	if q, ok := strings.CutPrefix(pe.Text, "unclosed here-document "); ok {
		// bash reads the body to the end of the input, with a warning.
		stop, err := strconv.Unquote(q)
		if err != nil || strings.Contains(stop, "\n") {
			return "", "", false
		}
		return eofHeredoc(src, int(pe.Pos.Line()), stop, stop)
	}
	if strings.HasPrefix(pe.Text, "near unexpected token") {
		return "", "", false
	}
	if strings.Contains(pe.Text, "heredoc words") {
		return reparseHeredoc(src, off)
	}
	fixed, ok = reparseArith(src, off)
	return fixed, "", ok
}

// eofHeredoc ends src with the terminator stop of a here-document that
// started on line and wanted the delimiter wanted.
func eofHeredoc(src string, line int, stop, wanted string) (fixed, warn string, ok bool) {
	if !strings.HasSuffix(src, "\n") {
		src += "\n"
	}
	last := strings.Count(src, "\n")
	warn = fmt.Sprintf("bash: line %d: warning: here-document at line %d delimited by end-of-file (wanted `%s')", last, line, wanted)
	return src + stop + "\n", warn, true
}

// reparseHeredoc replaces the here-document word whose expansion starts
// at off, and its terminator line, with a placeholder.
func reparseHeredoc(src string, off int) (fixed, warn string, ok bool) {
	ls := strings.LastIndexByte(src[:off], '\n') + 1
	op := strings.LastIndex(src[ls:off], "<<")
	if op < 0 {
		return "", "", false
	}
	ws := ls + op + 2
	dash := false
	if ws < len(src) && src[ws] == '-' {
		dash = true
		ws++
	}
	for ws < len(src) && (src[ws] == ' ' || src[ws] == '\t') {
		ws++
	}
	we := srcWordEnd(src, ws)
	if we <= ws || we < off {
		return "", "", false
	}
	word := src[ws:we]
	delim, quoted := heredocDelim(word)
	ph := "RUNG_HEREDOC"
	for i := 0; strings.Contains(src, ph); i++ {
		ph = "RUNG_HEREDOC_" + strconv.Itoa(i)
	}
	repl := ph
	if quoted {
		repl = "'" + ph + "'"
	}
	// The body starts on the line after the operator's (a later
	// here-document on the same line may come first; that is rare).
	nl := strings.IndexByte(src[we:], '\n')
	out := src[:ws] + repl + src[we:]
	line := strings.Count(src[:ws], "\n") + 1
	if nl < 0 {
		return eofHeredoc(out, line, ph, word)
	}
	body := we + nl + 1
	shift := len(repl) - len(word)
	for p := body; p < len(src); {
		e := strings.IndexByte(src[p:], '\n')
		if e < 0 {
			e = len(src)
		} else {
			e += p
		}
		text := src[p:e]
		if dash {
			text = strings.TrimLeft(text, "\t")
		}
		if text == delim {
			start := e - len(delim) + shift
			return out[:start] + ph + out[e+shift:], "", true
		}
		p = e + 1
	}
	return eofHeredoc(out, line, ph, word)
}

// heredocDelim is a here-document word after quote removal, and whether
// it was quoted (the body is then not expanded).
func heredocDelim(word string) (string, bool) {
	var sb strings.Builder
	quoted := false
	for i := 0; i < len(word); i++ {
		switch c := word[i]; c {
		case '\'':
			quoted = true
			j := strings.IndexByte(word[i+1:], '\'')
			if j < 0 {
				sb.WriteString(word[i+1:])
				return sb.String(), true
			}
			sb.WriteString(word[i+1 : i+1+j])
			i += j + 1
		case '"':
			quoted = true
		case '$', '`':
			// Quotes inside $(...), ${...} and `...` stay and do not
			// make the word quoted.
			e := i + 1
			switch {
			case c == '`':
				e = strings.IndexByte(word[i+1:], '`') + i + 2
			case i+1 < len(word) && word[i+1] == '(':
				e = srcParenEnd(word, i+1)
			case i+1 < len(word) && word[i+1] == '{':
				e = strings.IndexByte(word[i+1:], '}') + i + 2
			}
			if e <= i {
				e = len(word)
			}
			sb.WriteString(word[i:e])
			i = e - 1
		case '\\':
			quoted = true
			if i+1 < len(word) {
				i++
				sb.WriteByte(word[i])
			}
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String(), quoted
}

// srcWordEnd returns where the shell word starting at i ends: at an unquoted
// blank, newline or operator character, with quotes, $(...), ${...},
// `...` and <(...) / >(...) taken whole.
func srcWordEnd(s string, i int) int {
	for i < len(s) {
		switch c := s[i]; c {
		case ' ', '\t', '\n', ';', '&', '|', ')':
			return i
		case '<', '>':
			if i+1 < len(s) && s[i+1] == '(' {
				i = srcParenEnd(s, i+1)
				continue
			}
			return i
		case '(':
			return i
		case '\\':
			i += 2
		case '\'', '`':
			i = srcPast(s, i, c)
		case '"':
			i = srcQuoteEnd(s, i+1)
		case '$':
			switch {
			case i+1 < len(s) && s[i+1] == '(':
				i = srcParenEnd(s, i+1)
			case i+1 < len(s) && s[i+1] == '{':
				i = srcPast(s, i, '}')
			default:
				i++
			}
		default:
			i++
		}
	}
	return i
}

// srcQuoteEnd returns the index after the double quote closing a string
// whose content starts at i.
func srcQuoteEnd(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case '\\':
			i += 2
		case '"':
			return i + 1
		case '$':
			if i+1 < len(s) && s[i+1] == '(' {
				i = srcParenEnd(s, i+1)
				continue
			}
			i++
		case '`':
			i = srcPast(s, i, '`')
		default:
			i++
		}
	}
	return len(s)
}

// srcPast returns the index after the first c following s[i], the
// character that opened a quoted run; len(s) when there is none.
func srcPast(s string, i int, c byte) int {
	if j := strings.IndexByte(s[i+1:], c); j >= 0 {
		return i + j + 2
	}
	return len(s)
}

// srcParenEnd returns the index after the parenthesis matching the one at
// s[i], skipping quoted text; len(s) when it is not closed.
func srcParenEnd(s string, i int) int {
	depth := 0
	for i < len(s) {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i + 1
			}
		case '\\':
			i++
		case '\'':
			i = srcPast(s, i, '\'') - 1
		case '"':
			i = srcQuoteEnd(s, i+1) - 1
		}
		i++
	}
	return len(s)
}

// reparseArith fixes the innermost $(( before off that encloses it.
func reparseArith(src string, off int) (string, bool) {
	for s := strings.LastIndex(src[:min(off+1, len(src))], "$(("); s >= 0; s = strings.LastIndex(src[:s], "$((") {
		inner := srcParenEnd(src, s+2) // closes the second parenthesis
		if inner > len(src) || inner <= s+2 {
			continue
		}
		if inner < len(src) && src[inner] == ')' {
			if inner < off {
				continue // a complete $((...)) before the error
			}
			// Arithmetic that the parser cannot take: let it fail at
			// run time, as bash does.
			content := src[s+3 : inner-1]
			if strings.ContainsAny(content, "\"\n") || strings.TrimSpace(content) == "" {
				return "", false
			}
			return src[:s+3] + `"` + content + `"` + src[inner-1:], true
		}
		outer := srcParenEnd(src, s+1)
		if outer < off && outer < len(src) {
			continue
		}
		return src[:s+2] + " " + src[s+2:], true
	}
	return "", false
}
