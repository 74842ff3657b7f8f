package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// errBadSize refuses a terminal size with a zero side.
var errBadSize = errors.New("terminal size must be at least 1x1")

func (t TermSize) check() error {
	if t.Cols == 0 || t.Rows == 0 {
		return errBadSize
	}
	return nil
}

// terminal is a pseudo-terminal pair: the agent keeps main, the command
// gets sub.
type terminal struct {
	main *os.File // /dev/ptmx, non-blocking, in Go's poller
	sub  *os.File // /dev/pts/N
}

// openTerminal opens a new pseudo-terminal of size, its subsidiary end
// owned by u (nil: root), as a login gives the user their terminal.
func openTerminal(size TermSize, u *Credential) (*terminal, error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open terminal: %w", err)
	}
	fail := func(err error) (*terminal, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("open terminal: %w", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		return fail(err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		return fail(err)
	}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols}); err != nil {
		return fail(err)
	}
	name := "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
	sub, err := os.OpenFile(name, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return fail(err)
	}
	if u != nil {
		// Like a login's terminal: the user's, so that the command can
		// open its own tty again (`echo hi > $(tty)`).
		if err := unix.Fchown(int(sub.Fd()), int(u.UID), int(u.GID)); err != nil {
			sub.Close()
			return fail(err)
		}
	}
	// Non-blocking before os.NewFile, so the main end joins Go's poller:
	// a Read blocked in it ends when Close is called.
	if err := unix.SetNonblock(fd, true); err != nil {
		sub.Close()
		return fail(err)
	}
	return &terminal{main: os.NewFile(uintptr(fd), "/dev/ptmx"), sub: sub}, nil
}

// resize sets the terminal's size; the kernel sends SIGWINCH to its
// foreground process group.
func (t *terminal) resize(size TermSize) error {
	if err := size.check(); err != nil {
		return err
	}
	rc, err := t.main.SyscallConn()
	if err != nil {
		return err
	}
	cerr := rc.Control(func(fd uintptr) {
		err = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
	})
	return errors.Join(err, cerr)
}

// withTerm adds TERM=xterm-256color to env unless it names a TERM.
func withTerm(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "TERM=") {
			return env
		}
	}
	return append(env[:len(env):len(env)], "TERM=xterm-256color")
}

