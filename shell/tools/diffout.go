package tools

import (
	"bufio"
	"fmt"
	"strconv"
)

// diffFile is one side of a comparison: its lines (without terminators)
// and whether the last one lacked its newline.
type diffFile struct {
	name   string // as shown in headers
	label  string // header text when --label was given
	lines  [][]byte
	noEOL  bool
	stamp  string // modification time in GNU's header format
	exists bool
}

// diffChange is one run of deleted lines (in file 0) and inserted lines
// (in file 1): lines [l0, l0+del) replaced by [l1, l1+ins).
type diffChange struct {
	l0, del, l1, ins int
	ignorable        bool // -B: every line involved is blank
}

// diffScript turns changed flags into changes.
func diffScript(ch0, ch1 []bool) []diffChange {
	var out []diffChange
	i, j := 0, 0
	for i < len(ch0) || j < len(ch1) {
		if i < len(ch0) && j < len(ch1) && !ch0[i] && !ch1[j] {
			i++
			j++
			continue
		}
		c := diffChange{l0: i, l1: j}
		for i < len(ch0) && ch0[i] {
			i++
		}
		for j < len(ch1) && ch1[j] {
			j++
		}
		c.del, c.ins = i-c.l0, j-c.l1
		if c.del == 0 && c.ins == 0 {
			// Unreachable with consistent flags; step to stay finite.
			i++
			j++
			continue
		}
		out = append(out, c)
	}
	return out
}

// diffWriter prints changes in one of GNU's formats.
type diffWriter struct {
	w       *bufio.Writer
	f0, f1  *diffFile
	context int
}

func (d *diffWriter) line(prefix string, f *diffFile, i int) {
	d.w.WriteString(prefix)
	d.w.Write(f.lines[i])
	d.w.WriteByte('\n')
	if f.noEOL && i == len(f.lines)-1 {
		d.w.WriteString("\\ No newline at end of file\n")
	}
}

// diffNormalRange is "a" or "a,b" for 1-based lines [from+1, from+n].
func diffNormalRange(from, n int) string {
	if n <= 1 {
		if n == 0 {
			return strconv.Itoa(from)
		}
		return strconv.Itoa(from + 1)
	}
	return strconv.Itoa(from+1) + "," + strconv.Itoa(from+n)
}

func (d *diffWriter) normal(changes []diffChange) {
	for _, c := range changes {
		switch {
		case c.ins == 0:
			fmt.Fprintf(d.w, "%sd%d\n", diffNormalRange(c.l0, c.del), c.l1)
		case c.del == 0:
			fmt.Fprintf(d.w, "%da%s\n", c.l0, diffNormalRange(c.l1, c.ins))
		default:
			fmt.Fprintf(d.w, "%sc%s\n", diffNormalRange(c.l0, c.del), diffNormalRange(c.l1, c.ins))
		}
		for k := 0; k < c.del; k++ {
			d.line("< ", d.f0, c.l0+k)
		}
		if c.del > 0 && c.ins > 0 {
			d.w.WriteString("---\n")
		}
		for k := 0; k < c.ins; k++ {
			d.line("> ", d.f1, c.l1+k)
		}
	}
}

// hunks groups changes whose unchanged gap is at most 2*context.
func diffHunks(changes []diffChange, context int) [][]diffChange {
	var out [][]diffChange
	for i := 0; i < len(changes); {
		j := i + 1
		for j < len(changes) && changes[j].l0-(changes[j-1].l0+changes[j-1].del) <= 2*context {
			j++
		}
		out = append(out, changes[i:j])
		i = j
	}
	return out
}

func (d *diffWriter) header(mark string, f *diffFile) {
	if f.label != "" {
		fmt.Fprintf(d.w, "%s %s\n", mark, f.label)
		return
	}
	fmt.Fprintf(d.w, "%s %s\t%s\n", mark, f.name, f.stamp)
}

// diffUnifiedRange is GNU's "-l,n" part of a unified hunk header.
func diffUnifiedRange(from, n int) string {
	switch n {
	case 0:
		return strconv.Itoa(from) + ",0"
	case 1:
		return strconv.Itoa(from + 1)
	}
	return strconv.Itoa(from+1) + "," + strconv.Itoa(n)
}

// hunkBounds returns the lines [s0,e0) and [s1,e1) a hunk shows.
func (d *diffWriter) hunkBounds(h []diffChange) (int, int, int, int) {
	first, last := h[0], h[len(h)-1]
	pre := min(d.context, first.l0, first.l1)
	post := min(d.context, len(d.f0.lines)-(last.l0+last.del), len(d.f1.lines)-(last.l1+last.ins))
	return first.l0 - pre, last.l0 + last.del + post, first.l1 - pre, last.l1 + last.ins + post
}

func (d *diffWriter) unified(changes []diffChange) {
	d.header("---", d.f0)
	d.header("+++", d.f1)
	for _, h := range diffHunks(changes, d.context) {
		s0, e0, s1, e1 := d.hunkBounds(h)
		fmt.Fprintf(d.w, "@@ -%s +%s @@\n", diffUnifiedRange(s0, e0-s0), diffUnifiedRange(s1, e1-s1))
		i := s0
		for _, c := range h {
			for ; i < c.l0; i++ {
				d.line(" ", d.f0, i)
			}
			for k := 0; k < c.del; k++ {
				d.line("-", d.f0, c.l0+k)
			}
			for k := 0; k < c.ins; k++ {
				d.line("+", d.f1, c.l1+k)
			}
			i = c.l0 + c.del
		}
		for ; i < e0; i++ {
			d.line(" ", d.f0, i)
		}
	}
}

// diffContextRange is GNU's "a,b" of a context hunk header.
func diffContextRange(from, n int) string {
	switch {
	case n == 0:
		return strconv.Itoa(from)
	case n == 1:
		return strconv.Itoa(from + 1)
	}
	return strconv.Itoa(from+1) + "," + strconv.Itoa(from+n)
}

func (d *diffWriter) contextFmt(changes []diffChange) {
	d.header("***", d.f0)
	d.header("---", d.f1)
	for _, h := range diffHunks(changes, d.context) {
		s0, e0, s1, e1 := d.hunkBounds(h)
		d.w.WriteString("***************\n")
		fmt.Fprintf(d.w, "*** %s ****\n", diffContextRange(s0, e0-s0))
		anyDel, anyIns := false, false
		for _, c := range h {
			anyDel = anyDel || c.del > 0
			anyIns = anyIns || c.ins > 0
		}
		if anyDel {
			i := s0
			for _, c := range h {
				for ; i < c.l0; i++ {
					d.line("  ", d.f0, i)
				}
				mark := "- "
				if c.ins > 0 {
					mark = "! "
				}
				for k := 0; k < c.del; k++ {
					d.line(mark, d.f0, c.l0+k)
				}
				i = c.l0 + c.del
			}
			for ; i < e0; i++ {
				d.line("  ", d.f0, i)
			}
		}
		fmt.Fprintf(d.w, "--- %s ----\n", diffContextRange(s1, e1-s1))
		if anyIns {
			j := s1
			for _, c := range h {
				for ; j < c.l1; j++ {
					d.line("  ", d.f1, j)
				}
				mark := "+ "
				if c.del > 0 {
					mark = "! "
				}
				for k := 0; k < c.ins; k++ {
					d.line(mark, d.f1, c.l1+k)
				}
				j = c.l1 + c.ins
			}
			for ; j < e1; j++ {
				d.line("  ", d.f1, j)
			}
		}
	}
}
