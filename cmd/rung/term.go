package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// newShell is `rung shell`: an interactive login shell on a terminal.
func newShell(g *globals) *cobra.Command {
	var user, cwd string
	cmd := &cobra.Command{
		Use:   "shell SANDBOX [--user U]",
		Short: "Open an interactive login shell (bash -l, or sh -l without bash) on a terminal in a sandbox's container",
		Long: "Open an interactive login shell on a pseudo-terminal in the sandbox's container, with this terminal " +
			"in raw mode: keys, ^C and window resizes go to the sandbox. rung shell exits with the shell's exit code.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			line := "if command -v bash >/dev/null; then exec bash -l; else exec sh -l; fi"
			return runTerminal(cmd.Context(), c, args[0], client.ExecRequest{Command: line, User: user, Cwd: cwd})
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "run as this user of the image, e.g. root (default the sandbox's user)")
	cmd.Flags().StringVar(&cwd, "cwd", "", "working directory (default /workspace)")
	return cmd
}

// runTerminal runs req on a pseudo-terminal in sandbox id, of this
// terminal's size (80x24 when stdout is not a terminal), with stdin in
// raw mode while it runs when stdin is a terminal: stdin goes to the
// sandbox as typed, the output comes back as it is, and SIGWINCH sends
// the new size. It returns exitError for a non-zero exit.
func runTerminal(ctx context.Context, c *client.Client, id string, req client.ExecRequest) error {
	in, restore, err := rawStdin()
	if err != nil {
		return err
	}
	defer in.Close()
	defer restore()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGWINCH)
	defer signal.Stop(sigs)
	term, err := c.ExecPTY(ctx, id, req, localSize(), os.Stdout)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	resized := make(chan struct{})
	go func() { // ends when the exec does (done)
		defer close(resized)
		for {
			select {
			case <-sigs:
				term.Resize(localSize())
			case <-done:
				return
			}
		}
	}()
	typed := make(chan struct{})
	go func() { // ends at stdin's end or error, or at the read deadline set once the exec is over
		defer close(typed)
		io.Copy(term, in)
	}()
	res, err := term.Wait()
	close(done)
	<-resized
	in.SetReadDeadline(time.Now())
	<-typed
	restore()
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return exitError{res.ExitCode}
	}
	return nil
}

// localSize is this terminal's size (stdout's, else stdin's), or 80x24.
func localSize() rung.TermSize {
	for _, fd := range []int{1, 0} {
		if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil && ws.Col > 0 && ws.Row > 0 {
			return rung.TermSize{Cols: min(int(ws.Col), rung.MaxTermSide), Rows: min(int(ws.Row), rung.MaxTermSide)}
		}
	}
	return rung.TermSize{Cols: 80, Rows: 24}
}

// rawStdin returns a duplicate of stdin whose reads a deadline can end
// (non-blocking, which the duplicate shares with stdin), for the caller
// to close; stdin in raw mode when it is a terminal; and a function, safe
// to call twice, that puts both modes back: stdin is shared with the
// shell that started rung.
func rawStdin() (*os.File, func(), error) {
	const fd = 0
	blocking := true
	if fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0); err == nil && fl&unix.O_NONBLOCK != 0 {
		blocking = false
	}
	old, terr := unix.IoctlGetTermios(fd, unix.TCGETS)
	if terr == nil {
		raw := *old
		raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
		raw.Oflag &^= unix.OPOST
		raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
		raw.Cflag &^= unix.CSIZE | unix.PARENB
		raw.Cflag |= unix.CS8
		raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
		if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
			return nil, nil, fmt.Errorf("terminal raw mode: %w", err)
		}
	}
	dup, err := unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 3)
	if err == nil {
		if err = unix.SetNonblock(dup, true); err != nil {
			unix.Close(dup)
		}
	}
	if err != nil {
		if terr == nil {
			unix.IoctlSetTermios(fd, unix.TCSETS, old)
		}
		return nil, nil, fmt.Errorf("stdin: %w", err)
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		if terr == nil {
			unix.IoctlSetTermios(fd, unix.TCSETS, old)
		}
		if blocking {
			unix.SetNonblock(fd, false)
		}
	}
	return os.NewFile(uintptr(dup), "stdin"), restore, nil
}
