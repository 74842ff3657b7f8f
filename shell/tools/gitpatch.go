package tools

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// This file turns two sets of files into git's diff outputs: patches
// (diff --git ...), --stat, --name-only, --name-status and the summary
// lines of commit. Lines are compared with the GNU diff algorithm of
// diffalgo.go; git's xdiff (Myers with the indent heuristic) may place
// an ambiguous hunk differently, never with different counts on minimal
// edits.

// gitFileChange is one changed path between two sides.
type gitFileChange struct {
	oldPath, newPath string
	oldHash, newHash plumbing.Hash
	oldMode, newMode uint32
	status           byte // A D M R T
	oldData, newData []byte
	loaded           bool
}

// gitSide is one side of a comparison: path -> entry, plus an optional
// loader for content not in the object store (the worktree).
type gitSide struct {
	files map[string]gitTreeEntry
	read  func(p string) ([]byte, error)
}

// gitTreeChanges lists the differences between a and b, sorted by path,
// pairing exact renames when renames is set.
func gitTreeChanges(a, b map[string]gitTreeEntry, renames bool) []gitFileChange {
	var out []gitFileChange
	for p, eb := range b {
		ea, ok := a[p]
		switch {
		case !ok:
			out = append(out, gitFileChange{newPath: p, oldPath: p, newHash: eb.hash, newMode: eb.mode, status: 'A'})
		case ea.hash != eb.hash || ea.mode != eb.mode:
			st := byte('M')
			if (ea.mode == 0o120000) != (eb.mode == 0o120000) {
				st = 'T'
			}
			out = append(out, gitFileChange{oldPath: p, newPath: p, oldHash: ea.hash, newHash: eb.hash, oldMode: ea.mode, newMode: eb.mode, status: st})
		}
	}
	for p, ea := range a {
		if _, ok := b[p]; !ok {
			out = append(out, gitFileChange{oldPath: p, newPath: p, oldHash: ea.hash, oldMode: ea.mode, status: 'D'})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].newPath < out[j].newPath })
	if !renames {
		return out
	}
	for i := range out {
		if out[i].status != 'D' {
			continue
		}
		for j := range out {
			if out[j].status == 'A' && out[j].newHash == out[i].oldHash && out[j].newMode == out[i].oldMode {
				out[j].status, out[j].oldPath, out[j].oldHash, out[j].oldMode = 'R', out[i].oldPath, out[i].oldHash, out[i].oldMode
				out[i].status = 0
				break
			}
		}
	}
	kept := out[:0]
	for _, c := range out {
		if c.status != 0 {
			kept = append(kept, c)
		}
	}
	return kept
}

// load fills the contents of fc.
func (g *gitCtx) load(fc *gitFileChange, newSide *gitSide) error {
	if fc.loaded {
		return nil
	}
	var err error
	if fc.status != 'A' {
		if fc.oldData, err = g.blob(fc.oldHash); err != nil {
			return err
		}
	}
	if fc.status != 'D' {
		if newSide != nil && newSide.read != nil {
			fc.newData, err = newSide.read(fc.newPath)
		} else {
			fc.newData, err = g.blob(fc.newHash)
		}
		if err != nil {
			return err
		}
	}
	fc.loaded = true
	return nil
}

func gitIsBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0
}

// gitSplitLines splits data into lines without terminators; noEOL reports a
// last line without its newline.
func gitSplitLines(b []byte) ([][]byte, bool) {
	if len(b) == 0 {
		return nil, false
	}
	noEOL := b[len(b)-1] != '\n'
	if !noEOL {
		b = b[:len(b)-1]
	}
	return bytes.Split(b, []byte("\n")), noEOL
}

