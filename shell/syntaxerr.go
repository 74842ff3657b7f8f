package shell

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// bashSyntax is how bash -c reports a syntax error: the lines it writes to
// stderr, each already prefixed with the shell's name, and the exit status.
type bashSyntax struct {
	lines  []string
	status int
}

// translateSyntax renders pe, a parse error of mvdan/sh in src (the -c
// string with its final newline, or a script file's text when file), in the words bash 5.2 uses for the same
// mistake, or reports false when it does not know bash's wording for it
// (the caller then keeps the parser's own text). bash's parser fails at a
// token, so the translation finds that token in src:
//
//   - a token where none may stand (`fi`, `;;`, `)`, a `|` at the start):
//     "syntax error near unexpected token `fi'", then the line itself;
//   - an operator whose operand is missing (`>` before `;`): the token
//     found in its place, "newline" at the end of the line;
//   - the end of the text inside a compound command or after `|`, `&&`:
//     "syntax error: unexpected end of file" on the line after the last;
//   - an unclosed quote, `$(` or `${`: "unexpected EOF while looking for
//     matching `X'";
//   - a ${...} that is no parameter expansion: "${...}: bad substitution",
//     which bash reports when it expands it (status 1).
func translateSyntax(arg0 string, file bool, src string, pe syntax.ParseError) (bashSyntax, bool) {
	prefix := arg0 + ": -c"
	if file {
		prefix = arg0
	}
	off := int(pe.Pos.Offset())
	if off < 0 || off > len(src) {
		return bashSyntax{}, false
	}
	line := int(pe.Pos.Line())
	eofLine := strings.Count(src, "\n") + 1
	if !strings.HasSuffix(src, "\n") {
		eofLine++
	}
	msg := pe.Text
	near := func(tok string, at int) (bashSyntax, bool) {
		ln := lineAt(src, at)
		return bashSyntax{status: 2, lines: []string{
			fmt.Sprintf("%s: line %d: syntax error near unexpected token `%s'", prefix, ln, tok),
			fmt.Sprintf("%s: line %d: `%s'", prefix, ln, lineText(src, at)),
		}}, true
	}
	eof := func() (bashSyntax, bool) {
		return bashSyntax{status: 2, lines: []string{fmt.Sprintf("%s: line %d: syntax error: unexpected end of file", prefix, eofLine)}}, true
	}
	matching := func(ln int, closer string) (bashSyntax, bool) {
		return bashSyntax{status: 2, lines: []string{fmt.Sprintf("%s: line %d: unexpected EOF while looking for matching `%s'", prefix, ln, closer)}}, true
	}
	switch {
	case strings.HasPrefix(msg, "near unexpected token `") && strings.HasSuffix(msg, "'"):
		// The interpreter's own error in bash's words (extglobOff).
		return near(strings.TrimSuffix(strings.TrimPrefix(msg, "near unexpected token `"), "'"), off)
	case badSubstMsg(msg) && innermostOpener(src, off) == "${":
		start := strings.LastIndex(src[:off], "${")
		end := strings.IndexByte(src[off:], '}')
		if end < 0 {
			return matching(lineAt(src, start), "}")
		}
		text := src[start : off+end+1]
		if strings.Contains(text, "\n") {
			return bashSyntax{}, false
		}
		return bashSyntax{status: 1, lines: []string{fmt.Sprintf("%s: line %d: %s: bad substitution", arg0, lineAt(src, start), text)}}, true
	case strings.HasPrefix(msg, "reached EOF without closing quote"):
		q := src[off]
		if q == '$' && off+1 < len(src) {
			q = src[off+1]
		}
		if q != '"' && q != '\'' && q != '`' {
			return bashSyntax{}, false
		}
		return matching(line, string(q))
	case strings.HasPrefix(msg, "reached EOF without matching "):
		switch {
		case strings.HasPrefix(msg, "reached EOF without matching `$(` "):
			return matching(eofLine, ")")
		case strings.HasPrefix(msg, "reached EOF without matching `${` "):
			return matching(line, "}")
		case strings.HasPrefix(msg, "reached EOF without matching `{` "),
			strings.HasPrefix(msg, "reached EOF without matching `(` "):
			return eof()
		}
	case strings.HasSuffix(msg, " statement must end with `fi`"),
		strings.HasSuffix(msg, " statement must end with `done`"),
		strings.HasSuffix(msg, " statement must end with `esac`"):
		if strings.TrimSpace(src[off:]) == "" || !restHasWord(src[off:], closerOf(msg)) {
			return eof()
		}
	case strings.Contains(msg, " can only be used ") || strings.HasSuffix(msg, " can only immediately follow a statement") ||
		strings.HasSuffix(msg, " is not a valid start for a statement"):
		tok, ok := quoted(msg)
		if !ok || !strings.HasPrefix(src[off:], tok) || tokenAt(src, off) != tok {
			return bashSyntax{}, false
		}
		return near(tok, off)
	case strings.HasSuffix(msg, " must be followed by a word"):
		tok, ok := quoted(msg)
		if !ok || !isRedirOp(tok) || !strings.HasPrefix(src[off:], tok) {
			return bashSyntax{}, false
		}
		at := skipBlanks(src, off+len(tok))
		return near(tokenAt(src, at), at)
	case strings.HasSuffix(msg, " must be followed by a statement"), strings.HasSuffix(msg, " must be followed by a statement list"):
		tok, ok := quoted(msg)
		if !ok || !strings.HasPrefix(src[off:], tok) {
			return bashSyntax{}, false
		}
		at := skipSpace(src, off+len(tok))
		if at >= len(src) {
			return eof()
		}
		return near(tokenAt(src, at), at)
	}
	return bashSyntax{}, false
}

