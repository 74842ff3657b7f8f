package tools

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"regexp"

	"rung.dev/rung/shell"
)

// tail: GNU tail without following (-c -n with +N, -q -v -z, obsolete
// -NUM/+NUM). -f, -F, --pid, --retry and -s are refused: following a file
// never ends within an exec's deadline the way an agent expects.

var tailOpts = NewOptions("c,bytes=", "n,lines=", "q,quiet,silent", "v,verbose", "z,zero-terminated",
	"f,follow=*", "F", "retry", "s,sleep-interval=", "pid=", "max-unchanged-stats=")

var tailUnimpl = []string{"follow", "F", "retry", "sleep-interval", "pid", "max-unchanged-stats"}

var tailObsoleteRe = regexp.MustCompile(`^([-+])([0-9]*)([bcl]?)(f?)$`)

// tailObsolete rewrites the obsolete "-5", "+5c", "-3f" first argument.
func tailObsolete(args []string) []string {
	if !(len(args) == 1 || len(args) == 2 && !(len(args[1]) > 1 && args[1][0] == '-')) {
		return args
	}
	m := tailObsoleteRe.FindStringSubmatch(args[0])
	if m == nil || m[1] == "-" && (m[2] == "" && (m[3] == "" || m[3] == "c")) {
		return args
	}
	num := m[2]
	if num == "" {
		num = "10"
	}
	if m[1] == "+" {
		num = "+" + num
	}
	kind := "-n"
	switch m[3] {
	case "b":
		num += "b"
		kind = "-c"
	case "c":
		kind = "-c"
	}
	out := []string{kind, num}
	if m[4] == "f" {
		out = append(out, "-f")
	}
	return append(out, args[1:]...)
}

func tailCheck(args []string) error { return txCheck(tailOpts, tailUnimpl...)(tailObsolete(args)) }

