package mcp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"rung.dev/rung"
)

// Text helpers of the file and exec tools: pure functions over strings
// and readers, tested on their own.

// cutMiddle returns s cut to about max bytes, keeping its start and its
// end (where a command's errors and summary usually are) around a marker
// line, and how many bytes were left out. Cuts fall on UTF-8 boundaries.
func cutMiddle(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	head := max / 2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := len(s) - (max - max/2)
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	cut := tail - head
	return s[:head] + fmt.Sprintf("\n[... %d bytes cut here by rung ...]\n", cut) + s[tail:], cut
}

// replaceExact replaces old with new in content: its one occurrence, or
// every occurrence when all is set. It fails (rung.ErrInvalid) when old
// is empty or equal to new, does not occur, or occurs more than once
// without all; a near miss (a match but for indentation or line endings)
// is named, since that is what an agent gets wrong.
func replaceExact(content, old, new string, all bool) (string, int, error) {
	switch {
	case old == "":
		return "", 0, rung.Errorf(rung.ErrInvalid, "old_string is empty: to create or overwrite a whole file, use file_write")
	case old == new:
		return "", 0, rung.Errorf(rung.ErrInvalid, "old_string and new_string are the same: nothing to change")
	}
	n := strings.Count(content, old)
	switch {
	case n == 0:
		return "", 0, rung.Errorf(rung.ErrInvalid, "old_string not found%s; it must match the file exactly, whitespace included (read the file again with file_read)", nearMiss(content, old))
	case n > 1 && !all:
		return "", 0, rung.Errorf(rung.ErrInvalid, "old_string occurs %d times (first at line %d): include more of the surrounding lines to make it unique, or set replace_all to replace every one", n, lineOf(content, strings.Index(content, old)))
	case all:
		return strings.ReplaceAll(content, old, new), n, nil
	}
	return strings.Replace(content, old, new, 1), 1, nil
}

// nearMiss describes where old would match but for line endings or each
// line's surrounding whitespace, or is "".
func nearMiss(content, old string) string {
	if strings.Contains(content, "\r\n") && !strings.Contains(old, "\r\n") && strings.Contains(content, strings.ReplaceAll(old, "\n", "\r\n")) {
		return " (the file has CRLF line endings: old_string must too)"
	}
	want := strings.Split(strings.TrimSpace(old), "\n")
	for i := range want {
		want[i] = strings.TrimSpace(want[i])
	}
	if len(want) == 1 && want[0] == "" {
		return ""
	}
	lines := strings.Split(content, "\n")
	for i := 0; i+len(want) <= len(lines); i++ {
		match := true
		for j, w := range want {
			if strings.TrimSpace(lines[i+j]) != w {
				match = false
				break
			}
		}
		if match {
			return fmt.Sprintf(" (lines %d-%d match it but for indentation or surrounding whitespace)", i+1, i+len(want))
		}
	}
	return ""
}

// lineOf is the 1-based line of byte offset off in s.
func lineOf(s string, off int) int { return strings.Count(s[:off], "\n") + 1 }

// lineRange is part of a file, as file_read returns it.
type lineRange struct {
	content   string
	start     int  // first line returned (1-based)
	end       int  // last line returned; start-1 when none
	total     int  // lines in the file, when the read reached its end (else 0)
	more      bool // the file goes on after end
	longLines bool // a line was cut at maxBytes
}

// readLines reads lines start.. start+count-1 (1-based) of r, stopping
// early once maxBytes are collected; a single longer line is cut there.
// It reads no further than it needs, plus one byte to tell whether more
// follows.
func readLines(r io.Reader, start, count, maxBytes int) (lineRange, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	lr := lineRange{start: start, end: start - 1}
	var buf bytes.Buffer
	for line := 1; ; line++ {
		if line >= start+count || buf.Len() >= maxBytes {
			switch _, err := br.Peek(1); {
			case err == nil:
				lr.more = true
			case err == io.EOF:
				lr.total = line - 1
			default:
				return lineRange{}, err
			}
			break
		}
		keep := line >= start
		budget := maxBytes - buf.Len()
		n, cut, err := readLine(br, &buf, keep, budget)
		if err != nil && err != io.EOF {
			return lineRange{}, err
		}
		if n > 0 && keep {
			lr.end = line
			lr.longLines = lr.longLines || cut
		}
		if err == io.EOF {
			if n > 0 {
				lr.total = line
			} else {
				lr.total = line - 1
			}
			break
		}
	}
	lr.content = buf.String()
	return lr, nil
}

// readLine reads one line (with its newline) from br, appending it to
// buf when keep is set, at most budget bytes of it (cut reports a longer
// line; the rest is read and dropped). n is the line's length in the
// file; err is io.EOF at the end of the input.
func readLine(br *bufio.Reader, buf *bytes.Buffer, keep bool, budget int) (n int, cut bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		n += len(frag)
		if keep {
			take := min(len(frag), budget)
			buf.Write(frag[:take])
			budget -= take
			cut = cut || take < len(frag)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return n, cut, err
	}
}

// shellQuote quotes s for bash as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// match is one line file_search found.
type match struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// maxMatchText bounds one matching line's text (minified files have
// lines of megabytes).
const maxMatchText = 400

// parseGrep reads `grep -nZ` output (path NUL line ':' text), keeping at
// most max matches; n counts them all.
func parseGrep(out string, max int) (ms []match, n int) {
	for l := range strings.Lines(out) {
		path, rest, ok := strings.Cut(strings.TrimSuffix(l, "\n"), "\x00")
		if !ok {
			continue // a context separator or a message
		}
		num, text, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		var line int
		if _, err := fmt.Sscanf(num, "%d", &line); err != nil {
			continue
		}
		n++
		if len(ms) < max {
			if len(text) > maxMatchText {
				t, _ := cutMiddle(text, maxMatchText)
				text = t
			}
			ms = append(ms, match{Path: path, Line: line, Text: text})
		}
	}
	return ms, n
}
