package tools

import (
	"bytes"
	"context"
	"errors"
	"io"
	"regexp"
	"strconv"

	"rung.dev/rung/shell"
)

// nl: GNU nl 9.1 (-b -h -f with a t n pBRE, -n ln rn rz, -w -s -v -i -l
// -d -p; logical page sections delimited by \:\:\:, \:\: and \:).

var nlOpts = NewOptions("b,body-numbering=", "h,header-numbering=", "f,footer-numbering=", "n,number-format=",
	"w,number-width=", "s,number-separator=", "v,starting-line-number=", "i,line-increment=",
	"l,join-blank-lines=", "d,section-delimiter=", "p,no-renumber")

type nlStyle struct {
	kind byte // 'a', 't', 'n', 'p'
	re   *regexp.Regexp
}

func parseNlStyle(s string) (nlStyle, error) {
	if s == "" {
		return nlStyle{}, errors.New("invalid")
	}
	switch s[0] {
	case 'a', 't', 'n':
		if len(s) == 1 {
			return nlStyle{kind: s[0]}, nil
		}
	case 'p':
		re, err := txCompileBRE(s[1:])
		if err != nil {
			return nlStyle{}, err
		}
		return nlStyle{kind: 'p', re: re}, nil
	}
	return nlStyle{}, errors.New("invalid")
}

func (st nlStyle) numbers(line []byte) bool {
	switch st.kind {
	case 'a':
		return true
	case 't':
		return len(line) > 0
	case 'p':
		return st.re.Match(line)
	}
	return false
}

func runNl(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, nlOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	styles := [3]nlStyle{{kind: 'n'}, {kind: 't'}, {kind: 'n'}} // header, body, footer
	format, width, sep := "rn", 6, "\t"
	start, incr, join := int64(1), int64(1), int64(1)
	delim := `\:`
	renumber := true
	for _, o := range opts {
		var err error
		switch o.Key {
		case "header-numbering", "body-numbering", "footer-numbering":
			var s nlStyle
			s, err = parseNlStyle(o.Value)
			if errors.Is(err, errBREUnsupported) {
				return c.Fail("regular expression " + o.Value)
			}
			if err != nil {
				c.Errorf("invalid %s style: %s", map[string]string{"header-numbering": "header", "body-numbering": "body",
					"footer-numbering": "footer"}[o.Key], locQuote(o.Value))
				return 1
			}
			styles[map[string]int{"header-numbering": 0, "body-numbering": 1, "footer-numbering": 2}[o.Key]] = s
		case "number-format":
			if o.Value != "ln" && o.Value != "rn" && o.Value != "rz" {
				c.Errorf("invalid line numbering format: %s", locQuote(o.Value))
				return 1
			}
			format = o.Value
		case "number-width":
			var n int64
			n, err = strconv.ParseInt(o.Value, 10, 32)
			if err != nil || n < 1 {
				why := ": Numerical result out of range" // GNU's xdectoimax: a number out of range
				if err != nil && !errors.Is(err, strconv.ErrRange) {
					why = ""
				}
				c.Errorf("invalid line number field width: %s%s", locQuote(o.Value), why)
				return 1
			}
			width = int(n)
		case "number-separator":
			sep = o.Value
		case "starting-line-number":
			if start, err = strconv.ParseInt(o.Value, 10, 64); err != nil {
				c.Errorf("invalid starting line number: %s", locQuote(o.Value))
				return 1
			}
		case "line-increment":
			if incr, err = strconv.ParseInt(o.Value, 10, 64); err != nil {
				c.Errorf("invalid line number increment: %s", locQuote(o.Value))
				return 1
			}
		case "join-blank-lines":
			if join, err = strconv.ParseInt(o.Value, 10, 64); err != nil || join < 1 {
				c.Errorf("invalid line number of blank lines: %s", locQuote(o.Value))
				return 1
			}
		case "section-delimiter":
			delim = o.Value
			if len(delim) == 1 {
				delim += ":"
			}
		case "no-renumber":
			renumber = false
		}
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	out := newTxOut(c.Stdout)
	defer out.Flush()
	blankNo := bytes.Repeat([]byte(" "), width+len(sep))
	num, section, blanks := start, 1, int64(0)
	status := 0
	d3, d2, d1 := []byte(delim+delim+delim), []byte(delim+delim), []byte(delim)
	for _, name := range files {
		r, err := txOpen(ctx, c, name)
		if err != nil {
			c.Errorf("%s: %s", name, txErr(err))
			status = 1
			continue
		}
		lr := newTxLineReader(c, r, '\n')
		for {
			line, err := lr.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if txIsCtx(err) {
					return txCtxStatus
				}
				c.Errorf("%s: %s", name, txErr(err))
				status = 1
				break
			}
			text := bytes.TrimSuffix(line, []byte("\n"))
			if delim != "" {
				newSec := -1
				switch {
				case bytes.Equal(text, d3):
					newSec = 0
				case bytes.Equal(text, d2):
					newSec = 1
				case bytes.Equal(text, d1):
					newSec = 2
				}
				if newSec >= 0 {
					section = newSec
					if renumber {
						num = start
					}
					out.WriteByte('\n')
					continue
				}
			}
			st := styles[section]
			number := st.numbers(text)
			if st.kind == 'a' && len(text) == 0 {
				blanks++
				number = blanks >= join
				if number {
					blanks = 0
				}
			} else {
				blanks = 0
			}
			if number {
				out.WriteString(nlFormat(num, format, width))
				out.WriteString(sep)
				num += incr
			} else {
				out.Write(blankNo)
			}
			out.Write(line)
			if !bytes.HasSuffix(line, []byte("\n")) {
				out.WriteByte('\n')
			}
		}
		r.Close()
	}
	if out.Flush() != nil {
		return 1
	}
	return status
}

func nlFormat(n int64, format string, width int) string {
	s := strconv.FormatInt(n, 10)
	if len(s) >= width {
		return s
	}
	pad := width - len(s)
	switch format {
	case "ln":
		return s + string(bytes.Repeat([]byte(" "), pad))
	case "rz":
		if n < 0 {
			return "-" + string(bytes.Repeat([]byte("0"), pad)) + s[1:]
		}
		return string(bytes.Repeat([]byte("0"), pad)) + s
	}
	return string(bytes.Repeat([]byte(" "), pad)) + s
}