// killSession kills every process of session sid, the PTY command's:
// an interactive shell puts each job in a process group of its own, which
// a kill of the command's group would miss, and any of them holding the
// terminal open would keep its output from ending.
func killSession(sid int) {
	unix.Kill(-sid, unix.SIGKILL)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == sid {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session ...; comm may hold spaces
		// and parentheses, so the fields start after the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 3 && f[3] == strconv.Itoa(sid) {
			unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// ptyDrainBound bounds how long the output of a PTY command that has
// exited, and whose session was killed, may still take to end: a process
// that left the session (setsid) but kept the terminal open would
// otherwise hold the exec forever.
const ptyDrainBound = 2 * time.Second

// runPTY runs req on a new terminal. Its input is inline (req.Stdin) and
// then, when in is not nil, a stream of [Input] messages; once the
// command has exited, stopIn is called and runPTY waits for the input
// reader.
func (s *server) runPTY(ctx context.Context, req ExecRequest, in io.Reader, stopIn func(), out *frameWriter) Exit {
	out.limit = req.MaxOutput
	if out.limit <= 0 {
		out.limit = DefaultMaxOutput
	}
	tty, err := openTerminal(*req.PTY, req.User)
	if err != nil {
		return Exit{Code: 126, Reason: "start_failed", Error: err.Error()}
	}
	defer tty.main.Close()
	env := withTerm(req.Env)
	sp, err := s.spawn(command{argv: req.Argv, command: req.Command, shell: req.Shell, dir: req.Dir, env: env, user: req.User, tty: tty.sub})
	tty.sub.Close() // the command has it now; the main end reads EIO once every holder has closed it
	if err != nil {
		code := 126
		if _, lookErr := lookPath(firstArg(req), env); lookErr != nil {
			code = 127
		}
		return Exit{Code: code, Reason: "start_failed", Error: startError(err)}
	}
	pid := sp.pid
	defer s.forget(pid)

	inDone := make(chan struct{})
	go func() { // ends at the input's end or error, or at stopIn, or when the main end closes
		defer close(inDone)
		if len(req.Stdin) > 0 {
			if _, err := tty.main.Write(req.Stdin); err != nil {
				return
			}
		}
		if in != nil {
			feedTerminal(tty, in)
		}
	}()
	outDone := make(chan struct{})
	limitHit := make(chan struct{}, 1)
	go func() { // ends at EIO (every holder of the terminal gone) or when the main end closes
		defer close(outDone)
		if !tty.read(func(b []byte) bool { return out.chunk("stdout", b) }) {
			limitHit <- struct{}{}
		}
	}()

	ws, reason := waitCommand(ctx, sp.status, req.TimeoutMS, limitHit, func() { killSession(pid) })
	killSession(pid)
	// The output ends at EIO once the session is gone; the bound covers
	// a process that escaped it with the terminal open.
	tty.main.SetReadDeadline(time.Now().Add(ptyDrainBound))
	<-outDone
	tty.main.Close() // ends a write of input blocked on a full terminal
	stopIn()
	<-inDone
	return commandExit(ws, reason, out)
}

// read passes the terminal's output to emit until EIO (every holder of
// the terminal gone), an error, or emit's false; it reports whether emit
// took everything. Frames end on whole UTF-8 characters: one split
// across two reads would reach a client that reads frames as text as two
// replacement characters.
func (t *terminal) read(emit func([]byte) bool) bool {
	buf := make([]byte, 32<<10)
	held := 0 // bytes of a character cut at the end of the last read, kept for the next
	for {
		n, err := t.main.Read(buf[held:])
		n += held
		held = 0
		if err == nil {
			held = utf8Tail(buf[:n])
		}
		if n-held > 0 && !emit(buf[:n-held]) {
			return false
		}
		copy(buf, buf[n-held:n])
		if err != nil {
			return true
		}
	}
}

// startTerminalProcess starts req, which has a PTY, as background
// process p: its output is retained as "stdout" frames, its stdin is the
// terminal. When it exits, its session goes with it.
func (s *server) startTerminalProcess(p *process, req ProcessRequest) error {
	if err := req.PTY.check(); err != nil {
		return err
	}
	tty, err := openTerminal(*req.PTY, req.User)
	if err != nil {
		return err
	}
	env := withTerm(req.Env)
	sp, err := s.spawn(command{argv: req.Argv, command: req.Command, shell: req.Shell, dir: req.Dir, env: env, user: req.User, tty: tty.sub})
	tty.sub.Close()
	if err != nil {
		tty.main.Close()
		return err
	}
	p.pid, p.argv, p.started, p.stdin, p.term = sp.pid, sp.argv, time.Now(), tty.main, tty
	s.mu.Lock()
	p.listed = true
	s.mu.Unlock()
	outDone := make(chan struct{})
	go func() { // ends at EIO once the session is gone, or at the drain bound
		defer close(outDone)
		tty.read(func(b []byte) bool { p.append("stdout", b); return true })
	}()
	go func() { // ends when the process exits and its output is drained
		defer s.running.Done()
		ws := <-sp.status
		killSession(sp.pid)
		tty.main.SetReadDeadline(time.Now().Add(ptyDrainBound))
		<-outDone
		tty.main.Close()
		s.exited(p, exitOf(ws))
	}()
	return nil
}

// handleResize sets a background process's terminal size from ?cols and
// ?rows.
func (s *server) handleResize(w http.ResponseWriter, r *http.Request) {
	p := s.process(w, r)
	if p == nil {
		return
	}
	if p.term == nil {
		http.Error(w, "the process has no terminal", http.StatusBadRequest)
		return
	}
	cols, _ := strconv.ParseUint(r.URL.Query().Get("cols"), 10, 16)
	rows, _ := strconv.ParseUint(r.URL.Query().Get("rows"), 10, 16)
	if !p.info().Running {
		http.Error(w, "the process has exited", http.StatusConflict)
		return
	}
	if err := p.term.resize(TermSize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		code := http.StatusConflict // the terminal closed as the process ended
		if errors.Is(err, errBadSize) {
			code = http.StatusBadRequest
		}
		http.Error(w, "resize: "+err.Error(), code)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// feedTerminal writes in's [Input] messages to tty until in ends, a
// message is malformed or the terminal is closed. A bad size is skipped:
// the host checks sizes before they get here.
func feedTerminal(tty *terminal, in io.Reader) {
	dec := json.NewDecoder(in)
	for {
		var m Input
		if err := dec.Decode(&m); err != nil {
			return
		}
		if len(m.Data) > 0 {
			if _, err := tty.main.Write(m.Data); err != nil {
				return
			}
		}
		if m.Resize != nil {
			tty.resize(*m.Resize)
		}
	}
}

// utf8Tail is how many bytes at the end of b start a UTF-8 character
// that b does not complete (0 to 3).
func utf8Tail(b []byte) int {
	for i := 1; i <= 3 && i <= len(b); i++ {
		c := b[len(b)-i]
		switch {
		case c < 0x80:
			return 0 // ASCII: nothing pending
		case c < 0xC0:
			continue // a continuation byte: look further back
		}
		need := 2
		if c >= 0xF0 {
			need = 4
		} else if c >= 0xE0 {
			need = 3
		}
		if need > i {
			return i
		}
		return 0
	}
	return 0
}
