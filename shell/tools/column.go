package tools

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"unicode/utf8"

	"rung.dev/rung/shell"
)

// column: util-linux 2.38 column (-t table mode with -s -o; fill modes
// with -c and -x, padded with tabs as BSD column does). Other table
// options (-N -R -J -l -e ...) are refused.

var columnOpts = NewOptions("t,table", "s,separator=", "o,output-separator=", "c,output-width=", "x,fillrows",
	"n,table-name=", "O,table-order=", "N,table-columns=", "l,table-columns-limit=", "E,table-noextreme=",
	"d,table-noheadings", "e,table-header-repeat", "H,table-hide=", "R,table-right=", "T,table-truncate=",
	"W,table-wrap=", "J,json", "L,keep-empty-lines", "r,tree=", "i,tree-id=", "p,tree-parent=")

var columnUnimpl = []string{"table-name", "table-order", "table-columns", "table-columns-limit", "table-noextreme",
	"table-noheadings", "table-header-repeat", "table-hide", "table-right", "table-truncate", "table-wrap", "json",
	"keep-empty-lines", "tree", "tree-id", "tree-parent"}

func txWidth(s []byte) int {
	if utf8.Valid(s) {
		w := 0
		for _, r := range string(s) {
			if r < 0x80 {
				w++
			} else {
				w += txRuneWidth(r)
			}
		}
		return w
	}
	return len(s)
}

func runColumn(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, columnOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	if o, bad := txRefused(opts, columnUnimpl...); bad {
		return txFail(c, o)
	}
	table, fillRows := false, false
	seps, outSep := "", "  "
	width := 80
	if v, err := strconv.Atoi(c.Getenv("COLUMNS")); err == nil && v > 0 {
		width = v
	}
	for _, o := range opts {
		switch o.Key {
		case "table":
			table = true
		case "separator":
			seps = o.Value
		case "output-separator":
			outSep = o.Value
		case "output-width":
			v, err := strconv.Atoi(o.Value)
			if err != nil || v < 0 {
				c.Errorf("invalid columns argument: '%s'", o.Value)
				return 1
			}
			width = v
		case "fillrows":
			fillRows = true
		}
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	var lines [][]byte
	status := 0
	for _, name := range files {
		r, err := txOpen(ctx, c, name)
		if err != nil {
			c.Errorf("%s: %s", name, txErr(err))
			status = 1
			continue
		}
		data, err := c.ReadAll(r)
		r.Close()
		if err != nil {
			if txIsCtx(err) {
				return txCtxStatus
			}
			c.Errorf("%s: %s", name, txErr(err))
			status = 1
			continue
		}
		for _, l := range txSplit(data, '\n') {
			if len(bytes.TrimRight(l, " \t")) > 0 || table && seps != "" && len(l) > 0 {
				lines = append(lines, l)
			}
		}
	}
	out := newTxOut(c.Stdout)
	if table {
		columnTable(out, lines, seps, outSep)
	} else {
		columnFill(out, lines, width, fillRows)
	}
	if out.Flush() != nil {
		return 1
	}
	return status
}

func columnTable(out *txOut, lines [][]byte, seps, outSep string) {
	var rows [][][]byte
	var widths []int
	for _, l := range lines {
		var cells [][]byte
		if seps == "" {
			for _, f := range strings.FieldsFunc(string(l), func(r rune) bool { return r == ' ' || r == '\t' }) {
				cells = append(cells, []byte(f))
			}
		} else {
			s := string(l)
			for {
				i := strings.IndexAny(s, seps)
				if i < 0 {
					cells = append(cells, []byte(s))
					break
				}
				cells = append(cells, []byte(s[:i]))
				_, size := utf8.DecodeRuneInString(s[i:])
				s = s[i+size:]
			}
		}
		for i, cell := range cells {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], txWidth(cell))
		}
		rows = append(rows, cells)
	}
	for _, cells := range rows {
		for i := range widths {
			var cell []byte
			if i < len(cells) {
				cell = cells[i]
			}
			out.Write(cell)
			if i == len(widths)-1 {
				break
			}
			for k := txWidth(cell); k < widths[i]; k++ {
				out.WriteByte(' ')
			}
			out.WriteString(outSep)
		}
		out.WriteByte('\n')
	}
}

func columnFill(out *txOut, lines [][]byte, termWidth int, fillRows bool) {
	if len(lines) == 0 {
		return
	}
	maxLen := 0
	for _, l := range lines {
		maxLen = max(maxLen, txWidth(l))
	}
	maxLen = (maxLen + 8) &^ 7
	numCols := termWidth / maxLen
	if numCols == 0 {
		numCols = 1
	}
	pad := func(chcnt, endcol int) {
		for {
			next := (chcnt + 8) &^ 7
			if next > endcol {
				return
			}
			out.WriteByte('\t')
			chcnt = next
		}
	}
	if fillRows {
		chcnt, col, endcol := 0, 0, maxLen
		for i, l := range lines {
			out.Write(l)
			chcnt += txWidth(l)
			if i == len(lines)-1 {
				break
			}
			col++
			if col == numCols {
				chcnt, col, endcol = 0, 0, maxLen
				out.WriteByte('\n')
				continue
			}
			pad(chcnt, endcol)
			chcnt = max(chcnt, endcol)
			endcol += maxLen
		}
		out.WriteByte('\n')
		return
	}
	numRows := (len(lines) + numCols - 1) / numCols
	for row := 0; row < numRows; row++ {
		endcol, chcnt := maxLen, 0
		for base, col := row, 0; col < numCols; col++ {
			out.Write(lines[base])
			chcnt += txWidth(lines[base])
			if base += numRows; base >= len(lines) {
				break
			}
			for {
				next := (chcnt + 8) &^ 7
				if next > endcol {
					break
				}
				out.WriteByte('\t')
				chcnt = next
			}
			endcol += maxLen
		}
		out.WriteByte('\n')
	}
}
