package tools

import (
	"context"
	"fmt"
	"io"
	"regexp"

	"rung.dev/rung/shell"
)

// head: GNU head (-c -n with negative counts, -q -v -z, -NUM).

var headOpts = NewOptions("c,bytes=", "n,lines=", "q,quiet,silent", "v,verbose", "z,zero-terminated")

// txObsoleteCount matches the obsolete "-NUM[bkm][cbl...]" first argument
// of head and tail.
var txObsoleteCount = regexp.MustCompile(`^-([0-9]+)([bkm]?)([cblqvfz]*)$`)

func headCheck(args []string) error { return headOpts.Check(headObsolete(args)) }

// headObsolete rewrites "-5" / "-5c" / "-5cv" into modern options.
func headObsolete(args []string) []string {
	if len(args) == 0 {
		return args
	}
	m := txObsoleteCount.FindStringSubmatch(args[0])
	if m == nil {
		return args
	}
	num := m[1] + m[2]
	kind := "-n"
	var extra []string
	for _, f := range m[3] {
		switch f {
		case 'c':
			kind = "-c"
		case 'b', 'l':
			if f == 'l' {
				kind = "-n"
			}
		case 'q':
			extra = append(extra, "-q")
		case 'v':
			extra = append(extra, "-v")
		case 'z':
			extra = append(extra, "-z")
		}
	}
	out := append([]string{kind, num}, extra...)
	return append(out, args[1:]...)
}

func runHead(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, headOpts, headObsolete(c.Args[1:]), 1)
	if !ok {
		return st
	}
	count, bytes, elide := uint64(10), false, false
	verbose, quiet := false, false
	delim := byte('\n')
	for _, o := range opts {
		switch o.Key {
		case "bytes", "lines":
			v := o.Value
			elide = false
			if len(v) > 0 && v[0] == '-' {
				elide, v = true, v[1:]
			} else if len(v) > 0 && v[0] == '+' {
				v = v[1:]
			}
			n, ok, over := txParseSizeOv(v)
			what := "lines"
			if o.Key == "bytes" {
				what = "bytes"
			}
			if !ok || over {
				msg := fmt.Sprintf("invalid number of %s: %s", what, locQuote(o.Value))
				if over {
					msg += ": Value too large for defined data type"
				}
				c.Errorf("%s", msg)
				return 1
			}
			count, bytes = n, o.Key == "bytes"
		case "quiet", "silent":
			quiet, verbose = true, false
		case "verbose":
			verbose, quiet = true, false
		case "zero-terminated":
			delim = 0
		}
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	out := newTxOut(c.Stdout)
	defer out.release()
	defer out.Flush()
	headers := verbose || (!quiet && len(files) > 1)
	status, first := 0, true
	for _, name := range files {
		r, err := txOpen(ctx, c, name)
		if err != nil {
			c.Errorf("cannot open %s for reading: %s", txQuote(name), txErr(err))
			status = 1
			continue
		}
		if headers {
			if !first {
				out.WriteByte('\n')
			}
			fmt.Fprintf(out, "==> %s <==\n", txName(name))
		}
		first = false
		var rerr error
		switch {
		case bytes && !elide:
			_, rerr = io.Copy(out, io.LimitReader(r, int64(min(count, 1<<62))))
		case bytes:
			rerr = headElideBytes(c, out, r, count)
		case !elide:
			var extra int
			extra, rerr = headLines(out, r, delim, count)
			if extra > 0 && (name == "-" || name == "/dev/stdin") {
				// Like GNU head, give back what was read past the last
				// line, so the next command on a shared file descriptor
				// starts there ({ head -n 1; cat; } < f).
				if s, ok := c.Stdin.(io.Seeker); ok {
					s.Seek(-int64(extra), io.SeekCurrent)
				}
			}
		default:
			rerr = headElideLines(ctx, c, out, r, delim, count)
		}
		r.Close()
		if rerr != nil {
			if txIsCtx(rerr) {
				return txCtxStatus
			}
			if out.err() != nil {
				return 1
			}
			out.Flush()
			c.Errorf("error reading %s: %s", txQuote(name), txErr(rerr))
			status = 1
		}
	}
	if err := out.Flush(); err != nil {
		return 1
	}
	return status
}

// headLines copies the first n lines of r and returns how many bytes it
// read beyond them.
func headLines(out *txOut, r io.Reader, delim byte, n uint64) (int, error) {
	if n == 0 {
		return 0, nil
	}
	bp := bytes32K.get()
	defer bytes32K.put(bp)
	buf := *bp
	for {
		k, err := r.Read(buf)
		chunk := buf[:k]
		for i, b := range chunk {
			if b == delim {
				n--
				if n == 0 {
					_, werr := out.Write(chunk[:i+1])
					return len(chunk) - i - 1, werr
				}
			}
		}
		if _, werr := out.Write(chunk); werr != nil {
			return 0, werr
		}
		if err == io.EOF {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

func headElideBytes(c *shell.Call, out *txOut, r io.Reader, n uint64) error {
	var pending []byte
	buf := make([]byte, 32<<10)
	for {
		k, err := r.Read(buf)
		old := cap(pending)
		pending = append(pending, buf[:k]...)
		if err := txHold(c, cap(pending)-old); err != nil {
			return err
		}
		if uint64(len(pending)) > n {
			emit := uint64(len(pending)) - n
			if _, werr := out.Write(pending[:emit]); werr != nil {
				return werr
			}
			pending = append(pending[:0], pending[emit:]...)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func headElideLines(ctx context.Context, c *shell.Call, out *txOut, r io.Reader, delim byte, n uint64) error {
	lr := newTxLineReader(c, r, delim)
	var ring [][]byte
	head := 0
	for i := 0; ; i++ {
		line, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if n == 0 {
			if _, werr := out.Write(line); werr != nil {
				return werr
			}
			continue
		}
		if uint64(len(ring)) < n {
			if err := txHold(c, len(line)+txLineCost); err != nil {
				return err
			}
			ring = append(ring, append([]byte(nil), line...))
			continue
		}
		if _, werr := out.Write(ring[head]); werr != nil {
			return werr
		}
		old := cap(ring[head])
		ring[head] = append(ring[head][:0], line...)
		if err := txHold(c, cap(ring[head])-old); err != nil {
			return err
		}
		head = (head + 1) % len(ring)
	}
}
