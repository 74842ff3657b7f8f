package shell

import (
	"io"
	"io/fs"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Read makes an fd readable with a push-back buffer, so that read can
// consume input in chunks and leave the rest for the next command, as
// bash does by seeking back on regular files.
func (d *fdesc) Read(p []byte) (int, error) {
	if len(d.pending) > 0 {
		n := copy(p, d.pending)
		d.pending = d.pending[n:]
		return n, nil
	}
	return d.r.Read(p)
}

// fill reads more input into d.pending; it reports false at EOF or error.
func (d *fdesc) fill() bool {
	buf := make([]byte, 4096)
	n, err := d.r.Read(buf)
	if n > 0 {
		d.pending = append(d.pending, buf[:n]...)
		return true
	}
	return err == nil
}

// readRecord reads up to delim (not included), or n runes when n >= 0
// (exact: ignore delim). eof is true when input ended before delim.
func (r *runner) readRecord(d *fdesc, delim byte, n int, exact bool) (string, bool) {
	var out []byte
	runes := 0
	for {
		if r.ctx.Err() != nil {
			return string(out), true
		}
		if len(d.pending) == 0 && !d.fill() {
			return string(out), true
		}
		for len(d.pending) > 0 {
			if n >= 0 && runes >= n {
				return string(out), false
			}
			c := d.pending[0]
			if c == delim && !exact {
				d.pending = d.pending[1:]
				return string(out), false
			}
			// Take a whole rune.
			size := 1
			if c >= utf8.RuneSelf {
				_, size = utf8.DecodeRune(d.pending)
				if size > len(d.pending) {
					size = len(d.pending)
				}
			}
			out = append(out, d.pending[:size]...)
			d.pending = d.pending[size:]
			runes++
			if int64(len(out)) > r.sh.limits.StringBytes {
				r.checkString(string(out))
			}
		}
		if n >= 0 && runes >= n {
			return string(out), false
		}
	}
}

func biRead(r *runner, args []string) int {
	raw := false
	var arrayName string
	delim := byte('\n')
	nchars, exact := -1, false
	fd := 0
	a := args[1:]
	for len(a) > 0 && len(a[0]) > 1 && a[0][0] == '-' {
		opt := a[0]
		a = a[1:]
		if opt == "--" {
			break
		}
		for i := 1; i < len(opt); i++ {
			c := opt[i]
			needArg := strings.IndexByte("adnNptui", c) >= 0
			var val string
			if needArg {
				if i+1 < len(opt) {
					val = opt[i+1:]
				} else if len(a) > 0 {
					val = a[0]
					a = a[1:]
				} else {
					r.errorf("read: -%c: option requires an argument", c)
					r.write(2, "read: usage: read [-ers] [-a array] [-d delim] [-i text] [-n nchars] [-N nchars] [-p prompt] [-t timeout] [-u fd] [name ...]\n")
					return 2
				}
			}
			switch c {
			case 'r':
				raw = true
			case 's', 'e':
			case 'a':
				arrayName = val
			case 'd':
				if val == "" {
					delim = 0
				} else {
					delim = val[0]
				}
			case 'n', 'N':
				n, err := strconv.Atoi(val)
				if err != nil || n < 0 {
					r.errorf("read: %s: invalid number", val)
					return 1
				}
				nchars, exact = n, c == 'N'
			case 'p', 'i':
			case 't':
				if f, err := strconv.ParseFloat(val, 64); err != nil || f < 0 {
					r.errorf("read: %s: invalid timeout specification", val)
					return 1
				}
			case 'u':
				n, err := strconv.Atoi(val)
				if err != nil {
					r.errorf("read: %s: invalid file descriptor specification", val)
					return 1
				}
				fd = n
			default:
				r.errorf("read: -%c: invalid option", c)
				return 2
			}
			if needArg {
				break
			}
		}
	}
	names := a
	for _, n := range names {
		if !validName(n) {
			r.errorf("read: `%s': not a valid identifier", n)
			return 1
		}
	}
	d := r.fds[fd]
	if d == nil || d.r == nil {
		r.errorf("read: %d: invalid file descriptor: Bad file descriptor", fd)
		return 1
	}
	var line string
	var eof bool
	if raw {
		line, eof = r.readRecord(d, delim, nchars, exact)
	} else {
		line, eof = r.readEscaped(d, delim, nchars, exact)
	}
	status := 0
	if eof {
		status = 1
	}
	if arrayName != "" {
		fields := r.splitRead(line, -1, raw)
		r.unsetVar(arrayName)
		v := r.ensureVar(arrayName)
		v.kind, v.arr, v.set = kindIndexed, arrayOf(fields...), true
		r.grow(v.arr.bytes())
		return status
	}
	if len(names) == 0 {
		if err := r.setVar("REPLY", unescapeRead(line, raw)); err != nil {
			r.errorf("read: %s", err)
			return 1
		}
		return status
	}
	fields := r.splitRead(line, len(names), raw)
	for i, n := range names {
		val := ""
		if i < len(fields) {
			val = fields[i]
		}
		if err := r.setVar(n, val); err != nil {
			r.errorf("read: %s", err)
			return 1
		}
	}
	return status
}

// readEscaped reads a record honouring backslash: \newline continues the
// line; \x keeps x (marked with a leading \x00 escape for splitting).
func (r *runner) readEscaped(d *fdesc, delim byte, n int, exact bool) (string, bool) {
	var sb strings.Builder
	for {
		part, eof := r.readRecord(d, delim, n, exact)
		// Count trailing backslashes: an odd count escapes the delimiter.
		trail := 0
		for i := len(part) - 1; i >= 0 && part[i] == '\\'; i-- {
			trail++
		}
		if trail%2 == 1 && !eof && delim == '\n' {
			sb.WriteString(part[:len(part)-1])
			continue
		}
		sb.WriteString(part)
		return sb.String(), eof
	}
}

// unescapeRead removes read's backslash quoting (without -r).
func unescapeRead(s string, raw bool) string {
	if raw || !strings.Contains(s, "\\") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		if s[i] == '\\' && i == len(s)-1 {
			continue
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// splitRead splits a line into at most n fields by IFS (n < 0: all), the
// last taking the rest of the line, as read does.
func (r *runner) splitRead(line string, n int, raw bool) []string {
	ifs := r.ifs()
	isWS := func(c byte) bool { return (c == ' ' || c == '\t' || c == '\n') && strings.IndexByte(ifs, c) >= 0 }
	isIFS := func(c byte) bool { return strings.IndexByte(ifs, c) >= 0 }
	type ch struct {
		c   byte
		esc bool
	}
	var cs []ch
	for i := 0; i < len(line); i++ {
		if !raw && line[i] == '\\' && i+1 < len(line) {
			cs = append(cs, ch{line[i+1], true})
			i++
			continue
		}
		if !raw && line[i] == '\\' {
			continue
		}
		cs = append(cs, ch{line[i], false})
	}
	str := func(x []ch) string {
		b := make([]byte, len(x))
		for i, c := range x {
			b[i] = c.c
		}
		return string(b)
	}
	i := 0
	for i < len(cs) && !cs[i].esc && isWS(cs[i].c) {
		i++
	}
	var fields []string
	for i < len(cs) {
		if n >= 0 && len(fields) == n-1 {
			rest := cs[i:]
			end := len(rest)
			for end > 0 && !rest[end-1].esc && isWS(rest[end-1].c) {
				end--
			}
			rest = rest[:end]
			// A single trailing non-whitespace delimiter ends the last
			// field instead of belonging to it.
			if len(rest) > 0 && !rest[len(rest)-1].esc && isIFS(rest[len(rest)-1].c) {
				only := true
				for _, c := range rest[:len(rest)-1] {
					if !c.esc && isIFS(c.c) {
						only = false
						break
					}
				}
				if only {
					rest = rest[:len(rest)-1]
				}
			}
			fields = append(fields, str(rest))
			return fields
		}
		start := i
		for i < len(cs) && (cs[i].esc || !isIFS(cs[i].c)) {
			i++
		}
		fields = append(fields, str(cs[start:i]))
		// Skip one delimiter: whitespace around at most one non-ws char.
		for i < len(cs) && !cs[i].esc && isWS(cs[i].c) {
			i++
		}
		if i < len(cs) && !cs[i].esc && isIFS(cs[i].c) && !isWS(cs[i].c) {
			i++
			for i < len(cs) && !cs[i].esc && isWS(cs[i].c) {
				i++
			}
			if i == len(cs) && (n < 0 || len(fields) < n-1) {
				// "a:" gives no trailing empty field
			}
		}
	}
	return fields
}

func biMapfile(r *runner, args []string) int {
	delim := byte('\n')
	strip := false
	count, origin, skip := 0, 0, 0
	fd := 0
	a := args[1:]
	originSet := false
	callback, quantum := "", 5000
	for len(a) > 0 && len(a[0]) > 1 && a[0][0] == '-' {
		opt := a[0]
		a = a[1:]
		c := opt[1]
		var val string
		if strings.IndexByte("dnOsuCc", c) >= 0 {
			if len(opt) > 2 {
				val = opt[2:]
			} else if len(a) > 0 {
				val = a[0]
				a = a[1:]
			}
		}
		switch c {
		case 't':
			strip = true
		case 'd':
			if val == "" {
				delim = 0
			} else {
				delim = val[0]
			}
		case 'n':
			count, _ = strconv.Atoi(val)
		case 'O':
			origin, _ = strconv.Atoi(val)
			originSet = true
		case 's':
			skip, _ = strconv.Atoi(val)
		case 'u':
			fd, _ = strconv.Atoi(val)
		case 'C':
			callback = val
		case 'c':
			n, err := strconv.Atoi(val)
			if err != nil || n <= 0 {
				r.errorf("%s: %s: invalid callback quantum", args[0], val)
				return 1
			}
			quantum = n
		default:
			r.errorf("%s: -%c: invalid option", args[0], c)
			return 2
		}
	}
	name := "MAPFILE"
	if len(a) > 0 {
		name = a[0]
	}
	d := r.fds[fd]
	if d == nil || d.r == nil {
		r.errorf("%s: %d: invalid file descriptor: Bad file descriptor", args[0], fd)
		return 1
	}
	v := r.getVar(name)
	if v == nil || !originSet || v.kind != kindIndexed {
		r.unsetVar(name)
		v = r.ensureVar(name)
		v.kind, v.arr = kindIndexed, array{}
	}
	if v.readonly {
		r.errorf("%s: %s: readonly variable", args[0], name)
		return 1
	}
	v.set = true
	i := origin
	read := 0
	for count == 0 || read < count {
		if !r.loopTick() {
			return 1
		}
		line, eof := r.readRecord(d, delim, -1, false)
		if eof && line == "" {
			break
		}
		if skip > 0 {
			skip--
			if eof {
				break
			}
			continue
		}
		if !strip && !eof {
			line += string(delim)
		}
		if callback != "" && (read+1)%quantum == 0 {
			// Called with the index and the line before it is stored.
			r.evalString(callback+" "+strconv.Itoa(i)+" "+shellQuote(line), "mapfile")
		}
		v.arr.set(i, line)
		r.grow(int64(len(line)) + 24)
		i++
		read++
		r.checkArray(v.arr.len())
		if eof {
			break
		}
	}
	return 0
}

var _ io.Reader = (*fdesc)(nil)

// StatFile describes the file a file-backed descriptor reads (wc sizes
// its columns from it as GNU does from fstat); it fails on pipes.
func (d *fdesc) StatFile() (fs.FileInfo, error) {
	if d.file == nil {
		return nil, syscall.ESPIPE
	}
	return d.file.Stat()
}

// Seek lets a tool that reads from a file-backed descriptor reposition it
// (GNU head and read seek back past what they did not use), taking the
// read-ahead buffer into account. It fails with ESPIPE on pipes.
func (d *fdesc) Seek(offset int64, whence int) (int64, error) {
	s, ok := d.r.(io.Seeker)
	if !ok {
		return 0, syscall.ESPIPE
	}
	if whence == io.SeekCurrent {
		offset -= int64(len(d.pending))
	}
	d.pending = nil
	return s.Seek(offset, whence)
}
