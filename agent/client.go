package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Client talks to one agent over its socket. It is safe for concurrent
// use and keeps connections alive between execs.
type Client struct {
	http *http.Client
	dir  *os.File // socketDir, held open when its path is too long to dial
}

// maxSocketPath is the longest path a unix socket address holds
// (sun_path is 108 bytes with the terminating NUL).
const maxSocketPath = 107

// Listen makes the agent's listening socket in socketDir (mode 0600 where
// the file system allows), replacing a stale one. A path longer than a unix address holds is bound
// through /proc/self/fd of the open directory, as [NewClient] dials it.
// The host makes it this way for runtimes that pass it to the agent
// ([ServerConfig.Listener]); otherwise the agent does.
func Listen(socketDir string) (*net.UnixListener, error) {
	sock := filepath.Join(socketDir, SocketName)
	if len(sock) > maxSocketPath {
		dir, err := os.OpenFile(socketDir, os.O_RDONLY|unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return nil, fmt.Errorf("agent listen: %w", err)
		}
		defer dir.Close()
		sock = "/proc/self/fd/" + strconv.Itoa(int(dir.Fd())) + "/" + SocketName
	}
	os.Remove(sock)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("agent listen: %w", err)
	}
	// Defence in depth only: the host's run directory (0700) is what keeps
	// other users out, and under runsc the socket's host side belongs to
	// the gofer, which refuses the chmod.
	os.Chmod(sock, 0o600)
	return ln, nil
}

// NewClient returns a client for the agent listening in socketDir. A
// socket whose path is longer than a unix address holds (a deep data
// directory) is dialled through /proc/self/fd of the open directory.
func NewClient(socketDir string) *Client {
	c := &Client{}
	sock := filepath.Join(socketDir, SocketName)
	if len(sock) > maxSocketPath {
		if dir, err := os.OpenFile(socketDir, os.O_RDONLY|unix.O_PATH|unix.O_DIRECTORY, 0); err == nil {
			c.dir = dir
			sock = "/proc/self/fd/" + strconv.Itoa(int(dir.Fd())) + "/" + SocketName
		}
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxIdleConnsPerHost: 16,
		DisableCompression:  true,
	}
	c.http = &http.Client{Transport: tr}
	return c
}

// Close drops idle connections and the directory the client holds.
func (c *Client) Close() {
	c.http.CloseIdleConnections()
	if c.dir != nil {
		c.dir.Close()
	}
}

// Health reports whether the agent answers.
func (c *Client) Health(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://agent/v1/health", nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("agent health: %s", resp.Status)
	}
	return nil
}

// Exec runs req and calls onFrame for each output frame, in order. It
// returns the exit frame. Cancelling ctx kills the command. An error means
// there is no result (the agent or the container went away).
func (c *Client) Exec(ctx context.Context, req ExecRequest, onFrame func(Frame)) (Exit, error) {
	return c.ExecStream(ctx, req, nil, onFrame)
}

// ExecStream is Exec with the command's stdin streamed from stdin while it
// runs, when stdin is not nil (req.Stdin must then be empty): output
// arrives while stdin is still open, as a REPL needs. The command sees
// the end of its stdin at stdin's EOF. Once the command has exited,
// ExecStream stops reading stdin; a Read already blocked in stdin is the
// caller's to end, by closing it.
func (c *Client) ExecStream(ctx context.Context, req ExecRequest, stdin io.Reader, onFrame func(Frame)) (Exit, error) {
	req.StdinStream = stdin != nil
	head, err := json.Marshal(req)
	if err != nil {
		return Exit{}, err
	}
	var body io.Reader = bytes.NewReader(head)
	if stdin != nil {
		pr, pw := io.Pipe()
		go func() { // ends at stdin's EOF or error, or when pr is closed below
			_, err := io.Copy(pw, stdin)
			pw.CloseWithError(err)
		}()
		defer pr.CloseWithError(io.EOF) // the command is over: end the request body
		body = io.MultiReader(bytes.NewReader(head), pr)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://agent/v1/exec", body)
	if err != nil {
		return Exit{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(hreq)
	if err != nil {
		return Exit{}, fmt.Errorf("agent exec: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return Exit{}, fmt.Errorf("agent exec: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var f Frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return Exit{}, fmt.Errorf("agent exec: bad frame: %w", err)
		}
		if f.Exit != nil {
			return *f.Exit, nil
		}
		if onFrame != nil {
			onFrame(f)
		}
	}
	if err := sc.Err(); err != nil {
		return Exit{}, fmt.Errorf("agent exec: %w", err)
	}
	return Exit{}, fmt.Errorf("agent exec: stream ended without an exit frame")
}
