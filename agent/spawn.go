package agent

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// spawned is a command started in its own process group, with pipes for
// its three standard streams, or in its own session on a terminal.
type spawned struct {
	pid    int
	argv   []string
	status <-chan unix.WaitStatus // receives the exit status once
	stdin  *os.File               // write end; the caller closes it; nil on a terminal
	stdout *os.File               // read ends; the caller drains and closes them; nil on a terminal
	stderr *os.File
}

// command is what spawn starts.
type command struct {
	argv           []string
	command, shell string // run as shell -c command when argv is empty
	dir            string
	env            []string
	user           *Credential // nil: the agent's own (root)
	// tty, when set, is a terminal's subsidiary end: the command's three
	// standard streams and, in a session of its own, its controlling
	// terminal. spawn does not close it.
	tty *os.File
}

// spawn starts c.argv (or c.shell -c c.command) in c.dir with c.env, as
// c.user. Its error reads like a shell's ("x: command not found") for a
// missing command.
func (s *server) spawn(c command) (*spawned, error) {
	argv, dir := c.argv, c.dir
	if len(argv) == 0 {
		shell := c.shell
		if shell == "" {
			shell = "/bin/sh"
		}
		argv = []string{shell, "-c", c.command}
	}
	if dir == "" {
		dir = "/workspace"
	}
	path, err := lookPath(argv[0], c.env)
	if err != nil {
		return nil, err
	}
	if c.tty != nil {
		// A session of its own with the terminal as its controlling
		// terminal (Ctty is the child's descriptor 0): ^C on the terminal
		// reaches its foreground group, and its process group is its pid,
		// as with Setpgid.
		sys := &unix.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		setCredential(sys, c.user)
		pid, status, err := s.startChild(path, argv, &os.ProcAttr{Dir: dir, Env: c.env, Files: []*os.File{c.tty, c.tty, c.tty}, Sys: sys})
		if err != nil {
			return nil, err
		}
		return &spawned{pid: pid, argv: argv, status: status}, nil
	}
	var pipes [3][2]*os.File // [stdin, stdout, stderr][read, write]
	closeAll := func() {
		for _, p := range pipes {
			for _, f := range p {
				if f != nil {
					f.Close()
				}
			}
		}
	}
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, err
		}
		pipes[i] = [2]*os.File{r, w}
		if u := c.user; u != nil {
			// A pipe belongs to whoever made it, mode 0600: a command
			// running as another user could not open /dev/stdout or
			// /dev/stderr (/proc/self/fd/N) again, which works in any
			// shell where that user made its own pipes (EACCES otherwise).
			if err := chownPipe(r, u); err != nil {
				closeAll()
				return nil, err
			}
		}
	}
	sys := &unix.SysProcAttr{Setpgid: true}
	setCredential(sys, c.user)
	attr := &os.ProcAttr{
		Dir:   dir,
		Env:   c.env,
		Files: []*os.File{pipes[0][0], pipes[1][1], pipes[2][1]},
		Sys:   sys,
	}
	pid, status, err := s.startChild(path, argv, attr)
	// The child has its ends now; ours of those go.
	pipes[0][0].Close()
	pipes[1][1].Close()
	pipes[2][1].Close()
	if err != nil {
		pipes[0][1].Close()
		pipes[1][0].Close()
		pipes[2][0].Close()
		return nil, err
	}
	return &spawned{pid: pid, argv: argv, status: status, stdin: pipes[0][1], stdout: pipes[1][0], stderr: pipes[2][0]}, nil
}

// setCredential makes the child set u's groups, gid and uid before it
// execs, so the command never runs a moment as root; nil u leaves root.
func setCredential(sys *unix.SysProcAttr, u *Credential) {
	if u != nil {
		// Groups nil still sets them: to none, not to root's.
		sys.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
	}
}

// startChild starts path with the reaper watching for its exit, and
// counts its process group among the running commands'.
func (s *server) startChild(path string, argv []string, attr *os.ProcAttr) (int, <-chan unix.WaitStatus, error) {
	pid, status, err := s.reaper.start(func() (int, error) {
		p, err := os.StartProcess(path, argv, attr)
		if err != nil {
			return 0, err
		}
		pid := p.Pid
		p.Release() // the reaper, not os.Process, waits for it
		preferForOOM(pid)
		return pid, nil
	})
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	s.groups[pid] = struct{}{}
	late := s.stopping // it began before the agent started stopping, but missed the signal
	s.mu.Unlock()
	if late != 0 {
		unix.Kill(-pid, late)
	}
	return pid, status, nil
}

// chownPipe gives a pipe (both ends are one inode) to u, through f's
// raw descriptor: Fd would put f in blocking mode.
func chownPipe(f *os.File, u *Credential) error {
	rc, err := f.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) { err = unix.Fchown(int(fd), int(u.UID), int(u.GID)) })
		err = errors.Join(err, cerr)
	}
	if err != nil {
		return fmt.Errorf("pipe for the command: %w", err)
	}
	return nil
}

// preferForOOM makes a command the OOM killer's first choice over the
// agent: in a cgroup full of small processes (a fork bomb of sleeps) the
// agent is otherwise the largest one, and killing it ends the container.
// Lowering the agent's own score instead needs CAP_SYS_RESOURCE, which
// neither the container nor every host has. A command may lower itself
// back to 0, which still leaves the agent the smallest target. The
// window between fork and this write is microseconds.
func preferForOOM(pid int) {
	f, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", os.O_WRONLY, 0)
	if err != nil {
		return
	}
	f.WriteString("1000")
	f.Close()
}

// forget drops a finished command's process group from the set that
// signalAll reaches.
func (s *server) forget(pid int) {
	s.mu.Lock()
	delete(s.groups, pid)
	s.mu.Unlock()
}

// exitOf turns a wait status into an [Exit].
func exitOf(ws unix.WaitStatus) Exit {
	if ws.Signaled() {
		return Exit{Code: 128 + int(ws.Signal()), Signal: unix.SignalName(ws.Signal()), Reason: "signal"}
	}
	return Exit{Code: ws.ExitStatus(), Reason: "exit"}
}