// gitLineChanges compares two texts line by line.
func gitLineChanges(ctx context.Context, a, b []byte) ([][]byte, [][]byte, bool, bool, []diffChange) {
	la, na := gitSplitLines(a)
	lb, nb := gitSplitLines(b)
	classes := map[string]int{}
	eq := func(ls [][]byte, noEOL bool) []int {
		out := make([]int, len(ls))
		for i, l := range ls {
			k := string(l)
			if noEOL && i == len(ls)-1 {
				k += "\x00noeol"
			}
			c, ok := classes[k]
			if !ok {
				c = len(classes) + 1
				classes[k] = c
			}
			out[i] = c
		}
		return out
	}
	ea, eb := eq(la, na), eq(lb, nb)
	ch0, ch1 := diffLines(ctx, ea, eb, len(classes)+1, false, 3)
	return la, lb, na, nb, diffScript(ch0, ch1)
}

// numstat returns added and deleted line counts (-1, -1 for binary).
func (g *gitCtx) numstat(ctx context.Context, fc *gitFileChange) (int, int) {
	if gitIsBinary(fc.oldData) || gitIsBinary(fc.newData) {
		return -1, -1
	}
	_, _, _, _, chs := gitLineChanges(ctx, fc.oldData, fc.newData)
	add, del := 0, 0
	for _, c := range chs {
		add += c.ins
		del += c.del
	}
	return add, del
}

func gitModeStr(m uint32) string { return fmt.Sprintf("%06o", m) }

// writePatch prints fc as git's unified diff with ctxLines of context.
func (g *gitCtx) writePatch(ctx context.Context, w *bufio.Writer, fc *gitFileChange, ctxLines int) {
	if fc.status == 'T' {
		// Git prints a change between a file and a symlink as the old
		// one deleted and the new one created.
		del, add := *fc, *fc
		del.status, del.newHash, del.newMode, del.newData = 'D', plumbing.ZeroHash, 0, nil
		add.status, add.oldHash, add.oldMode, add.oldData = 'A', plumbing.ZeroHash, 0, nil
		g.writePatch(ctx, w, &del, ctxLines)
		g.writePatch(ctx, w, &add, ctxLines)
		return
	}
	fmt.Fprintf(w, "diff --git %s %s\n", gitQuotePath("a/"+fc.oldPath), gitQuotePath("b/"+fc.newPath))
	oh, nh := g.short(fc.oldHash), g.short(fc.newHash)
	switch fc.status {
	case 'A':
		fmt.Fprintf(w, "new file mode %s\nindex %s..%s\n", gitModeStr(fc.newMode), g.short(plumbing.ZeroHash), nh)
	case 'D':
		fmt.Fprintf(w, "deleted file mode %s\nindex %s..%s\n", gitModeStr(fc.oldMode), oh, g.short(plumbing.ZeroHash))
	case 'R':
		fmt.Fprintf(w, "similarity index 100%%\nrename from %s\nrename to %s\n", gitQuotePath(fc.oldPath), gitQuotePath(fc.newPath))
		if fc.oldHash == fc.newHash {
			return
		}
	default:
		if fc.oldMode != fc.newMode {
			fmt.Fprintf(w, "old mode %s\nnew mode %s\n", gitModeStr(fc.oldMode), gitModeStr(fc.newMode))
			if fc.oldHash == fc.newHash {
				return
			}
			fmt.Fprintf(w, "index %s..%s\n", oh, nh)
		} else {
			fmt.Fprintf(w, "index %s..%s %s\n", oh, nh, gitModeStr(fc.newMode))
		}
	}
	if len(fc.oldData) == 0 && len(fc.newData) == 0 {
		return
	}
	oldName, newName := gitQuotePath("a/"+fc.oldPath), gitQuotePath("b/"+fc.newPath)
	// Git ends a ---/+++ name holding a space with a tab (for patch).
	oldTab, newTab := "", ""
	if strings.Contains(fc.oldPath, " ") {
		oldTab = "\t"
	}
	if strings.Contains(fc.newPath, " ") {
		newTab = "\t"
	}
	if fc.status == 'A' {
		oldName, oldTab = "/dev/null", ""
	}
	if fc.status == 'D' {
		newName, newTab = "/dev/null", ""
	}
	if gitIsBinary(fc.oldData) || gitIsBinary(fc.newData) {
		fmt.Fprintf(w, "Binary files %s and %s differ\n", oldName, newName)
		return
	}
	fmt.Fprintf(w, "--- %s%s\n+++ %s%s\n", oldName, oldTab, newName, newTab)
	la, lb, na, nb, chs := gitLineChanges(ctx, fc.oldData, fc.newData)
	line := func(prefix byte, ls [][]byte, i int, noEOL bool) {
		w.WriteByte(prefix)
		w.Write(ls[i])
		w.WriteByte('\n')
		if noEOL && i == len(ls)-1 {
			w.WriteString("\\ No newline at end of file\n")
		}
	}
	for _, h := range diffHunks(chs, ctxLines) {
		first, last := h[0], h[len(h)-1]
		pre := min(ctxLines, first.l0, first.l1)
		post := min(ctxLines, len(la)-(last.l0+last.del), len(lb)-(last.l1+last.ins))
		s0, e0, s1, e1 := first.l0-pre, last.l0+last.del+post, first.l1-pre, last.l1+last.ins+post
		fmt.Fprintf(w, "@@ -%s +%s @@%s\n", gitRange(s0, e0-s0), gitRange(s1, e1-s1), gitFuncContext(la, s0))
		i := s0
		for _, c := range h {
			for ; i < c.l0; i++ {
				line(' ', la, i, na)
			}
			for k := 0; k < c.del; k++ {
				line('-', la, c.l0+k, na)
			}
			for k := 0; k < c.ins; k++ {
				line('+', lb, c.l1+k, nb)
			}
			i = c.l0 + c.del
		}
		for ; i < e0; i++ {
			line(' ', la, i, na)
		}
	}
}