func runTail(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, tailOpts, tailObsolete(c.Args[1:]), 1)
	if !ok {
		return st
	}
	if o, bad := txRefused(opts, tailUnimpl...); bad {
		return txFail(c, o)
	}
	count, bytes, fromStart := uint64(10), false, false
	verbose, quiet := false, false
	delim := byte('\n')
	for _, o := range opts {
		switch o.Key {
		case "bytes", "lines":
			v := o.Value
			fromStart = false
			if len(v) > 0 && v[0] == '+' {
				fromStart, v = true, v[1:]
			} else if len(v) > 0 && v[0] == '-' {
				v = v[1:]
			}
			n, ok, over := txParseSizeOv(v)
			if !ok {
				what := "lines"
				if o.Key == "bytes" {
					what = "bytes"
				}
				c.Errorf("invalid number of %s: %s", what, locQuote(o.Value))
				return 1
			}
			if over {
				n = ^uint64(0)
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
	defer out.Flush()
	headers := verbose || (!quiet && len(files) > 1)
	status, first := 0, true
	for _, name := range files {
		f, err := c.Open(name)
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
		r := io.Reader(txCtxReader{ctx, f})
		var rerr error
		switch {
		case fromStart:
			rerr = tailFrom(out, r, bytes, delim, count)
		case bytes:
			rerr = tailBytes(c, out, f, r, count)
		default:
			rerr = tailLines(ctx, c, out, f, r, delim, count)
		}
		f.Close()
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

// tailFrom copies from the count'th line or byte (1-based) on.
func tailFrom(out *txOut, r io.Reader, bytes bool, delim byte, count uint64) error {
	skip := uint64(0)
	if count > 0 {
		skip = count - 1
	}
	buf := make([]byte, 32<<10)
	for {
		k, err := r.Read(buf)
		chunk := buf[:k]
		if skip > 0 && bytes {
			d := min(skip, uint64(len(chunk)))
			chunk, skip = chunk[d:], skip-d
		}
		for skip > 0 && !bytes && len(chunk) > 0 {
			i := indexByte(chunk, delim)
			if i < 0 {
				chunk = nil
				break
			}
			chunk, skip = chunk[i+1:], skip-1
		}
		if _, werr := out.Write(chunk); werr != nil {
			return werr
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// tailSeekable returns the file's size when it is a regular file that can
// be read from the end.
func tailSeekable(f io.Reader) (io.ReadSeeker, int64, bool) {
	type statter interface {
		Stat() (fs.FileInfo, error)
	}
	rs, ok := f.(io.ReadSeeker)
	st, ok2 := f.(statter)
	if !ok || !ok2 {
		return nil, 0, false
	}
	fi, err := st.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, 0, false
	}
	return rs, fi.Size(), true
}

func tailBytes(c *shell.Call, out *txOut, f io.Reader, r io.Reader, n uint64) error {
	if rs, size, ok := tailSeekable(f); ok {
		off := int64(0)
		if uint64(size) > n {
			off = size - int64(n)
		}
		if _, err := rs.Seek(off, io.SeekStart); err == nil {
			_, err := io.Copy(out, r)
			return err
		}
	}
	var keep []byte
	buf := make([]byte, 32<<10)
	for {
		k, err := r.Read(buf)
		old := cap(keep)
		keep = append(keep, buf[:k]...)
		if err := txHold(c, cap(keep)-old); err != nil {
			return err
		}
		if uint64(len(keep)) > n {
			keep = append(keep[:0], keep[uint64(len(keep))-n:]...)
		}
		if err == io.EOF {
			_, werr := out.Write(keep)
			return werr
		}
		if err != nil {
			return err
		}
	}
}

func tailLines(ctx context.Context, c *shell.Call, out *txOut, f io.Reader, r io.Reader, delim byte, n uint64) error {
	if rs, size, ok := tailSeekable(f); ok && size > 64<<10 {
		if off, ok := tailFindStart(rs, size, delim, n); ok {
			if _, err := rs.Seek(off, io.SeekStart); err == nil {
				_, err := io.Copy(out, r)
				return err
			}
		}
	}
	if n == 0 {
		_, err := io.Copy(io.Discard, r)
		return err
	}
	lr := newTxLineReader(c, r, delim)
	var ring [][]byte
	head := 0
	for i := 0; ; i++ {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if uint64(len(ring)) < n {
			if err := txHold(c, len(line)+txLineCost); err != nil {
				return err
			}
			ring = append(ring, append([]byte(nil), line...))
			continue
		}
		old := cap(ring[head])
		ring[head] = append(ring[head][:0], line...)
		if err := txHold(c, cap(ring[head])-old); err != nil {
			return err
		}
		head = (head + 1) % len(ring)
	}
	for i := range ring {
		if _, err := out.Write(ring[(head+i)%len(ring)]); err != nil {
			return err
		}
	}
	return nil
}

// tailFindStart scans a regular file backwards for the start of its last n
// lines; a final line without delimiter counts as a line.
func tailFindStart(rs io.ReadSeeker, size int64, delim byte, n uint64) (int64, bool) {
	ra, ok := rs.(io.ReaderAt)
	if !ok {
		return 0, false
	}
	if n == 0 {
		return size, true
	}
	buf := make([]byte, 32<<10)
	pos := size
	first := true
	for pos > 0 {
		k := int64(len(buf))
		if pos < k {
			k = pos
		}
		pos -= k
		if _, err := ra.ReadAt(buf[:k], pos); err != nil && err != io.EOF {
			return 0, false
		}
		chunk := buf[:k]
		end := len(chunk)
		if first {
			first = false
			if end > 0 && chunk[end-1] == delim {
				end-- // the file's final delimiter ends the last line
			}
		}
		for i := end - 1; i >= 0; i-- {
			if chunk[i] == delim {
				n--
				if n == 0 {
					return pos + int64(i) + 1, true
				}
			}
		}
	}
	return 0, true
}
