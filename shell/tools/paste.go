package tools

import (
	"bytes"
	"context"
	"io"

	"rung.dev/rung/shell"
)

// paste: GNU paste 9.1 (-d LIST with \n \t \\ \0 escapes, -s, -z).

var pasteOpts = NewOptions("d,delimiters=", "s,serial", "z,zero-terminated")

// pasteDelims decodes a -d list; an empty entry (from \0) means no delimiter.
func pasteDelims(s string) ([][]byte, bool) {
	var out [][]byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, []byte{s[i]})
			continue
		}
		if i+1 >= len(s) {
			return nil, false
		}
		i++
		switch s[i] {
		case 'n':
			out = append(out, []byte{'\n'})
		case 't':
			out = append(out, []byte{'\t'})
		case '0':
			out = append(out, nil)
		case 'b':
			out = append(out, []byte{'\b'})
		case 'f':
			out = append(out, []byte{'\f'})
		case 'r':
			out = append(out, []byte{'\r'})
		case 'v':
			out = append(out, []byte{'\v'})
		default:
			out = append(out, []byte{s[i]})
		}
	}
	return out, true
}

func runPaste(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, pasteOpts, c.Args[1:], 1)
	if !ok {
		return st
	}
	delims := [][]byte{{'\t'}}
	serial, eol := false, byte('\n')
	for _, o := range opts {
		switch o.Key {
		case "delimiters":
			d, ok := pasteDelims(o.Value)
			if !ok {
				c.Errorf("delimiter list ends with an unescaped backslash: %s", o.Value)
				return 1
			}
			if len(d) == 0 {
				d = [][]byte{nil}
			}
			delims = d
		case "serial":
			serial = true
		case "zero-terminated":
			eol = 0
		}
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	readers := make([]*txLineReader, len(files))
	stdinUsed := false
	var stdinReader *txLineReader
	for i, name := range files {
		if name == "-" {
			if !stdinUsed {
				stdinReader = newTxLineReader(c, txCtxReader{ctx, c.Stdin}, eol)
				stdinUsed = true
			}
			readers[i] = stdinReader
			continue
		}
		r, err := txOpen(ctx, c, name)
		if err != nil {
			c.Errorf("%s: %s", name, txErr(err))
			return 1
		}
		defer r.Close()
		readers[i] = newTxLineReader(c, r, eol)
	}
	out := newTxOut(c.Stdout)
	defer out.Flush()
	var err error
	if serial {
		err = pasteSerial(out, readers, delims, eol)
	} else {
		err = pasteParallel(out, readers, delims, eol)
	}
	if err != nil {
		if txIsCtx(err) {
			return txCtxStatus
		}
		out.Flush()
		c.Errorf("%s", txErr(err))
		return 1
	}
	if out.Flush() != nil {
		return 1
	}
	return 0
}

func pasteParallel(out *txOut, readers []*txLineReader, delims [][]byte, eol byte) error {
	done := make([]bool, len(readers))
	var line bytes.Buffer
	for {
		line.Reset()
		live := 0
		for i, r := range readers {
			if !done[i] {
				b, err := r.next()
				switch {
				case err == io.EOF:
					done[i] = true
				case err != nil:
					return err
				default:
					live++
					line.Write(bytes.TrimSuffix(b, []byte{eol}))
				}
			}
			if i < len(readers)-1 {
				line.Write(delims[i%len(delims)])
			}
		}
		if live == 0 {
			return nil
		}
		line.WriteByte(eol)
		if _, err := out.Write(line.Bytes()); err != nil {
			return err
		}
	}
}

func pasteSerial(out *txOut, readers []*txLineReader, delims [][]byte, eol byte) error {
	for _, r := range readers {
		n := 0
		for {
			b, err := r.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if n > 0 {
				out.Write(delims[(n-1)%len(delims)])
			}
			out.Write(bytes.TrimSuffix(b, []byte{eol}))
			n++
		}
		out.WriteByte(eol)
	}
	return nil
}
