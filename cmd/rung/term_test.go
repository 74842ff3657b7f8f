package main

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// hostPTY opens a pseudo-terminal on the host, as a user's terminal
// emulator would, of size cols x rows; both ends close when the test ends.
func hostPTY(t *testing.T, cols, rows uint16) (main, sub *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}); err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// runOnPTY starts the rung CLI with args on the host terminal sub, as
// its controlling terminal, and returns a screen of what it shows and a
// channel that receives its exit code.
func runOnPTY(t *testing.T, p *serveProc, bin string, main, sub *os.File, args ...string) (*screen, <-chan int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "RUNG_ADDR="+p.addr, "RUNG_TOKEN="+p.token)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sub, sub, sub
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := newScreen()
	go func() { // ends when main is closed at the test's end (or reads EIO)
		buf := make([]byte, 4096)
		for {
			n, err := main.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	code := make(chan int, 1)
	go func() { // ends when the CLI exits
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code <- ee.ExitCode()
		case err != nil:
			code <- -1
		default:
			code <- 0
		}
	}()
	return out, code
}

// `rung exec -t` and `rung shell` put the local terminal in raw mode for
// the remote one, forward its size and its resizes (SIGWINCH), exit with
// the command's code and give the terminal back as it was.
func TestTerminalCLI(t *testing.T) {
	bin := rungBinary(t)
	p := startServe(t, bin, t.TempDir())
	defer p.stop(t)
	if _, code := p.run(t, bin, "", "create", "--name", "box"); code != 0 {
		t.Fatal("create failed")
	}

	t.Run("exec -t", func(t *testing.T) {
		main, sub := hostPTY(t, 100, 30)
		before, err := unix.IoctlGetTermios(int(sub.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		out, code := runOnPTY(t, p, bin, main, sub, "exec", "-t", "box", "--", `stty size; while read l; do [ "$l" = q ] && exit 3; stty size; done`)
		out.waitFor(t, "30 100\r\n")
		if err := unix.IoctlSetWinsize(int(main.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: 120, Row: 40}); err != nil {
			t.Fatal(err)
		}
		// The resize (a signal to the CLI) and the keys travel apart: ask
		// for the size until the new one shows, each time after the
		// answer to the last question.
		sizes := regexp.MustCompile(`\d+ \d+\r\n`)
		for i := 0; ; i++ {
			if i == 100 {
				t.Fatalf("the new size never showed: %q", out.String())
			}
			seen := len(sizes.FindAllString(out.String(), -1))
			main.Write([]byte("\n"))
			out.waitForFunc(t, func(s string) bool { return len(sizes.FindAllString(s, -1)) > seen })
			if all := sizes.FindAllString(out.String(), -1); all[len(all)-1] == "40 120\r\n" {
				break
			}
		}
		main.Write([]byte("q\n"))
		if c := <-code; c != 3 {
			t.Errorf("rung exec -t exited %d, want the command's 3; terminal %q", c, out.String())
		}
		after, err := unix.IoctlGetTermios(int(sub.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
			t.Errorf("terminal modes not restored: lflag %#x iflag %#x oflag %#x, were %#x %#x %#x",
				after.Lflag, after.Iflag, after.Oflag, before.Lflag, before.Iflag, before.Oflag)
		}
	})

	t.Run("shell", func(t *testing.T) {
		main, sub := hostPTY(t, 80, 24)
		out, code := runOnPTY(t, p, bin, main, sub, "shell", "box")
		main.Write([]byte("echo $((6*7)); tty; exit 5\n"))
		out.waitFor(t, "42\r\n/dev/pts/")
		if c := <-code; c != 5 {
			t.Errorf("rung shell exited %d, want 5; terminal %q", c, out.String())
		}
		if strings.Contains(out.String(), "not a tty") {
			t.Errorf("shell without a terminal: %q", out.String())
		}
	})
}
