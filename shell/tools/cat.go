package tools

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strconv"

	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// cat concatenates files like GNU cat 9.1, streaming: a file is never
// held in memory. Reading a FIFO, socket or device would block or reach
// outside the sandbox, so such an operand is refused before any output.

var catSpec = fuNewSpec([]string{
	"A,show-all", "b,number-nonblank", "e", "E,show-ends", "n,number", "s,squeeze-blank",
	"t", "T,show-tabs", "u", "v,show-nonprinting",
}, "help", "version")

// catState is the formatting state, kept across files as GNU does.
type catState struct {
	number, nonblank, ends, tabs, nonprint, squeeze bool
	line                                            int64
	atStart                                         bool
	blanks                                          int // consecutive empty lines seen
}

func runCat(ctx context.Context, c *shell.Call) int {
	opts, files, status, ok := catSpec.parse(c, 1)
	if !ok {
		return status
	}
	st := &catState{atStart: true}
	for _, o := range opts {
		switch o.Key {
		case "show-all":
			st.nonprint, st.ends, st.tabs = true, true, true
		case "number-nonblank":
			st.nonblank = true
		case "e":
			st.nonprint, st.ends = true, true
		case "show-ends":
			st.ends = true
		case "number":
			st.number = true
		case "squeeze-blank":
			st.squeeze = true
		case "t":
			st.nonprint, st.tabs = true, true
		case "show-tabs":
			st.tabs = true
		case "show-nonprinting":
			st.nonprint = true
		}
	}
	if st.nonblank {
		st.number = false
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	// With several operands, a special file is refused before any output
	// (a stat each). With one, nothing is written before its open, and
	// the open itself refuses a special file (storage.ErrSpecialFile), so
	// the refusal is made there and the stat saved.
	single := len(files) == 1
	for _, f := range files {
		if single || f == "-" || f == "/dev/stdin" || f == "/dev/null" || f == "/dev/zero" {
			continue
		}
		if fi, err := c.FS.Stat(c.Abs(f)); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			if _, isFD := fuDevFD(f); !isFD {
				return c.Fail(catSpecialMsg(f))
			}
		}
	}
	plain := !(st.number || st.nonblank || st.ends || st.tabs || st.nonprint || st.squeeze)
	w := writers64K.get(c.Stdout)
	defer writers64K.put(w)
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			w.Flush()
			return 130
		}
		r, err := c.Open(f)
		if err != nil && single && errors.Is(err, storage.ErrSpecialFile) {
			return c.Fail(catSpecialMsg(f))
		}
		if err != nil {
			w.Flush()
			c.Errorf("%s: %s", fuQuotef(f), fuErr(err))
			status = 1
			continue
		}
		cr := &ctxReader{ctx: ctx, r: r}
		if plain {
			// A file of the view reports EOF with its short read.
			cr.eof, _ = r.(eofReader)
			err = catPlain(w, cr)
		} else {
			err = st.copy(w, cr)
		}
		r.Close()
		if err != nil {
			var we *catWriteErr
			if errors.As(err, &we) {
				return 1
			}
			w.Flush()
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return 130
			}
			c.Errorf("%s: %s", fuQuotef(f), fuErr(err))
			status = 1
		}
	}
	if err := w.Flush(); err != nil {
		return 1
	}
	return status
}

func catSpecialMsg(f string) string {
	return "reading a FIFO, socket or device (" + f + ")"
}

func fuDevFD(name string) (int, bool) {
	const p = "/dev/fd/"
	if len(name) <= len(p) || name[:len(p)] != p {
		return 0, false
	}
	n, err := strconv.Atoi(name[len(p):])
	return n, err == nil
}

type catWriteErr struct{ error }

// eofReader is a file whose ReadEOF returns io.EOF with a short read of a
// regular file (storage's files): one read fewer per file.
type eofReader interface {
	ReadEOF(b []byte) (int, error)
}

// ctxReader checks ctx every read.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
	eof eofReader // when set, read through it instead of r (cat)
}

func (r *ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	if r.eof != nil {
		return r.eof.ReadEOF(p)
	}
	return r.r.Read(p)
}

// copy formats r onto w line by line; lines longer than the buffer are
// handled in pieces.
func (st *catState) copy(w *bufio.Writer, r io.Reader) error {
	br := readers64K.get(r)
	defer readers64K.put(br)
	var num []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			nl := chunk[len(chunk)-1] == '\n'
			body := chunk
			if nl {
				body = chunk[:len(chunk)-1]
			}
			emptyLine := st.atStart && nl && len(body) == 0
			if emptyLine {
				st.blanks++
				if st.squeeze && st.blanks > 1 {
					continue
				}
			} else if st.atStart {
				st.blanks = 0
			}
			if st.atStart && (st.number || (st.nonblank && !emptyLine)) {
				st.line++
				num = num[:0]
				num = strconv.AppendInt(num, st.line, 10)
				for i := len(num); i < 6; i++ {
					w.WriteByte(' ')
				}
				w.Write(num)
				w.WriteByte('\t')
			}
			if st.ends && nl && len(body) > 0 && body[len(body)-1] == '\r' && !st.nonprint {
				// GNU cat 9 shows the \r of a \r\n line ending as ^M.
				st.writeBody(w, body[:len(body)-1])
				w.WriteString("^M")
			} else {
				st.writeBody(w, body)
			}
			if nl {
				if st.ends {
					w.WriteByte('$')
				}
				if _, werr := w.Write([]byte{'\n'}); werr != nil {
					return &catWriteErr{werr}
				}
			}
			st.atStart = nl
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (st *catState) writeBody(w *bufio.Writer, b []byte) {
	if !st.nonprint && !st.tabs {
		w.Write(b)
		return
	}
	for _, ch := range b {
		switch {
		case ch == '\t':
			if st.tabs {
				w.WriteString("^I")
			} else {
				w.WriteByte(ch)
			}
		case !st.nonprint:
			w.WriteByte(ch)
		case ch >= 128:
			w.WriteString("M-")
			ch -= 128
			switch {
			case ch < 32:
				w.WriteByte('^')
				w.WriteByte(ch + 64)
			case ch == 127:
				w.WriteString("^?")
			default:
				w.WriteByte(ch)
			}
		case ch < 32:
			w.WriteByte('^')
			w.WriteByte(ch + 64)
		case ch == 127:
			w.WriteString("^?")
		default:
			w.WriteByte(ch)
		}
	}
}

// catPlain copies r to w. (io.Copy would hand r to the writer's ReadFrom,
// and a bufio.Writer keeps a read error as its own sticky error.)
func catPlain(w *bufio.Writer, r io.Reader) error {
	bp := bytes32K.get()
	defer bytes32K.put(bp)
	buf := *bp
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return &catWriteErr{werr}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
