package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

func (c *Client) do(ctx context.Context, method, path string, body io.Reader, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://agent"+path, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("agent %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &StatusError{Code: resp.StatusCode, Msg: string(bytes.TrimSpace(msg))}
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	io.Copy(io.Discard, resp.Body)
	return nil
}

// StatusError is an agent's refusal: 404 for an unknown process (or an
// exited one dropped from the table), 400 for a bad request, 422 when a
// command cannot start, 429 when the most background processes a
// container may run at once are running.
type StatusError struct {
	Code int
	Msg  string
}

func (e *StatusError) Error() string { return fmt.Sprintf("agent: %d: %s", e.Code, e.Msg) }

// StartProcess starts a background process and returns its description.
func (c *Client) StartProcess(ctx context.Context, req ProcessRequest) (ProcessInfo, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return ProcessInfo{}, err
	}
	var info ProcessInfo
	err = c.do(ctx, http.MethodPost, "/v1/processes", bytes.NewReader(b), &info)
	return info, err
}

// Processes lists background processes: every running one, and the
// most recently exited (at most 64, with at most 32 MiB of output between
// them; older ones are dropped).
func (c *Client) Processes(ctx context.Context) ([]ProcessInfo, error) {
	var out []ProcessInfo
	err := c.do(ctx, http.MethodGet, "/v1/processes", nil, &out)
	return out, err
}

// Output calls onFrame for each retained output frame after seq after;
// with follow it waits for more until the process exits. It returns the
// exit once the process has exited, or nil when not following.
func (c *Client) Output(ctx context.Context, id string, after int64, follow bool, onFrame func(Frame)) (*Exit, error) {
	q := url.Values{"after": {strconv.FormatInt(after, 10)}}
	if follow {
		q.Set("follow", "1")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://agent/v1/processes/"+url.PathEscape(id)+"/output?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("agent output: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, &StatusError{Code: resp.StatusCode, Msg: string(bytes.TrimSpace(msg))}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var f Frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return nil, fmt.Errorf("agent output: bad frame: %w", err)
		}
		if f.Exit != nil {
			return f.Exit, nil
		}
		onFrame(f)
	}
	return nil, sc.Err()
}

// WriteStdin writes data to a process's stdin, closing it after when
// closeAfter is set.
func (c *Client) WriteStdin(ctx context.Context, id string, data []byte, closeAfter bool) error {
	path := "/v1/processes/" + url.PathEscape(id) + "/stdin"
	if closeAfter {
		path += "?close=1"
	}
	return c.do(ctx, http.MethodPost, path, bytes.NewReader(data), nil)
}

// Signal sends a signal ("SIGTERM", "SIGKILL", ...) to a process's group.
func (c *Client) Signal(ctx context.Context, id, signal string) error {
	return c.do(ctx, http.MethodPost, "/v1/processes/"+url.PathEscape(id)+"/signal?signal="+url.QueryEscape(signal), nil, nil)
}

// WaitPort returns nil once a TCP port inside the container accepts
// connections on 127.0.0.1 or [::1] (a server on "localhost" may take
// either), or a [*StatusError] with code 504 when timeout passes first.
func (c *Client) WaitPort(ctx context.Context, port int, timeout time.Duration) error {
	q := fmt.Sprintf("/v1/ready?port=%d&timeout_ms=%d", port, timeout.Milliseconds())
	return c.do(ctx, http.MethodGet, q, nil, nil)
}

// ResizeProcess sets the terminal size of a process started with a PTY;
// a process without one, or a size with a zero side, is a 400
// [*StatusError], an exited one 409.
func (c *Client) ResizeProcess(ctx context.Context, id string, size TermSize) error {
	q := url.Values{"cols": {strconv.Itoa(int(size.Cols))}, "rows": {strconv.Itoa(int(size.Rows))}}
	return c.do(ctx, http.MethodPost, "/v1/processes/"+url.PathEscape(id)+"/resize?"+q.Encode(), nil, nil)
}