// gitRange is a hunk header range: "l,n", or "l" when n is 1.
func gitRange(from, n int) string {
	switch n {
	case 0:
		return strconv.Itoa(from) + ",0"
	case 1:
		return strconv.Itoa(from + 1)
	}
	return strconv.Itoa(from+1) + "," + strconv.Itoa(n)
}

// gitFuncContext is xdiff's default function line: the nearest line before
// start that begins with a letter, '_' or '$', trimmed to 80 bytes.
func gitFuncContext(lines [][]byte, start int) string {
	for i := start - 1; i >= 0; i-- {
		l := lines[i]
		if len(l) == 0 {
			continue
		}
		c := l[0]
		if c == '_' || c == '$' || (c|0x20 >= 'a' && c|0x20 <= 'z') {
			if len(l) > 80 {
				l = l[:80]
			}
			return " " + strings.TrimRight(string(l), " \t\r\n\v\f")
		}
	}
	return ""
}

// gitStatLine is one row of --stat.
type gitStatLine struct {
	name     string
	add, del int // -1 for binary
	oldSize  int
	newSize  int
}

// gitWriteStat prints --stat rows and the summary line.
func gitWriteStat(w *bufio.Writer, rows []gitStatLine) {
	if len(rows) == 0 {
		return
	}
	nameW, maxChange, totalAdd, totalDel := 0, 0, 0, 0
	for _, r := range rows {
		nameW = max(nameW, len(r.name))
		if r.add >= 0 {
			maxChange = max(maxChange, r.add+r.del)
			totalAdd += r.add
			totalDel += r.del
		}
	}
	numW := len(strconv.Itoa(maxChange))
	for _, r := range rows {
		if r.add < 0 {
			numW = max(numW, 3)
		}
	}
	const width = 80
	graphW := maxChange
	if nameW+numW+6+graphW > width {
		limit := width*3/8 - numW - 6
		if limit < 6 {
			limit = 6
		}
		if graphW > limit {
			graphW = limit
		}
		if nameW > width-numW-6-graphW {
			nameW = width - numW - 6 - graphW
		} else {
			graphW = width - numW - 6 - nameW
		}
	}
	for _, r := range rows {
		name := r.name
		if len(name) > nameW {
			name = "..." + name[len(name)-(nameW-3):]
		}
		if r.add < 0 {
			fmt.Fprintf(w, " %-*s | %*s %d -> %d bytes\n", nameW, name, numW, "Bin", r.oldSize, r.newSize)
			continue
		}
		a, d := r.add, r.del
		if maxChange > graphW && maxChange > 0 {
			a, d = gitScaleLinear(r.add, graphW, maxChange), gitScaleLinear(r.del, graphW, maxChange)
		}
		graph := strings.Repeat("+", a) + strings.Repeat("-", d)
		if graph != "" {
			graph = " " + graph
		}
		fmt.Fprintf(w, " %-*s | %*d%s\n", nameW, name, numW, r.add+r.del, graph)
	}
	gitWriteSummary(w, len(rows), totalAdd, totalDel)
}

