package tools

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// This file holds ls's sorting and output formats.

func (l *lister) sortEntries(ents []*lsEntry) {
	cfg := l.cfg
	if cfg.sort == lsByNone {
		return
	}
	key := func(a, b *lsEntry) int {
		switch cfg.sort {
		case lsByTime:
			if d := l.when(b).Compare(l.when(a)); d != 0 {
				return d
			}
		case lsBySize:
			if a.st.Size != b.st.Size {
				if b.st.Size < a.st.Size {
					return -1
				}
				return 1
			}
		case lsByExt:
			if d := strings.Compare(lsExt(a.name), lsExt(b.name)); d != 0 {
				return d
			}
		case lsByVersion:
			if d := filevercmp(a.name, b.name); d != 0 {
				return d
			}
		}
		return strings.Compare(a.name, b.name)
	}
	slices.SortStableFunc(ents, func(a, b *lsEntry) int {
		if cfg.dirsFirst {
			da, db := lsIsDir(a), lsIsDir(b)
			if da != db {
				if da {
					return -1
				}
				return 1
			}
		}
		if cfg.reverse {
			return key(b, a)
		}
		return key(a, b)
	})
}

func lsIsDir(e *lsEntry) bool {
	return e.st.isDir() || (e.st.isLink() && e.tOK && e.tst.isDir())
}

func lsExt(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i:]
	}
	return ""
}

// when returns the timestamp ls sorts and prints by.
func (l *lister) when(e *lsEntry) time.Time {
	switch l.cfg.timeKind {
	case 'c':
		return e.st.Ctim
	case 'a':
		return e.st.Atim
	}
	return e.st.Mtim
}

// printEntries prints ents; widths are computed over sizing (a superset).
func (l *lister) printEntries(ents, sizing []*lsEntry) {
	switch l.cfg.format {
	case lsLong:
		l.printLong(ents, sizing)
	case lsColumns, lsAcross:
		l.printColumns(ents, sizing)
	case lsCommas:
		l.printCommas(ents)
	default:
		inoW, blkW := l.prefixWidths(sizing)
		for _, e := range ents {
			l.w.WriteString(l.prefix(e, inoW, blkW))
			if l.cfg.context {
				l.w.WriteString("? ")
			}
			l.w.WriteString(l.shown(e.name))
			l.w.WriteString(l.indicator(e.st.Mode, e.statOK))
			l.w.WriteByte('\n')
		}
	}
}

func (l *lister) prefixWidths(ents []*lsEntry) (inoW, blkW int) {
	for _, e := range ents {
		if l.cfg.inode {
			inoW = max(inoW, len(l.inodeStr(e)))
		}
		if l.cfg.size {
			blkW = max(blkW, len(l.blockStr(e)))
		}
	}
	return inoW, blkW
}

func (l *lister) inodeStr(e *lsEntry) string {
	if !e.statOK {
		return "?"
	}
	return strconv.FormatUint(e.st.Ino, 10)
}

func (l *lister) blockStr(e *lsEntry) string {
	if !e.statOK {
		return "?"
	}
	return l.blocks(e.st.Blocks)
}

// prefix renders the -i and -s columns.
func (l *lister) prefix(e *lsEntry, inoW, blkW int) string {
	if !l.cfg.inode && !l.cfg.size {
		return ""
	}
	var sb strings.Builder
	if l.cfg.inode {
		fmt.Fprintf(&sb, "%*s ", inoW, l.inodeStr(e))
	}
	if l.cfg.size {
		fmt.Fprintf(&sb, "%*s ", blkW, l.blockStr(e))
	}
	return sb.String()
}

// lsLongCols are the rendered columns of one long-format line.
type lsLongCols struct {
	nlink, owner, group, size, time string
	major, minor                    string
	dev                             bool
}

