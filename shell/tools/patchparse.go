package tools

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// patchHunk is one unified hunk: the old and new line sequences (context
// lines appear in both), with their starting lines.
type patchHunk struct {
	oldStart, newStart int // 1-based, as in the @@ line
	old, new           []string
	oldNoEOL, newNoEOL bool
	prefix, suffix     int      // leading and trailing context lines
	text               []string // the hunk as written, for .rej files
}

// patchFile is the part of a patch about one file.
type patchFile struct {
	oldName, newName   string // as written, before -p stripping
	oldStamp, newStamp string // the rest of the ---/+++ lines
	header             []string
	startLine          int // input line of the "---" line
	hunks              []*patchHunk
	oldIsNull          bool
	newIsNull          bool
}

// patchParse reads every file section of a unified diff. Lines that are
// not part of a section (commit messages, "diff --git", "index") are
// kept as the header of the next section.
func patchParse(r io.Reader) ([]*patchFile, bool, error) {
	br := bufio.NewReader(r)
	var lines []string
	for {
		l, err := br.ReadString('\n')
		if l != "" {
			lines = append(lines, l)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	var files []*patchFile
	var header []string
	sawOther := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ") {
			pf := &patchFile{header: header, startLine: i + 1}
			header = nil
			pf.oldName, pf.oldStamp = splitPatchName(l[4:])
			pf.newName, pf.newStamp = splitPatchName(lines[i+1][4:])
			pf.oldIsNull = pf.oldName == "/dev/null" || strings.HasPrefix(pf.oldStamp, "\t1970-01-01 00:00:00")
			pf.newIsNull = pf.newName == "/dev/null" || strings.HasPrefix(pf.newStamp, "\t1970-01-01 00:00:00")
			i += 2
			for i < len(lines) && strings.HasPrefix(lines[i], "@@ ") {
				h, next, ok := patchParseHunk(lines, i)
				if !ok {
					break
				}
				pf.hunks = append(pf.hunks, h)
				i = next
			}
			i--
			files = append(files, pf)
			continue
		}
		if strings.HasPrefix(l, "*** ") || strings.HasPrefix(l, "***************") {
			sawOther = true
		}
		header = append(header, l)
	}
	return files, sawOther, nil
}

func splitPatchName(s string) (string, string) {
	s = strings.TrimRight(s, "\r\n")
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// patchParseHunk reads the hunk whose @@ line is lines[i].
func patchParseHunk(lines []string, i int) (*patchHunk, int, bool) {
	at := strings.TrimRight(lines[i], "\n")
	rest := strings.TrimPrefix(at, "@@ -")
	end := strings.Index(rest, " @@")
	if end < 0 {
		return nil, i, false
	}
	parts := strings.SplitN(rest[:end], " +", 2)
	if len(parts) != 2 {
		return nil, i, false
	}
	oStart, oLen, ok1 := patchParseRange(parts[0])
	nStart, nLen, ok2 := patchParseRange(parts[1])
	if !ok1 || !ok2 {
		return nil, i, false
	}
	h := &patchHunk{oldStart: oStart, newStart: nStart, text: []string{lines[i]}}
	i++
	last := byte(0)
	for i < len(lines) && (len(h.old) < oLen || len(h.new) < nLen || strings.HasPrefix(lines[i], "\\")) {
		l := lines[i]
		if strings.HasPrefix(l, "\\") {
			switch last {
			case '-':
				h.oldNoEOL = true
			case '+':
				h.newNoEOL = true
			case ' ':
				h.oldNoEOL, h.newNoEOL = true, true
			}
			h.text = append(h.text, l)
			i++
			continue
		}
		body := strings.TrimSuffix(l, "\n")
		kind := byte(' ')
		if body != "" {
			kind, body = body[0], body[1:]
		}
		switch kind {
		case ' ':
			h.old = append(h.old, body)
			h.new = append(h.new, body)
		case '-':
			h.old = append(h.old, body)
		case '+':
			h.new = append(h.new, body)
		default:
			return nil, i, false
		}
		last = kind
		h.text = append(h.text, l)
		i++
	}
	if len(h.old) != oLen || len(h.new) != nLen {
		return nil, i, false
	}
	// Leading and trailing context.
	for h.prefix < len(h.old) && h.prefix < len(h.new) && patchIsContext(h.text, h.prefix) {
		h.prefix++
	}
	for k := len(h.text) - 1; k > 0; k-- {
		t := h.text[k]
		if strings.HasPrefix(t, "\\") {
			continue
		}
		if t == "\n" || strings.HasPrefix(t, " ") {
			h.suffix++
			continue
		}
		break
	}
	h.suffix = min(h.suffix, len(h.old)-h.prefix)
	return h, i, true
}

// patchIsContext reports whether the n-th body line of a hunk is context.
func patchIsContext(text []string, n int) bool {
	k := 0
	for _, t := range text[1:] {
		if strings.HasPrefix(t, "\\") {
			continue
		}
		if k == n {
			return t == "\n" || strings.HasPrefix(t, " ")
		}
		k++
	}
	return false
}

func patchParseRange(s string) (int, int, bool) {
	a, b, has := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil {
		return 0, 0, false
	}
	n := 1
	if has {
		n, err = strconv.Atoi(b)
		if err != nil {
			return 0, 0, false
		}
	}
	return start, n, true
}

// swap reverses a hunk (for -R and the reversed-patch check).
func (h *patchHunk) swap() *patchHunk {
	r := *h
	r.oldStart, r.newStart = h.newStart, h.oldStart
	r.old, r.new = h.new, h.old
	r.oldNoEOL, r.newNoEOL = h.newNoEOL, h.oldNoEOL
	return &r
}
