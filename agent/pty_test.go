package agent_test

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"rung.dev/rung/agent"
	"rung.dev/rung/internal/testenv"
)

// screen collects a PTY exec's output and lets a test wait for text in it.
type screen struct {
	mu      sync.Mutex // guards the fields below
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newScreen() *screen { return &screen{changed: make(chan struct{})} }

func (s *screen) frame(f agent.Frame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Stream != "stdout" {
		s.buf.WriteString("<" + f.Stream + ">")
	}
	s.buf.Write(f.Data)
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor waits until the output holds want (a hang fails after a
// generous bound).
func (s *screen) waitFor(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		ok, ch := strings.Contains(s.buf.String(), want), s.changed
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("no %q on the terminal; it shows %q", want, s.String())
		}
	}
}

type ptyExec struct {
	in     chan agent.Input
	out    *screen
	exited chan agent.Exit // receives the exit once
}

// startPTY runs req on a terminal in the background.
func startPTY(t *testing.T, c *agent.Client, req agent.ExecRequest) *ptyExec {
	t.Helper()
	if req.Dir == "" {
		req.Dir = "/"
	}
	if req.Env == nil {
		req.Env = []string{"PATH=/usr/bin:/bin"}
	}
	p := &ptyExec{in: make(chan agent.Input), out: newScreen(), exited: make(chan agent.Exit, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // ends with the exec: at its exit, or canceled at cleanup
		defer close(done)
		exit, err := c.ExecPTY(ctx, req, p.in, p.out.frame)
		if err != nil {
			t.Errorf("ExecPTY(%q): %v", req.Command, err)
		}
		p.exited <- exit
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return p
}

func (p *ptyExec) send(t *testing.T, m agent.Input) {
	t.Helper()
	select {
	case p.in <- m:
	case <-time.After(20 * time.Second):
		t.Fatalf("input %+v not taken", m)
	}
}

func (p *ptyExec) wait(t *testing.T) agent.Exit {
	t.Helper()
	select {
	case e := <-p.exited:
		return e
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit; the terminal shows %q", p.out.String())
	}
	return agent.Exit{}
}

// A command on a PTY has a terminal for its three streams, of the size
// asked for, and its stderr is merged into the one output stream.
func TestPTYIsATerminal(t *testing.T) {
	c := startAgent(t)
	tests := []struct {
		name, command string
		want          *regexp.Regexp
	}{
		{"tty", "tty", regexp.MustCompile(`^/dev/pts/\d+\r\n$`)},
		{"size", "stty size", regexp.MustCompile(`^31 97\r\n$`)},
		{"all three streams", "test -t 0 && test -t 1 && test -t 2 && echo yes", regexp.MustCompile(`^yes\r\n$`)},
		{"stderr merged", "echo out; echo err >&2", regexp.MustCompile(`^out\r\nerr\r\n$`)},
		{"TERM set", "echo $TERM", regexp.MustCompile(`^xterm-256color\r\n$`)},
		{"controlling terminal", "exec 0<&- 1>/dev/tty; echo via /dev/tty", regexp.MustCompile(`^via /dev/tty\r\n$`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := startPTY(t, c, agent.ExecRequest{Command: tc.command, PTY: &agent.TermSize{Cols: 97, Rows: 31}})
			exit := p.wait(t)
			if got := p.out.String(); !tc.want.MatchString(got) || exit.Code != 0 {
				t.Errorf("%s on a PTY = %q (exit %+v), want %s", tc.command, got, exit, tc.want)
			}
		})
	}
}

// Typed input is echoed and read; a resize reaches the command between
// two reads, in order with the input around it.
func TestPTYInputAndResize(t *testing.T) {
	c := startAgent(t)
	p := startPTY(t, c, agent.ExecRequest{Command: "read a; echo got:$a; read b; stty size", PTY: &agent.TermSize{Cols: 80, Rows: 24}})
	p.send(t, agent.Input{Data: []byte("hello\n")})
	p.out.waitFor(t, "got:hello\r\n")
	if got := p.out.String(); !strings.HasPrefix(got, "hello\r\n") {
		t.Errorf("input not echoed first: %q", got)
	}
	p.send(t, agent.Input{Resize: &agent.TermSize{Cols: 132, Rows: 50}})
	p.send(t, agent.Input{Data: []byte("\n")})
	p.out.waitFor(t, "50 132\r\n")
	if exit := p.wait(t); exit.Code != 0 {
		t.Errorf("exit %+v; terminal %q", exit, p.out.String())
	}
}

// ^C typed at the terminal interrupts the foreground command.
func TestPTYInterrupt(t *testing.T) {
	c := startAgent(t)
	// bash, not dash: dash -c catches SIGINT, and one that comes between
	// its fork of sleep and its wait is lost (it then waits for sleep).
	p := startPTY(t, c, agent.ExecRequest{Argv: []string{"bash", "-c", "echo ready; sleep 1000; echo not interrupted"}, PTY: &agent.TermSize{Cols: 80, Rows: 24}})
	p.out.waitFor(t, "ready\r\n")
	p.send(t, agent.Input{Data: []byte{0x03}})
	exit := p.wait(t)
	if exit.Code != 130 || strings.Contains(p.out.String(), "not interrupted") {
		t.Errorf("after ^C: exit %+v, terminal %q; want 130 (SIGINT)", exit, p.out.String())
	}
}

// A background job that keeps the terminal open does not hold the exec
// after its command has exited: the session goes with it.
func TestPTYBackgroundJobEnded(t *testing.T) {
	c := startAgent(t)
	p := startPTY(t, c, agent.ExecRequest{Command: "sleep 1000 & echo started", PTY: &agent.TermSize{Cols: 80, Rows: 24}})
	exit := p.wait(t)
	if exit.Code != 0 || p.out.String() != "started\r\n" {
		t.Errorf("exit %+v, terminal %q", exit, p.out.String())
	}
}

// Canceling the exec kills the command on the terminal.
func TestPTYCancel(t *testing.T) {
	c := startAgent(t)
	ctx, cancel := context.WithCancel(t.Context())
	out := newScreen()
	done := make(chan agent.Exit, 1)
	go func() {
		exit, err := c.ExecPTY(ctx, agent.ExecRequest{Command: "echo pid=$$.; exec sleep 1000", Dir: "/", Env: []string{"PATH=/usr/bin:/bin"}, PTY: &agent.TermSize{Cols: 80, Rows: 24}}, nil, out.frame)
		if err == nil {
			t.Errorf("canceled exec: exit %+v, no error", exit)
		}
		done <- exit
	}()
	out.waitFor(t, ".\r\n")
	pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(out.String(), "pid="), ".\r\n"))
	if err != nil {
		t.Fatalf("terminal %q: %v", out.String(), err)
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("cancel did not end the exec")
	}
	// The pidfd turns readable when the process exits.
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 20_000); n != 1 || err != nil {
		t.Fatalf("sleep (pid %d) still runs after the exec was canceled: %d %v", pid, n, err)
	}
}

