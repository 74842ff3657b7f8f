package awk

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// input reads records from one file, command output or stdin.
type input struct {
	r      *bufio.Reader
	closer io.Closer
	eof    bool
	buf    []byte // pending bytes for regex RS
}

func newInput(r io.Reader, c io.Closer) *input {
	return &input{r: bufio.NewReaderSize(r, 64<<10), closer: c}
}

// read returns the next record under rs; ok is false at end of input.
func (in *interp) readRecord(src *input) (string, bool) {
	if src.eof && len(src.buf) == 0 {
		return "", false
	}
	rs := in.rs
	switch {
	case rs == "\n" || (len(rs) == 1 && len(src.buf) == 0):
		return readDelim(src, rs[0])
	case rs == "":
		return in.readParagraph(src)
	}
	return in.readRegex(src, rs)
}

func readDelim(src *input, d byte) (string, bool) {
	line, err := src.r.ReadSlice(d)
	if err == bufio.ErrBufferFull {
		acc := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = src.r.ReadSlice(d)
			acc = append(acc, line...)
		}
		line = acc
	}
	if err != nil {
		src.eof = true
		if err != io.EOF {
			panic(&runtimeError{msg: fmt.Sprintf("read error (%s)", errText(err)), plain: true})
		}
		if len(line) == 0 {
			return "", false
		}
		return string(line), true
	}
	return string(line[:len(line)-1]), true
}