func (l *lister) longCols(e *lsEntry) lsLongCols {
	var k lsLongCols
	if !e.statOK {
		k = lsLongCols{nlink: "?", owner: "?", group: "?", size: "?", time: "?"}
		return k
	}
	k.nlink = strconv.FormatUint(e.st.Nlink, 10)
	if l.cfg.numeric {
		k.owner, k.group = strconv.FormatUint(uint64(e.st.Uid), 10), strconv.FormatUint(uint64(e.st.Gid), 10)
	} else {
		if l.own == nil {
			l.own = newOwners(l.c)
		}
		// Only the names printed are looked up (ls -gG needs none).
		if !l.cfg.noOwner {
			k.owner = l.own.user(e.st.Uid)
		}
		if !l.cfg.noGroup {
			k.group = l.own.groupName(e.st.Gid)
		}
	}
	switch e.st.Mode & 0o170000 {
	case 0o020000, 0o060000:
		k.dev = true
		k.major = strconv.FormatUint(uint64(devMajor(e.st.Rdev)), 10)
		k.minor = strconv.FormatUint(uint64(devMinor(e.st.Rdev)), 10)
	default:
		if l.cfg.human {
			k.size = fuHuman(uint64(e.st.Size), 1024)
		} else {
			k.size = strconv.FormatInt(e.st.Size, 10)
		}
	}
	k.time = l.formatTime(l.when(e))
	return k
}

func devMajor(d uint64) uint32 { return uint32((d>>8)&0xfff) | uint32((d>>32)&^0xfff) }
func devMinor(d uint64) uint32 { return uint32(d&0xff) | uint32((d>>12)&^0xff) }

func (l *lister) printLong(ents, sizing []*lsEntry) {
	// The columns of each entry are rendered once: for sizing, and again
	// for printing only when ents is not sizing itself.
	if cap(l.colsBuf) < len(sizing) {
		l.colsBuf = make([]lsLongCols, len(sizing))
	}
	cols := l.colsBuf[:len(sizing)]
	var nlW, ownW, grpW, sizeW, majW, minW, timeW int
	for i, e := range sizing {
		k := &cols[i]
		*k = l.longCols(e)
		if e.statOK {
			// GNU pads an unknown time ("?") to a known one's width.
			timeW = max(timeW, utf8.RuneCountInString(k.time))
		}
		nlW = max(nlW, len(k.nlink))
		ownW = max(ownW, utf8.RuneCountInString(k.owner))
		grpW = max(grpW, utf8.RuneCountInString(k.group))
		if k.dev {
			majW, minW = max(majW, len(k.major)), max(minW, len(k.minor))
			sizeW = max(sizeW, majW+2+minW)
		} else {
			sizeW = max(sizeW, len(k.size))
		}
	}
	if majW > 0 {
		sizeW = max(sizeW, majW+2+minW)
	}
	same := len(ents) == len(sizing) && (len(ents) == 0 || &ents[0] == &sizing[0])
	inoW, blkW := l.prefixWidths(sizing)
	w := l.w
	for i, e := range ents {
		var k lsLongCols
		if same {
			k = cols[i]
		} else {
			k = l.longCols(e)
		}
		w.WriteString(l.prefix(e, inoW, blkW))
		if e.statOK {
			l.scratch = fuAppendMode(l.scratch[:0], e.st.Mode)
			w.Write(l.scratch)
		} else if e.deadLink {
			w.WriteString("l?????????")
		} else {
			w.WriteString("??????????")
		}
		// The padding is fmt's %*s and %-*s: by runes, with spaces.
		w.WriteByte(' ')
		lsPadLeft(w, k.nlink, nlW)
		w.WriteByte(' ')
		if !l.cfg.noOwner {
			lsPadRight(w, k.owner, ownW)
			w.WriteByte(' ')
		}
		if !l.cfg.noGroup {
			lsPadRight(w, k.group, grpW)
			w.WriteByte(' ')
		}
		if k.dev {
			lsPadLeft(w, k.major, majW+max(0, sizeW-(majW+2+minW)))
			w.WriteString(", ")
			lsPadLeft(w, k.minor, minW)
		} else {
			lsPadLeft(w, k.size, sizeW)
		}
		w.WriteByte(' ')
		if e.statOK {
			w.WriteString(k.time)
		} else {
			lsPadLeft(w, k.time, timeW)
		}
		w.WriteByte(' ')
		w.WriteString(l.shown(e.name))
		if e.st.isLink() && e.statOK {
			if e.target != "" {
				w.WriteString(" -> ")
				w.WriteString(l.shown(e.target))
				if e.tOK {
					w.WriteString(l.indicator(e.tst.Mode, true))
				}
			}
		} else {
			w.WriteString(l.indicator(e.st.Mode, e.statOK))
		}
		w.WriteByte('\n')
	}
}