// A terminal of a command run as another user is that user's.
func TestPTYAsUser(t *testing.T) {
	testenv.Require(t, "root")
	c := startAgent(t)
	p := startPTY(t, c, agent.ExecRequest{Command: `id -u; stat -c %u:%g "$(tty)"`, PTY: &agent.TermSize{Cols: 80, Rows: 24},
		User: &agent.Credential{UID: 4250, GID: 4251}})
	exit := p.wait(t)
	if got, want := p.out.String(), "4250\r\n4250:4251\r\n"; got != want || exit.Code != 0 {
		t.Errorf("as uid 4250: %q (exit %+v), want %q", got, exit, want)
	}
}

// A size with a zero side is refused.
func TestPTYBadSize(t *testing.T) {
	c := startAgent(t)
	_, err := c.ExecPTY(t.Context(), agent.ExecRequest{Command: "true", Dir: "/", PTY: &agent.TermSize{Cols: 0, Rows: 24}}, nil, func(agent.Frame) {})
	if err == nil || !strings.Contains(err.Error(), "at least 1x1") {
		t.Errorf("size 0x24: %v, want a refusal", err)
	}
}

func TestUTF8Tail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 0},
		{"é", 0},
		{"a\xc3", 1},     // é cut after its first byte
		{"a\xe2\x82", 2}, // € cut after two
		{"a€", 0},
		{"\xf0\x9f\x98", 3}, // an emoji cut after three
		{"😀", 0},
		{"\x80\x80\x80\x80", 0}, // stray continuation bytes: nothing to wait for
	}
	for _, tc := range tests {
		if got := agent.UTF8Tail([]byte(tc.in)); got != tc.want {
			t.Errorf("UTF8Tail(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// A character the terminal's output splits across reads reaches the
// client whole: every frame is valid UTF-8.
func TestPTYFramesWholeCharacters(t *testing.T) {
	c := startAgent(t)
	var frames [][]byte
	var mu sync.Mutex
	// One write of 65,536 three-byte characters after one byte: reads
	// of the terminal (32 KiB at most) end inside characters.
	exit, err := c.ExecPTY(t.Context(), agent.ExecRequest{Command: `s=€; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do s=$s$s; done; printf a%s $s`,
		Dir: "/", Env: []string{"PATH=/usr/bin:/bin"}, PTY: &agent.TermSize{Cols: 80, Rows: 24}}, nil, func(f agent.Frame) {
		mu.Lock()
		frames = append(frames, f.Data)
		mu.Unlock()
	})
	if err != nil || exit.Code != 0 {
		t.Fatal(err, exit)
	}
	total := 0
	for _, f := range frames {
		if !utf8.Valid(f) {
			t.Fatalf("frame of %d bytes is not whole UTF-8 (ends % x)", len(f), f[max(0, len(f)-4):])
		}
		total += len(f)
	}
	if total != 1+65536*3 {
		t.Errorf("%d bytes in %d frames, want %d", total, len(frames), 1+65536*3)
	}
}

// A background process on a PTY: its output is the terminal's, its stdin
// is typed at it, a resize reaches it, and it cannot be told "end of
// input".
func TestPTYProcess(t *testing.T) {
	c := startAgent(t)
	info, err := c.StartProcess(t.Context(), agent.ProcessRequest{Command: "stty size; read a; stty size; echo got:$a", Dir: "/",
		Env: []string{"PATH=/usr/bin:/bin"}, PTY: &agent.TermSize{Cols: 70, Rows: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteStdin(t.Context(), info.ID, nil, true); err == nil || !strings.Contains(err.Error(), "no end of input") {
		t.Errorf("closing a terminal's stdin: %v, want a refusal", err)
	}
	if err := c.ResizeProcess(t.Context(), info.ID, agent.TermSize{Cols: 0, Rows: 5}); err == nil {
		t.Error("resize to 0x5 accepted")
	}
	if err := c.ResizeProcess(t.Context(), info.ID, agent.TermSize{Cols: 111, Rows: 33}); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteStdin(t.Context(), info.ID, []byte("x\n"), false); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	exit, err := c.Output(t.Context(), info.ID, 0, true, func(f agent.Frame) {
		if f.Stream != "stdout" {
			t.Errorf("frame on %s", f.Stream)
		}
		out.Write(f.Data)
	})
	if err != nil || exit == nil || exit.Code != 0 {
		t.Fatalf("exit %+v, %v; output %q", exit, err, out.String())
	}
	// The first size may be printed before or after the resize, and the
	// echo of the input anywhere before the answer; the second size comes
	// after the input, which came after the resize.
	got := out.String()
	if rest := strings.Replace(got, "x\r\n", "", 1); !regexp.MustCompile(`^(20 70|33 111)\r\n33 111\r\ngot:x\r\n$`).MatchString(rest) {
		t.Errorf("output %q", got)
	}
	if err := c.ResizeProcess(t.Context(), info.ID, agent.TermSize{Cols: 80, Rows: 24}); err == nil {
		t.Error("resize of an exited process accepted")
	}
	plain, err := c.StartProcess(t.Context(), agent.ProcessRequest{Command: "true", Dir: "/", Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ResizeProcess(t.Context(), plain.ID, agent.TermSize{Cols: 80, Rows: 24}); err == nil || !strings.Contains(err.Error(), "no terminal") {
		t.Errorf("resize without a terminal: %v", err)
	}
}