func (in *interp) readParagraph(src *input) (string, bool) {
	// skip leading newlines
	for {
		c, err := src.r.ReadByte()
		if err != nil {
			src.eof = true
			return "", false
		}
		if c != '\n' {
			src.r.UnreadByte()
			break
		}
	}
	var b strings.Builder
	for {
		line, ok := readDelim(src, '\n')
		if !ok {
			break
		}
		if line == "" {
			// consume further blank lines
			for {
				c, err := src.r.ReadByte()
				if err != nil {
					src.eof = true
					break
				}
				if c != '\n' {
					src.r.UnreadByte()
					break
				}
			}
			break
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
		if src.eof {
			break
		}
	}
	return b.String(), true
}

func (in *interp) readRegex(src *input, rs string) (string, bool) {
	var re *ere
	if len(rs) == 1 {
		re, _ = in.rc.get(regexQuote(rs))
	} else {
		var err error
		if re, err = in.rc.get(rs); err != nil {
			in.fatalf("regular expression compile failed (%s)\n%s", err, rs)
		}
	}
	for {
		if loc := re.FindIndex(src.buf); loc != nil && loc[1] > loc[0] && (loc[1] < len(src.buf) || src.eof) {
			rec := string(src.buf[:loc[0]])
			src.buf = src.buf[loc[1]:]
			return rec, true
		}
		if src.eof {
			if len(src.buf) == 0 {
				return "", false
			}
			rec := string(src.buf)
			src.buf = nil
			return rec, true
		}
		chunk := make([]byte, 32<<10)
		n, err := src.r.Read(chunk)
		src.buf = append(src.buf, chunk[:n]...)
		if err != nil {
			src.eof = true
			if err != io.EOF {
				panic(&runtimeError{msg: fmt.Sprintf("read error (%s)", errText(err)), plain: true})
			}
		}
	}
}

// nextMain returns the next record of the main input, opening ARGV
// operands as needed.
func (in *interp) nextMain() (string, bool) {
	for {
		if in.main == nil {
			if !in.openNextArg() {
				return "", false
			}
		}
		in.tick()
		rec, ok := in.readRecord(in.main)
		if ok {
			return rec, true
		}
		in.closeMain()
	}
}

func (in *interp) closeMain() {
	if in.main != nil && in.main.closer != nil {
		in.main.closer.Close()
	}
	in.main = nil
}

// openNextArg opens the next file operand, processing var=value
// assignments on the way. It reports false when none is left.
func (in *interp) openNextArg() bool {
	if in.noMoreInput {
		return false
	}
	argv := in.globals[vARGV].arr
	for {
		argc := toInt(toNum(in.globals[vARGC].v))
		if in.argIdx >= argc {
			break
		}
		i := in.argIdx
		in.argIdx++
		key := in.keyStr(num(float64(i)))
		p, ok := argv.m[key]
		if !ok {
			continue
		}
		arg := in.toStr(*p)
		if arg == "" {
			continue
		}
		if name, val, ok := cmdAssign(arg); ok {
			in.assignVar(name, val)
			continue
		}
		in.usedFile = true
		in.globals[vFILENAME].v = str(arg)
		in.globals[vFNR].v = num(0)
		if arg == "-" || arg == "/dev/stdin" {
			in.main = newInput(in.c.Stdin, nil)
			return true
		}
		f, err := in.c.Open(arg)
		if err != nil {
			panic(&runtimeError{msg: fmt.Sprintf("cannot open %s (%s)", arg, errText(err)), plain: true})
		}
		in.main = newInput(f, f)
		return true
	}
	if !in.usedFile {
		in.usedFile = true
		in.globals[vFILENAME].v = str("-")
		in.main = newInput(in.c.Stdin, nil)
		return true
	}
	in.noMoreInput = true
	return false
}

// getline evaluates the three forms of getline.
func (in *interp) getline(g *getlineExpr) value {
	switch g.kind {
	case getPlain:
		rec, ok := in.nextMain()
		if !ok {
			return num(0)
		}
		in.incr(vNR)
		in.incr(vFNR)
		in.storeGetline(g, rec)
		return num(1)
	case getFile:
		name := in.toStr(in.eval(g.src))
		src, ok := in.inputs[name]
		if !ok {
			var r io.ReadCloser
			var err error
			if name == "-" || name == "/dev/stdin" {
				r = io.NopCloser(in.c.Stdin)
			} else if r, err = in.c.Open(name); err != nil {
				return num(-1)
			}
			src = newInput(r, r)
			in.inputs[name] = src
		}
		rec, ok := in.readRecord(src)
		if !ok {
			return num(0)
		}
		in.storeGetline(g, rec)
		return num(1)
	}
	cmd := in.toStr(in.eval(g.src))
	src, ok := in.inputs[cmd]
	if !ok {
		in.flushAll()
		var out bytes.Buffer
		in.runCommand(cmd, bytes.NewReader(nil), &out)
		src = newInput(bytes.NewReader(out.Bytes()), nil)
		in.inputs[cmd] = src
	}
	rec, ok := in.readRecord(src)
	if !ok {
		return num(0)
	}
	// mawk leaves NR alone for cmd | getline (POSIX would count it)
	in.storeGetline(g, rec)
	return num(1)
}

func (in *interp) storeGetline(g *getlineExpr, rec string) {
	if g.lhs == nil {
		in.setRecord(rec)
		return
	}
	in.assign(g.lhs, strnum(rec))
}

func (in *interp) incr(idx int) {
	in.globals[idx].v = num(toNum(in.globals[idx].v) + 1)
}

// output is an open output redirection.
type output struct {
	w      *bufio.Writer
	closer io.Closer
	cmd    string        // for pipes: the command, run at close
	pipe   *bytes.Buffer // for pipes: what was written
}

func (in *interp) outputFor(redir tok, name string) *output {
	if o, ok := in.outputs[name]; ok {
		return o
	}
	o := &output{}
	switch redir {
	case tPipe:
		// mawk flushes its output before it forks the command
		in.flushAll()
		o.pipe = &bytes.Buffer{}
		o.cmd = name
		in.pipeOrder = append(in.pipeOrder, name)
		o.w = bufio.NewWriter(o.pipe)
	default:
		flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if redir == tAppend {
			flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		if name == "/dev/stdout" || name == "-" {
			o.w = in.stdout
			break
		}
		if name == "/dev/stderr" {
			o.w = bufio.NewWriterSize(in.c.Stderr, 0)
			break
		}
		f, err := in.c.Create(name, flag, 0o666)
		if err != nil {
			in.fatalf("cannot open \"%s\" for output", name)
		}
		o.w, o.closer = bufio.NewWriter(f), f
	}
	in.outputs[name] = o
	return o
}

// closeStream implements close(): it returns the close status.
func (in *interp) closeStream(name string) int {
	status := -1
	if o, ok := in.outputs[name]; ok {
		delete(in.outputs, name)
		status = in.finishOutput(o)
	}
	if src, ok := in.inputs[name]; ok {
		delete(in.inputs, name)
		if src.closer != nil {
			src.closer.Close()
		}
		status = 0
	}
	return status
}

func (in *interp) finishOutput(o *output) int {
	if o.w != in.stdout {
		o.w.Flush()
	}
	if o.pipe != nil {
		// The command writes straight to stdout, ahead of anything
		// still in our buffer, as mawk's child process does.
		return in.runCommand(o.cmd, bytes.NewReader(o.pipe.Bytes()), in.c.Stdout)
	}
	if o.closer != nil {
		if err := o.closer.Close(); err != nil {
			return -1
		}
	}
	return 0
}

func (in *interp) flushAll() {
	in.stdout.Flush()
	for _, o := range in.outputs {
		if o.pipe == nil {
			o.w.Flush()
		}
	}
}

// closeAll closes every redirection at exit: pipes first, the most
// recently opened first as mawk does (their output precedes what stdout
// still buffers), then files, then stdout.
func (in *interp) closeAll() {
	for i := len(in.pipeOrder) - 1; i >= 0; i-- {
		name := in.pipeOrder[i]
		if o, ok := in.outputs[name]; ok && o.pipe != nil {
			in.finishOutput(o)
			delete(in.outputs, name)
		}
	}
	for name, o := range in.outputs {
		in.finishOutput(o)
		delete(in.outputs, name)
	}
	in.stdout.Flush()
	for _, src := range in.inputs {
		if src.closer != nil {
			src.closer.Close()
		}
	}
}

// errText is the C library's text for a file error.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	s := err.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}
