package tools

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"rung.dev/rung/shell"
)

// jqInputs yields the input values: JSON texts or, with -R, lines, from
// the files in order or stdin.
type jqInputs struct {
	r      *jqRun
	files  []string
	idx    int
	dec    *jqDecoder
	lines  *bufio.Reader
	closer io.Closer
	name   string
	failed int
	stop   bool
	opened bool
	carry  string // with -R, a last line without newline, continued by the next file
	held   int64  // bytes counted in the memory budget for the input read so far
}

func (in *jqInputs) where() string {
	if in.name == "" {
		return "<stdin>:0"
	}
	return in.name + ":0"
}

// Next returns the next input value, or an error value after reporting
// an unreadable file or invalid JSON.
func (in *jqInputs) Next() (any, bool) {
	r := in.r
	for !in.stop {
		if in.dec == nil && in.lines == nil {
			if !in.open() {
				if r.o.rawIn && in.carry != "" {
					line := in.carry
					in.carry = ""
					return line, true
				}
				return nil, false
			}
		}
		if r.o.rawIn {
			line, err := in.lines.ReadString('\n')
			if err != nil {
				// jq reads its files as one stream: an unterminated
				// last line runs on into the next file.
				in.carry += line
				in.closeCur()
				continue
			}
			line, in.carry = in.carry+line, ""
			if line != "" {
				if r.o.slurp {
					return line, true
				}
				return strings.TrimSuffix(line, "\n"), true
			}
			if err != nil {
				in.closeCur()
			}
			continue
		}
		v, err := in.dec.Next()
		if err == io.EOF {
			in.closeCur()
			continue
		}
		if err != nil {
			fmt.Fprintf(&r.errb, "parse error: %v\n", err)
			r.parseErr = true
			in.stop = true
			return err, true
		}
		return v, true
	}
	return nil, false
}

func (in *jqInputs) closeCur() {
	if in.closer != nil {
		in.closer.Close()
	}
	in.dec, in.lines, in.closer = nil, nil, nil
}

func (in *jqInputs) open() bool {
	r := in.r
	files := r.o.files
	if len(files) == 0 {
		if in.opened {
			return false
		}
		in.opened = true
		in.setReader(r.c.Stdin, nil, "")
		return true
	}
	for in.idx < len(files) {
		name := files[in.idx]
		in.idx++
		f, err := r.c.Open(name)
		if err != nil {
			fmt.Fprintf(&r.errb, "jq: error: Could not open file %s: %s\n", name, shell.ErrText(err))
			in.failed++
			continue
		}
		in.setReader(f, f, name)
		return true
	}
	return false
}

func (in *jqInputs) setReader(rd io.Reader, c io.Closer, name string) {
	in.name, in.closer = name, c
	rd = &jqBudgetReader{in: in, r: rd}
	if in.r.o.rawIn {
		in.lines = bufio.NewReaderSize(rd, 64<<10)
		return
	}
	in.dec = newJQDecoder(rd, in.r.order)
}

// jqValueCost is the bytes of parsed values (interfaces, maps, slices) one
// byte of JSON text costs, roughly.
const jqValueCost = 4

// jqBudgetReader counts the input jq reads against the exec's memory
// budget while the values made of it are alive: until the value has been
// run through the filter, or to the end with --slurp. A value bigger than
// the budget ends the exec (memory_bytes) while it is being read.
type jqBudgetReader struct {
	in *jqInputs
	r  io.Reader
}

func (b *jqBudgetReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		cost := int64(n) * jqValueCost
		if rerr := b.in.r.c.Reserve(cost); rerr != nil {
			return 0, rerr
		}
		b.in.held += cost
	}
	return n, err
}

// release gives back what the values read so far held; streaming jq calls
// it after each value is done.
func (in *jqInputs) release() {
	in.r.c.Release(in.held)
	in.held = 0
}

// jqInputIter serves input and inputs inside the program.
type jqInputIter struct{ r *jqRun }

func (it jqInputIter) Next() (any, bool) {
	v, ok := it.r.inputs.Next()
	if ok {
		if err, isErr := v.(error); isErr {
			return err, true
		}
	}
	return v, ok
}

func (it jqInputIter) Close() error { return nil }
