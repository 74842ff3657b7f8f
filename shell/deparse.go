package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// funcText prints a function definition the way bash's declare -f and
// type do: "name () ", then the body as a brace group, four-space
// indents, and a ';' after every statement but the last.
func funcText(name string, body *syntax.Stmt) string {
	var sb strings.Builder
	sb.WriteString(name + " () \n{ \n")
	var stmts []*syntax.Stmt
	if b, ok := body.Cmd.(*syntax.Block); ok && len(body.Redirs) == 0 {
		stmts = b.Stmts
	} else {
		stmts = []*syntax.Stmt{body}
	}
	for i, st := range stmts {
		sb.WriteString(deparseStmt(st, "    "))
		if i < len(stmts)-1 {
			sb.WriteByte(';')
		}
		sb.WriteByte('\n')
	}
	sb.WriteString("}\n")
	return sb.String()
}

func deparseBody(stmts []*syntax.Stmt, indent string) string {
	var sb strings.Builder
	for _, st := range stmts {
		sb.WriteString(deparseStmt(st, indent))
		sb.WriteString(";\n")
	}
	return sb.String()
}

func deparseStmt(st *syntax.Stmt, indent string) string {
	inner := indent + "    "
	switch c := st.Cmd.(type) {
	case *syntax.IfClause:
		if len(st.Redirs) > 0 || st.Negated || st.Background {
			break
		}
		return deparseIf(c, indent)
	case *syntax.ForClause:
		wi, ok := c.Loop.(*syntax.WordIter)
		if !ok || len(st.Redirs) > 0 || st.Negated || st.Background || c.Select {
			break
		}
		var sb strings.Builder
		sb.WriteString(indent + "for " + wi.Name.Value)
		if wi.InPos.IsValid() {
			sb.WriteString(" in")
			for _, w := range wi.Items {
				sb.WriteString(" " + nodeText(w))
			}
		}
		sb.WriteString(";\n" + indent + "do\n")
		sb.WriteString(deparseBody(c.Do, inner))
		sb.WriteString(indent + "done")
		return sb.String()
	case *syntax.WhileClause:
		if len(st.Redirs) > 0 || st.Negated || st.Background {
			break
		}
		kw := "while"
		if c.Until {
			kw = "until"
		}
		var sb strings.Builder
		sb.WriteString(indent + kw + " " + condText(c.Cond) + "; do\n")
		sb.WriteString(deparseBody(c.Do, inner))
		sb.WriteString(indent + "done")
		return sb.String()
	}
	if sub, ok := st.Cmd.(*syntax.Subshell); ok && len(st.Redirs) == 0 && !st.Negated && !st.Background {
		var parts []string
		for _, s := range sub.Stmts {
			parts = append(parts, nodeText(s))
		}
		return indent + "( " + strings.Join(parts, "; ") + " )"
	}
	text := nodeText(st)
	return indent + strings.ReplaceAll(text, "\n", "\n"+indent)
}

// deparseIf prints elif as bash does: a nested if in the else branch.
func deparseIf(c *syntax.IfClause, indent string) string {
	inner := indent + "    "
	var sb strings.Builder
	sb.WriteString(indent + "if " + condText(c.Cond) + "; then\n")
	sb.WriteString(deparseBody(c.Then, inner))
	if e := c.Else; e != nil {
		sb.WriteString(indent + "else\n")
		if len(e.Cond) == 0 && !e.ThenPos.IsValid() {
			sb.WriteString(deparseBody(e.Then, inner))
		} else {
			sb.WriteString(deparseIf(e, inner) + ";\n")
		}
	}
	sb.WriteString(indent + "fi")
	return sb.String()
}

func condText(stmts []*syntax.Stmt) string {
	var parts []string
	for _, st := range stmts {
		parts = append(parts, nodeText(st))
	}
	return strings.Join(parts, "; ")
}

func nodeText(n syntax.Node) string {
	var sb strings.Builder
	_ = syntax.NewPrinter(syntax.Indent(4)).Print(&sb, n)
	return strings.TrimRight(sb.String(), "\n")
}
