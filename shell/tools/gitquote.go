package tools

import (
	"fmt"
	"strings"
)

// gitQuotePath quotes a path the way git does with core.quotePath on.
func gitQuotePath(p string) string { return quotePathSP(p, false) }

// quotePathSP is gitQuotePath; sp also quotes names containing spaces
// (short status format).
func quotePathSP(p string, sp bool) string {
	need := false
	for i := 0; i < len(p); i++ {
		if b := p[i]; b < 0x20 || b == '"' || b == '\\' || b >= 0x7f || (sp && b == ' ') {
			need = true
			break
		}
	}
	if !need {
		return p
	}
	var sb strings.Builder
	sb.WriteByte('"')
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch b {
		case '"':
			sb.WriteString("\\\"")
		case '\\':
			sb.WriteString("\\\\")
		case '\t':
			sb.WriteString("\\t")
		case '\n':
			sb.WriteString("\\n")
		case '\a':
			sb.WriteString("\\a")
		case '\b':
			sb.WriteString("\\b")
		case '\f':
			sb.WriteString("\\f")
		case '\r':
			sb.WriteString("\\r")
		case '\v':
			sb.WriteString("\\v")
		default:
			if b < 0x20 || b >= 0x7f {
				fmt.Fprintf(&sb, "\\%03o", b)
			} else {
				sb.WriteByte(b)
			}
		}
	}
	sb.WriteByte('"')
	return sb.String()
}
