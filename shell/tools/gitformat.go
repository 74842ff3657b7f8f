package tools

import (
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// This file expands git log/show --format placeholders.

// gitBadPlaceholder returns the first format placeholder we do not expand.
func gitBadPlaceholder(f string) string {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			continue
		}
		i++
		switch f[i] {
		case 'H', 'h', 'T', 't', 'P', 'p', 's', 'b', 'B', 'n', '%', 'd', 'D':
			continue
		case 'a', 'c':
			if i+1 < len(f) && strings.IndexByte("nNeEdDtiIr", f[i+1]) >= 0 && f[i+1] != 'N' && f[i+1] != 'E' {
				i++
				continue
			}
		}
		end := min(i+2, len(f))
		return "%" + f[i:end]
	}
	return ""
}

// expandFormat expands a --format string for cm.
func (g *gitCtx) expandFormat(f string, cm *object.Commit, lo *gitLogSettings) string {
	var sb strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			sb.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'H':
			sb.WriteString(cm.Hash.String())
		case 'h':
			sb.WriteString(g.short(cm.Hash))
		case 'T':
			sb.WriteString(cm.TreeHash.String())
		case 't':
			sb.WriteString(g.short(cm.TreeHash))
		case 'P', 'p':
			var ps []string
			for _, p := range cm.ParentHashes {
				if f[i] == 'P' {
					ps = append(ps, p.String())
				} else {
					ps = append(ps, g.short(p))
				}
			}
			sb.WriteString(strings.Join(ps, " "))
		case 's':
			sb.WriteString(gitSubject(cm.Message))
		case 'b':
			sb.WriteString(gitBody(cm.Message))
		case 'B':
			sb.WriteString(cm.Message)
		case 'n':
			sb.WriteByte('\n')
		case 'd':
			if d := lo.decor[cm.Hash]; d != "" {
				sb.WriteString(" (" + d + ")")
			}
		case 'D':
			sb.WriteString(lo.decor[cm.Hash])
		case '%':
			sb.WriteByte('%')
		case 'a', 'c':
			sig := cm.Author
			if f[i] == 'c' {
				sig = cm.Committer
			}
			i++
			switch f[i] {
			case 'n':
				sb.WriteString(sig.Name)
			case 'e':
				sb.WriteString(sig.Email)
			case 'd', 'D':
				if f[i] == 'D' {
					sb.WriteString(sig.When.Format("Mon, 2 Jan 2006 15:04:05 -0700"))
				} else {
					sb.WriteString(lo.date(sig.When))
				}
			case 't':
				sb.WriteString(strconv.FormatInt(sig.When.Unix(), 10))
			case 'r':
				sb.WriteString(gitRelativeDate(sig.When.Unix(), time.Now().Unix()))
			case 'i':
				sb.WriteString(sig.When.Format("2006-01-02 15:04:05 -0700"))
			case 'I':
				sb.WriteString(sig.When.Format("2006-01-02T15:04:05-07:00"))
			}
		}
	}
	return sb.String()
}

// gitBody is git's %b: the message after the gitSubject paragraph.
func gitBody(msg string) string {
	_, rest, ok := strings.Cut(strings.TrimLeft(msg, "\n"), "\n\n")
	if !ok {
		return ""
	}
	return strings.TrimLeft(rest, "\n")
}

// gitHasDecorPlaceholder reports whether f uses %d or %D.
func gitHasDecorPlaceholder(f string) bool {
	for i := 0; i+1 < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		if f[i] == 'd' || f[i] == 'D' {
			return true
		}
	}
	return false
}
