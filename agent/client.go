package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Client talks to one agent over its socket. It is safe for concurrent
// use and keeps connections alive between execs.
//
// The client pins the agent's socket: the first time it finds a socket in
// its directory it keeps an O_PATH descriptor of that socket, and every
// later connection goes to exactly that socket (through /proc/self/fd),
// whatever happens to the name afterwards. Under gVisor the directory is
// shared with the container, whose commands could otherwise unlink the
// socket and plant a symlink to another sandbox's agent or to any host
// socket, and the daemon, dialling as root on the host, would follow it.
type Client struct {
	http *http.Client
	dir  *os.File // the socket's directory, O_PATH; nil when it could not be opened

	mu     sync.Mutex // guards the fields below
	sock   *os.File   // the pinned socket (O_PATH), nil until found
	closed bool
}

// maxSocketPath is the longest path a unix socket address holds
// (sun_path is 108 bytes with the terminating NUL).
const maxSocketPath = 107

// Listen makes the agent's listening socket in socketDir (mode 0600 where
// the file system allows), replacing a stale one. A path longer than a
// unix address holds is bound through /proc/self/fd of the open
// directory. The host makes it this way for runtimes that pass it to the
// agent ([ServerConfig.Listener]); otherwise the agent does.
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

// NewClient returns a client for the agent listening on
// socketDir/agent.sock (see [Client] for how the socket is pinned). The
// directory must be one the caller controls, not a path that runs
// through a directory a container can write.
func NewClient(socketDir string) *Client {
	c := &Client{}
	if dir, err := os.OpenFile(socketDir, os.O_RDONLY|unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0); err == nil {
		c.dir = dir
	}
	tr := &http.Transport{
		DialContext:         c.dial,
		MaxIdleConnsPerHost: 16,
		DisableCompression:  true,
	}
	c.http = &http.Client{Transport: tr}
	return c
}

// ErrNoAgent says the agent's socket is not there (yet, or any more): the
// agent is starting, has died, or its container is going away.
var ErrNoAgent = errors.New("agent socket not available")

// dial connects to the pinned socket, pinning it first if needed. Each
// connection goes through a duplicate of the pinned descriptor, so Close
// may close the original at any time without a dial in flight reaching
// whatever reuses its number.
func (c *Client) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	fd, err := c.pinnedDup()
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var d net.Dialer
	return d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd))
}

// pinnedDup returns a new descriptor of the pinned socket, which the
// caller closes.
func (c *Client) pinnedDup() (int, error) {
	c.mu.Lock()
	sock, closed := c.sock, c.closed
	if sock != nil && !closed {
		fd, err := unix.FcntlInt(sock.Fd(), unix.F_DUPFD_CLOEXEC, 3)
		c.mu.Unlock()
		return fd, err
	}
	c.mu.Unlock()
	if closed || c.dir == nil {
		return -1, ErrNoAgent
	}
	fd, err := unix.Openat(int(c.dir.Fd()), SocketName, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("%w: %v", ErrNoAgent, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(fd)
		return -1, fmt.Errorf("%w: %s is not a socket", ErrNoAgent, SocketName)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		unix.Close(fd)
		return -1, ErrNoAgent
	}
	if c.sock == nil {
		c.sock = os.NewFile(uintptr(fd), SocketName)
	} else {
		unix.Close(fd) // another dial pinned it first
	}
	return unix.FcntlInt(c.sock.Fd(), unix.F_DUPFD_CLOEXEC, 3)
}

// Close drops idle connections and the descriptors the client holds.
// Later requests fail with [ErrNoAgent].
func (c *Client) Close() {
	c.http.CloseIdleConnections()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	if c.sock != nil {
		c.sock.Close()
	}
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
		defer endBodyWith(ctx, pr)()
		body = io.MultiReader(bytes.NewReader(head), pr)
	}
	return c.exec(ctx, body, onFrame)
}

// endBodyWith ends the streamed request body pr when ctx ends, and
// returns the release of that. net/http's transport, when a round trip
// fails or is cancelled before the response's headers, waits for its
// body writer to return, and that writer may be blocked reading pr (a
// stdin with nothing to send): without this the exec would never return.
func endBodyWith(ctx context.Context, pr *io.PipeReader) (release func() bool) {
	return context.AfterFunc(ctx, func() { pr.CloseWithError(context.Cause(ctx)) })
}

// ExecPTY is Exec on a new pseudo-terminal of size req.PTY, which must be
// set: the messages from in (bytes typed, new sizes) go to the terminal
// in order while the command runs, and all its output comes as "stdout"
// frames. A nil in sends nothing; closing it ends the input, which is
// not an end of input on a terminal (send ^D, 0x04, for that). Once the
// command has exited, ExecPTY stops receiving from in.
func (c *Client) ExecPTY(ctx context.Context, req ExecRequest, in <-chan Input, onFrame func(Frame)) (Exit, error) {
	if req.PTY == nil {
		return Exit{}, errors.New("agent exec: no terminal size")
	}
	req.StdinStream = in != nil
	head, err := json.Marshal(req)
	if err != nil {
		return Exit{}, err
	}
	if in == nil {
		return c.exec(ctx, bytes.NewReader(head), onFrame)
	}
	pr, pw := io.Pipe()
	stop := make(chan struct{})
	go func() { // ends when in closes, the body is closed, or the exec is over
		enc := json.NewEncoder(pw)
		for {
			select {
			case m, ok := <-in:
				if !ok {
					return // the input ends; the request body stays open until the exec is over
				}
				if enc.Encode(m) != nil {
					return
				}
			case <-stop:
				return
			}
		}
	}()
	defer func() {
		close(stop)
		pr.CloseWithError(io.EOF) // the command is over: end the request body
	}()
	defer endBodyWith(ctx, pr)()
	return c.exec(ctx, io.MultiReader(bytes.NewReader(head), pr), onFrame)
}

// exec posts an exec request body and reads its frames.
func (c *Client) exec(ctx context.Context, body io.Reader, onFrame func(Frame)) (Exit, error) {
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
