package shell

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"mvdan.cc/sh/v3/syntax"
	"rung.dev/rung/storage"
)

// fdesc is one open descriptor of the shell: a reader, a writer or both.
type fdesc struct {
	r       io.Reader
	w       io.Writer
	file    storage.File // set when the descriptor is a file, for closing
	pipe    *pipe        // set for a pipe's write end, to detect EPIPE
	isStdin bool         // the exec's own standard input
	pending []byte       // input read ahead by the read builtin, not yet consumed
}

type badFD struct{}

func (badFD) Read([]byte) (int, error)  { return 0, syscall.EBADF }
func (badFD) Write([]byte) (int, error) { return 0, syscall.EBADF }

func (r *runner) readerFD(n int) io.Reader {
	if d := r.fds[n]; d != nil && d.r != nil {
		return d
	}
	return badFD{}
}

func (r *runner) writerFD(n int) io.Writer {
	if d := r.fds[n]; d != nil && d.w != nil {
		return d.w
	}
	return badFD{}
}

// outWriter counts the bytes an exec writes to its caller's stdout and
// stderr against the OutputBytes limit. It is safe for concurrent use.
type outWriter struct {
	mu sync.Mutex // serializes writes to w
	w  io.Writer
	sh *shared
}

func (o *outWriter) Write(p []byte) (int, error) {
	if n := o.sh.output.Add(int64(len(p))); n > o.sh.limits.OutputBytes {
		o.sh.breach("output_bytes", o.sh.limits.OutputBytes)
		return 0, syscall.EFBIG
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Write(p)
}

// fileWriter counts bytes written to files against WriteBytes.
type fileWriter struct {
	f  storage.File
	sh *shared
}

func (w *fileWriter) Write(p []byte) (int, error) {
	if n := w.sh.written.Add(int64(len(p))); n > w.sh.limits.WriteBytes {
		w.sh.breach("write_bytes", w.sh.limits.WriteBytes)
		return 0, syscall.EFBIG
	}
	return w.f.Write(p)
}

func (w *fileWriter) Read(p []byte) (int, error) { return w.f.Read(p) }

// redirected runs st's command with its redirections applied.
func (r *runner) redirected(st *syntax.Stmt) int {
	if len(st.Redirs) == 0 {
		return r.command(st.Cmd)
	}
	if c, ok := st.Cmd.(*syntax.CallExpr); ok {
		if len(c.Args) > 0 {
			// Words are expanded and traced before redirections apply.
			return r.call(c, st.Redirs)
		}
		// Assignments only: they happen first, in the shell itself; the
		// redirections are then performed for their side effects.
		status := r.call(c, nil)
		if r.exiting {
			return status
		}
		if st := r.nullRedirs(st.Redirs, status); st != 0 {
			return st
		}
		return status
	}
	if fd, ok := st.Cmd.(*syntax.FuncDecl); ok && fd.Name != nil {
		// f() { ...; } >file: the redirections belong to the function
		// and apply on every call.
		body := *fd.Body
		body.Redirs = append(append([]*syntax.Redirect(nil), fd.Body.Redirs...), st.Redirs...)
		r.funcsW()[fd.Name.Value] = &body
		return 0
	}
	if st.Cmd == nil {
		return r.nullRedirs(st.Redirs, 0)
	}
	return r.withRedirs(st.Redirs, func() int { return r.command(st.Cmd) })
}

// nullRedirs performs the redirections of a command with no command word
// for their side effects. Like bash, it does so in a subshell when one is
// {var}: the variable is set there, so a later redirection can use it,
// and neither it nor its descriptor outlives the command.
func (r *runner) nullRedirs(redirs []*syntax.Redirect, status int) int {
	for _, rd := range redirs {
		if rd.N != nil && strings.HasPrefix(rd.N.Value, "{") {
			return r.runSubshell(func(c *runner) {
				c.status = c.withRedirs(redirs, func() int { return status })
			})
		}
	}
	return r.withRedirs(redirs, func() int { return status })
}

// withRedirs runs fn with redirs applied to the descriptors.
func (r *runner) withRedirs(redirs []*syntax.Redirect, fn func() int) int {
	savedHeld := r.hdocHeld
	r.hdocHeld = 0
	persisted := false
	defer func() {
		if !persisted {
			r.sh.mem.give(r.hdocHeld) // exec <<EOF keeps its body to the end
		}
		r.hdocHeld = savedHeld
	}()
	nproc := len(r.procs)
	saved := r.fds
	r.fds = maps.Clone(saved)
	var opened []storage.File
	for _, rd := range redirs {
		f, err := r.redirect(rd)
		if f != nil {
			opened = append(opened, f)
		}
		if err != nil {
			r.errorf("%s", err)
			for _, f := range opened {
				f.Close()
			}
			r.fds = saved
			r.closeProcs(nproc)
			return 1
		}
	}
	r.persistFDs = false
	status := fn()
	if r.persistFDs {
		r.persistFDs = false
		persisted = true
		for _, f := range opened {
			r.sh.addCloser(f)
		}
		// Process substitutions opened by exec live on with their fds;
		// Run closes them at the end.
		for _, p := range r.procs[nproc:] {
			r.sh.addCloser(procCloser{p})
		}
		r.procs = r.procs[:nproc]
	} else {
		// {var} descriptors outlive the command, as in bash.
		kept := map[int]*fdesc{}
		for _, rd := range redirs {
			if rd.N != nil && strings.HasPrefix(rd.N.Value, "{") && !r.noVarFD {
				name := strings.Trim(rd.N.Value, "{}")
				if v, ok := r.varValue(name); ok {
					if n, err := strconv.Atoi(v); err == nil && r.fds[n] != nil {
						kept[n] = r.fds[n]
					}
				}
			}
		}
		for _, f := range opened {
			if isKept(kept, f) {
				r.sh.addCloser(f)
			} else {
				f.Close()
			}
		}
		r.fds = saved
		if len(kept) > 0 {
			r.fds = maps.Clone(saved)
			for n, d := range kept {
				r.fds[n] = d
			}
		}
	}
	r.closeProcs(nproc)
	return status
}

func isKept(kept map[int]*fdesc, f storage.File) bool {
	for _, d := range kept {
		if d.file == f {
			return true
		}
	}
	return false
}

// redirect applies one redirection to r.fds. A file it opened is returned
// for the caller to close.
func (r *runner) redirect(rd *syntax.Redirect) (storage.File, error) {
	fd := -1
	varName := ""
	if rd.N != nil {
		if n, err := strconv.Atoi(rd.N.Value); err == nil {
			fd = n
		} else {
			varName = strings.TrimSuffix(strings.TrimPrefix(rd.N.Value, "{"), "}")
		}
	}
	def := func(d int) int {
		if fd < 0 && varName == "" {
			return d
		}
		return fd
	}
	switch rd.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		body := r.heredoc(rd)
		// The body counts against the memory budget while the command
		// runs (withRedirs gives it back).
		if !r.sh.mem.take(int64(len(body)), true) {
			panic(fatal{})
		}
		r.hdocHeld += int64(len(body))
		return nil, r.setFD(def(0), varName, &fdesc{r: strings.NewReader(body)})
	case syntax.WordHdoc:
		s := r.literal(rd.Word) + "\n"
		return nil, r.setFD(def(0), varName, &fdesc{r: strings.NewReader(s)})
	}
	target := r.literal(rd.Word)
	if r.xtrace {
		_ = target
	}
	switch rd.Op {
	case syntax.DplIn, syntax.DplOut:
		n := def(0)
		if rd.Op == syntax.DplOut {
			n = def(1)
		}
		if target == "-" {
			if varName != "" {
				v, _ := r.varValue(varName)
				n, _ = strconv.Atoi(v)
			}
			delete(r.fds, n)
			return nil, nil
		}
		move := strings.HasSuffix(target, "-")
		src, err := strconv.Atoi(strings.TrimSuffix(target, "-"))
		if err != nil {
			if rd.Op == syntax.DplOut && fd < 0 && varName == "" {
				// >&file is &>file
				return r.openRedirect(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, []int{1, 2}, "")
			}
			return nil, &fs.PathError{Op: "redirect", Path: target, Err: errAmbiguous}
		}
		d := r.fds[src]
		if d == nil {
			return nil, &redirErr{target, "Bad file descriptor"}
		}
		if err := r.setFD(n, varName, d); err != nil {
			return nil, err
		}
		if move {
			delete(r.fds, src)
		}
		return nil, nil
	case syntax.RdrIn:
		return r.openRedirect(target, os.O_RDONLY, []int{def(0)}, varName)
	case syntax.RdrInOut:
		return r.openRedirect(target, os.O_RDWR|os.O_CREATE, []int{def(0)}, varName)
	case syntax.RdrOut:
		flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if r.noclobber {
			flag |= os.O_EXCL
		}
		return r.openRedirect(target, flag, []int{def(1)}, varName)
	case syntax.RdrClob:
		return r.openRedirect(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, []int{def(1)}, varName)
	case syntax.AppOut:
		return r.openRedirect(target, os.O_WRONLY|os.O_CREATE|os.O_APPEND, []int{def(1)}, varName)
	case syntax.RdrAll, syntax.RdrAllClob:
		return r.openRedirect(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, []int{1, 2}, "")
	case syntax.AppAll, syntax.AppAllClob:
		return r.openRedirect(target, os.O_WRONLY|os.O_CREATE|os.O_APPEND, []int{1, 2}, "")
	}
	return nil, &redirErr{rd.Op.String(), "unsupported redirection"}
}