// lsPadLeft writes s right-aligned in width runes, as fmt's %*s.
func lsPadLeft(w *bufio.Writer, s string, width int) {
	for n := width - utf8.RuneCountInString(s); n > 0; n-- {
		w.WriteByte(' ')
	}
	w.WriteString(s)
}

// lsPadRight writes s left-aligned in width runes, as fmt's %-*s.
func lsPadRight(w *bufio.Writer, s string, width int) {
	w.WriteString(s)
	for n := width - utf8.RuneCountInString(s); n > 0; n-- {
		w.WriteByte(' ')
	}
}

// printColumns prints -C (down columns) or -x (across) with GNU's column
// fitting and tab-based padding (tab size 8).
func (l *lister) printColumns(ents, sizing []*lsEntry) {
	n := len(ents)
	if n == 0 {
		return
	}
	inoW, blkW := l.prefixWidths(sizing)
	lens := make([]int, n)
	for i, e := range ents {
		ln := utf8.RuneCountInString(l.shown(e.name)) + len(l.indicator(e.st.Mode, e.statOK))
		if l.cfg.inode {
			ln += inoW + 1
		}
		if l.cfg.size {
			ln += blkW + 1
		}
		lens[i] = ln
	}
	byCols := l.cfg.format == lsColumns
	width := l.cfg.width
	maxIdx := width/3 + min(1, width%3)
	maxCols := min(maxIdx, n)
	type colInfo struct {
		valid   bool
		lineLen int
		arr     []int
	}
	infos := make([]colInfo, maxCols)
	for i := range infos {
		infos[i] = colInfo{valid: true, lineLen: (i + 1) * 3, arr: make([]int, i+1)}
		for j := range infos[i].arr {
			infos[i].arr[j] = 3
		}
	}
	for f := 0; f < n; f++ {
		for i := range infos {
			ci := &infos[i]
			if !ci.valid {
				continue
			}
			var idx int
			if byCols {
				idx = f / ((n + i) / (i + 1))
			} else {
				idx = f % (i + 1)
			}
			real := lens[f]
			if idx != i {
				real += 2
			}
			if ci.arr[idx] < real {
				ci.lineLen += real - ci.arr[idx]
				ci.arr[idx] = real
				ci.valid = ci.lineLen < width
			}
		}
	}
	cols := 1
	for i := maxCols; i > 0; i-- {
		if infos[i-1].valid {
			cols = i
			break
		}
	}
	arr := infos[cols-1].arr
	print := func(e *lsEntry) {
		l.w.WriteString(l.prefix(e, inoW, blkW))
		l.w.WriteString(l.shown(e.name))
		l.w.WriteString(l.indicator(e.st.Mode, e.statOK))
	}
	if byCols {
		rows := n/cols + min(1, n%cols)
		for row := 0; row < rows; row++ {
			col, pos := 0, 0
			for f := row; ; {
				print(ents[f])
				nl, mx := lens[f], arr[col]
				col++
				f += rows
				if f >= n {
					break
				}
				lsIndent(l, pos+nl, pos+mx)
				pos += mx
			}
			l.w.WriteByte('\n')
		}
		return
	}
	pos := 0
	print(ents[0])
	nl, mx := lens[0], arr[0]
	for f := 1; f < n; f++ {
		col := f % cols
		if col == 0 {
			l.w.WriteByte('\n')
			pos = 0
		} else {
			lsIndent(l, pos+nl, pos+mx)
			pos += mx
		}
		print(ents[f])
		nl, mx = lens[f], arr[col]
	}
	l.w.WriteByte('\n')
}

func lsIndent(l *lister, from, to int) {
	for from < to {
		if to/8 > (from+1)/8 {
			l.w.WriteByte('\t')
			from += 8 - from%8
		} else {
			l.w.WriteByte(' ')
			from++
		}
	}
}