// badSubstMsg reports whether msg is a parse error of mvdan/sh inside a
// ${...} that bash only finds when it expands it.
func badSubstMsg(msg string) bool {
	return strings.HasPrefix(msg, "not a valid parameter expansion operator") || msg == "invalid parameter name" ||
		msg == "`[` must be followed by an expression" || strings.HasPrefix(msg, "cannot combine multiple parameter expansion")
}

// innermostOpener returns which of "${", "$((" and "$[" opens last before
// off, or "".
func innermostOpener(src string, off int) string {
	best, at := "", -1
	for _, o := range []string{"${", "$((", "$["} {
		if i := strings.LastIndex(src[:off], o); i > at {
			best, at = o, i
		}
	}
	return best
}

// closerOf returns the keyword a "statement must end with" message names.
func closerOf(msg string) string {
	i := strings.LastIndex(msg, "`")
	j := strings.LastIndex(msg[:max(i, 0)], "`")
	if i < 0 || j < 0 {
		return ""
	}
	return msg[j+1 : i]
}

// restHasWord reports whether kw appears in s as a word of its own.
func restHasWord(s, kw string) bool {
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(" \t\n;&|()", r) }) {
		if f == kw {
			return true
		}
	}
	return false
}

// quoted returns the first `...` of msg.
func quoted(msg string) (string, bool) {
	if !strings.HasPrefix(msg, "`") {
		return "", false
	}
	end := strings.IndexByte(msg[1:], '`')
	if end <= 0 {
		return "", false
	}
	return msg[1 : 1+end], true
}

func isRedirOp(tok string) bool {
	switch tok {
	case "<", ">", ">>", "<<", "<<<", "<<-", "<>", ">|", "&>", "&>>", "<&", ">&":
		return true
	}
	return false
}

// skipBlanks returns the offset of the first character at or after i that
// is not a space or tab.
func skipBlanks(src string, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	return i
}

// skipSpace is skipBlanks over newlines and comments too, as bash reads
// on after an operator that needs a command.
func skipSpace(src string, i int) int {
	for i < len(src) {
		switch src[i] {
		case ' ', '\t', '\n':
			i++
		case '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		default:
			return i
		}
	}
	return i
}

// tokenAt is the token bash's parser reads at offset i of src, as it
// names it in an error: "newline" at the end of a line.
func tokenAt(src string, i int) string {
	if i >= len(src) || src[i] == '\n' {
		return "newline"
	}
	rest := src[i:]
	for _, op := range []string{";;&", ";;", ";&", "&&", "||", "|&", "&>>", "&>", ">>", "<<<", "<<-", "<<", "<>", ">|", "<&", ">&", "((", "))"} {
		if strings.HasPrefix(rest, op) {
			return op
		}
	}
	if strings.IndexByte(";&|()<>", rest[0]) >= 0 {
		return rest[:1]
	}
	end := strings.IndexAny(rest, " \t\n;&|()<>")
	if end < 0 {
		end = len(rest)
	}
	return rest[:end]
}

// lineAt is the 1-based line number of offset i in src.
func lineAt(src string, i int) int { return strings.Count(src[:min(i, len(src))], "\n") + 1 }

// lineText is the text of the line holding offset i, without its newline.
func lineText(src string, i int) string {
	i = min(i, len(src))
	start := strings.LastIndexByte(src[:i], '\n') + 1
	end := strings.IndexByte(src[i:], '\n')
	if end < 0 {
		return src[start:]
	}
	return src[start : i+end]
}