var errAmbiguous = &redirErrText{"ambiguous redirect"}

type redirErrText struct{ s string }

func (e *redirErrText) Error() string { return e.s }

type redirErr struct{ name, text string }

func (e *redirErr) Error() string { return e.name + ": " + e.text }

// setFD installs d as descriptor n, or, for {var}>..., as a new descriptor
// numbered from 10 whose number is stored in var.
func (r *runner) setFD(n int, varName string, d *fdesc) error {
	if varName != "" {
		n = 10
		for r.fds[n] != nil {
			n++
		}
		if !r.noVarFD {
			if err := r.setVar(varName, strconv.Itoa(n)); err != nil {
				return err
			}
		}
	}
	r.fds[n] = d
	return nil
}

// openRedirect opens a file target for the given descriptors.
func (r *runner) openRedirect(name string, flag int, fds []int, varName string) (storage.File, error) {
	if name == "" {
		return nil, &redirErr{"", "No such file or directory"}
	}
	if d, ok := r.devFile(name, flag); ok {
		if d == nil {
			return nil, &redirErr{name, "Bad file descriptor"}
		}
		for _, n := range fds {
			if err := r.setFD(n, varName, d); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	abs := r.abs(name)
	if flag&os.O_EXCL != 0 {
		// noclobber: only regular files are protected.
		if fi, err := r.sh.sh.cfg.FS.Stat(abs); err == nil && !fi.Mode().IsRegular() {
			flag &^= os.O_EXCL
		}
	}
	f, err := r.sh.sh.cfg.FS.OpenFile(abs, flag, 0o644)
	if err != nil {
		if flag&os.O_EXCL != 0 && errorsIsExist(err) {
			return nil, &redirErr{name, "cannot overwrite existing file"}
		}
		return nil, &redirErr{name, ErrText(err)}
	}
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			f.Close()
			return nil, &redirErr{name, "Is a directory"}
		}
	}
	d := &fdesc{file: f}
	switch {
	case flag&os.O_RDWR != 0:
		d.r, d.w = f, &fileWriter{f, r.sh}
	case flag&os.O_WRONLY != 0:
		d.w = &fileWriter{f, r.sh}
	default:
		d.r = f
	}
	for _, n := range fds {
		if err := r.setFD(n, varName, d); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// devFile resolves the virtual devices; ok is false for a real path.
func (r *runner) devFile(name string, flag int) (*fdesc, bool) {
	switch name {
	case "/dev/null":
		return &fdesc{r: bytes.NewReader(nil), w: io.Discard}, true
	case "/dev/zero":
		return &fdesc{r: zeroReader{}, w: io.Discard}, true
	case "/dev/stdin":
		return r.fds[0], true
	case "/dev/stdout":
		return r.fds[1], true
	case "/dev/stderr":
		return r.fds[2], true
	case "/dev/tty":
		return nil, true
	}
	if rest, ok := strings.CutPrefix(name, "/dev/fd/"); ok {
		n, err := strconv.Atoi(rest)
		if err != nil {
			return nil, true
		}
		return r.fds[n], true
	}
	return nil, false
}

// abs makes name absolute against the working directory.
func (r *runner) abs(name string) string {
	if strings.HasPrefix(name, "/") {
		return name
	}
	if r.dir == "/" {
		return "/" + name
	}
	return r.dir + "/" + name
}

// heredoc returns the body of a here-document, expanded unless its
// delimiter was quoted.
func (r *runner) heredoc(rd *syntax.Redirect) string {
	if rd.Hdoc == nil {
		return ""
	}
	hdoc := rd.Hdoc
	if rd.Op == syntax.DashHdoc {
		hdoc = stripHdocTabs(hdoc)
	}
	quoted := false
	for _, p := range rd.Word.Parts {
		switch p := p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			quoted = true
		case *syntax.Lit:
			if strings.Contains(p.Value, "\\") {
				quoted = true
			}
		}
	}
	if quoted {
		var sb strings.Builder
		for _, p := range hdoc.Parts {
			if l, ok := p.(*syntax.Lit); ok {
				sb.WriteString(l.Value)
			}
		}
		return sb.String()
	}
	return r.heredocBody(hdoc)
}

// stripHdocTabs removes the leading tabs of every line of a <<- body,
// which mvdan/sh's parser leaves in some bodies (the first line, the
// terminator's). Tabs that come from an expansion stay, as in bash.
func stripHdocTabs(w *syntax.Word) *syntax.Word {
	out := &syntax.Word{Parts: make([]syntax.WordPart, 0, len(w.Parts))}
	bol := true
	for _, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			out.Parts = append(out.Parts, p)
			bol = false
			continue
		}
		b := make([]byte, 0, len(l.Value))
		for i := 0; i < len(l.Value); i++ {
			c := l.Value[i]
			if bol && c == '\t' {
				continue
			}
			b = append(b, c)
			bol = c == '\n'
		}
		out.Parts = append(out.Parts, &syntax.Lit{ValuePos: l.ValuePos, ValueEnd: l.ValueEnd, Value: string(b)})
	}
	return out
}

// closeProcs closes and waits for the process substitutions started since
// index n.
func (r *runner) closeProcs(n int) {
	if len(r.procs) <= n {
		return
	}
	for _, p := range r.procs[n:] {
		p.finish()
	}
	for _, p := range r.procs[n:] {
		delete(r.fds, p.fd)
	}
	r.procs = r.procs[:n]
}

func errorsIsExist(err error) bool { return errors.Is(err, fs.ErrExist) }
