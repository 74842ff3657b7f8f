package tools

import (
	"fmt"
	"strconv"
	"strings"
)

// runJSON is tree -J: the same walk as the text listing, written as
// tree 2.1's JSON (one object per line, indented two spaces a level; -i
// writes it all on one line). An operand that is not a directory makes
// tree write an odd fragment, not reproduced: the call is refused before
// anything is written.
func (t *treer) runJSON(args []string, report bool) int {
	for _, a := range args {
		if st, err := fuStatPath(t.c, a); err != nil || !st.isDir() {
			return t.c.Fail("-J with an operand that is not a directory")
		}
	}
	nl := "\n"
	if t.flat {
		nl = ""
	}
	t.w.WriteString("[" + nl)
	for i, a := range args {
		if i > 0 {
			// tree writes the comma after an operand only when it
			// listed something
			t.w.WriteString(nl)
		}
		st, _ := fuStatPath(t.c, a)
		e := treeEnt{name: a, dir: true, size: st.Size}
		n, err := t.jsonEnt(e, a, 1)
		if err != nil {
			t.w.Flush()
			return 130
		}
		if n > 0 {
			t.dirs++
			if i < len(args)-1 {
				t.w.WriteString(",")
			}
		}
	}
	t.w.WriteString(nl)
	if report {
		t.w.WriteString("," + nl + t.indent(1))
		if t.dirsOnly {
			fmt.Fprintf(t.w, `{"type":"report","directories":%d}`, t.dirs)
		} else {
			fmt.Fprintf(t.w, `{"type":"report","directories":%d,"files":%d}`, t.dirs, t.files)
		}
	}
	t.w.WriteString(nl + "]\n")
	t.w.Flush()
	return 0
}

func (t *treer) indent(depth int) string {
	if t.flat {
		return ""
	}
	return strings.Repeat("  ", depth)
}

// jsonEnt writes one entry at depth (the operand is at 1) whose path is
// p, and for a directory the entries it lists; it returns how many.
func (t *treer) jsonEnt(e treeEnt, p string, depth int) (int, error) {
	if err := t.ctx.Err(); err != nil {
		return 0, err
	}
	typ := "file"
	switch {
	case e.link:
		typ = "link"
	case e.dir:
		typ = "directory"
	case e.mode&0o170000 == 0o010000:
		typ = "fifo"
	case e.mode&0o170000 == 0o140000:
		typ = "socket"
	case e.mode&0o170000 == 0o020000:
		typ = "char"
	case e.mode&0o170000 == 0o060000:
		typ = "block"
	}
	t.w.WriteString(t.indent(depth) + `{"type":"` + typ + `","name":` + treeJSONString(e.name))
	if e.link {
		t.w.WriteString(`,"target":` + treeJSONString(e.target))
	}
	if t.sizes {
		t.w.WriteString(`,"size":` + strconv.FormatInt(e.size, 10))
	}
	if !e.dir || e.link || (t.level > 0 && depth > t.level) {
		t.w.WriteString("}")
		return 0, nil
	}
	ents := t.entries(p)
	if len(ents) == 0 {
		t.w.WriteString("}")
		return 0, nil
	}
	nl := "\n"
	if t.flat {
		nl = ""
	}
	t.w.WriteString(`,"contents":[` + nl)
	for i, c := range ents {
		if i > 0 {
			t.w.WriteString("," + nl)
		}
		cp := fuJoin(p, c.name)
		if t.full {
			c.name = cp
		}
		if _, err := t.jsonEnt(c, cp, depth+1); err != nil {
			return 0, err
		}
		if c.dir {
			t.dirs++
		} else {
			t.files++
		}
	}
	t.w.WriteString(nl + t.indent(depth) + "]}")
	return len(ents), nil
}

// treeJSONString quotes s as tree's JSON does: the short escapes for
// quote, backslash and \b \f \n \r \t, \u00XX for other control bytes,
// everything else (DEL, bytes of UTF-8 or not) as it is.
func treeJSONString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