func gitScaleLinear(it, width, maxChange int) int {
	if it == 0 {
		return 0
	}
	return 1 + it*(width-1)/maxChange
}

// gitWriteSummary prints " N files changed, X insertions(+), Y deletions(-)".
func gitWriteSummary(w *bufio.Writer, files, add, del int) {
	plural := func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	}
	if files == 0 {
		fmt.Fprint(w, " 0 files changed\n")
		return
	}
	fmt.Fprintf(w, " %d %s changed", files, plural(files, "file", "files"))
	if add > 0 || del == 0 {
		fmt.Fprintf(w, ", %d %s(+)", add, plural(add, "insertion", "insertions"))
	}
	if del > 0 || add == 0 {
		fmt.Fprintf(w, ", %d %s(-)", del, plural(del, "deletion", "deletions"))
	}
	fmt.Fprintln(w)
}

// gitRenameName is git's "a/{b => c}/d" rendering of a rename.
func gitRenameName(a, b string) string {
	if qa, qb := gitQuotePath(a), gitQuotePath(b); qa != a || qb != b {
		// Git writes quoted names whole.
		return qa + " => " + qb
	}
	pfx := 0
	for i := 0; i < len(a) && i < len(b) && a[i] == b[i]; i++ {
		if a[i] == '/' {
			pfx = i + 1
		}
	}
	sfx := 0
	for i := 1; i <= len(a)-pfx && i <= len(b)-pfx && a[len(a)-i] == b[len(b)-i]; i++ {
		if a[len(a)-i] == '/' {
			sfx = i
		}
	}
	if pfx == 0 && sfx == 0 {
		return a + " => " + b
	}
	return a[:pfx] + "{" + a[pfx:len(a)-sfx] + " => " + b[pfx:len(b)-sfx] + "}" + a[len(a)-sfx:]
}

// statRows computes --stat rows for changes (contents loaded).
func (g *gitCtx) statRows(ctx context.Context, chs []gitFileChange) []gitStatLine {
	var rows []gitStatLine
	for i := range chs {
		fc := &chs[i]
		add, del := g.numstat(ctx, fc)
		name := gitQuotePath(fc.newPath)
		if fc.status == 'R' {
			name = gitRenameName(fc.oldPath, fc.newPath)
		}
		rows = append(rows, gitStatLine{name: name, add: add, del: del, oldSize: len(fc.oldData), newSize: len(fc.newData)})
	}
	return rows
}

// gitWriteSummaryModes prints commit's "create mode"/"delete mode"/"rename"
// lines (git's --summary).
func gitWriteSummaryModes(w *bufio.Writer, chs []gitFileChange) {
	for _, fc := range chs {
		switch {
		case fc.status == 'A':
			fmt.Fprintf(w, " create mode %s %s\n", gitModeStr(fc.newMode), fc.newPath)
		case fc.status == 'D':
			fmt.Fprintf(w, " delete mode %s %s\n", gitModeStr(fc.oldMode), fc.oldPath)
		case fc.status == 'R':
			fmt.Fprintf(w, " rename %s (100%%)\n", gitRenameName(fc.oldPath, fc.newPath))
		case fc.oldMode != fc.newMode:
			fmt.Fprintf(w, " mode change %s => %s %s\n", gitModeStr(fc.oldMode), gitModeStr(fc.newMode), fc.newPath)
		}
	}
}
