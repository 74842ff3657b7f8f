package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
)

// Exec runs a command to completion and returns its result.
func (c *Client) Exec(ctx context.Context, id string, req ExecRequest) (ExecResult, error) {
	var res ExecResult
	return res, c.do(ctx, "POST", sbPath(id, "/exec"), nil, req, &res)
}

// ExecStream runs a command and copies its output to stdout and stderr as
// it arrives (over NDJSON), then returns the result (whose Stdout and
// Stderr are empty).
func (c *Client) ExecStream(ctx context.Context, id string, req ExecRequest, stdout, stderr io.Writer) (ExecResult, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return ExecResult{}, fmt.Errorf("encode request: %w", err)
	}
	hreq, err := c.newRequest(ctx, "POST", sbPath(id, "/exec"), url.Values{"stream": {"ndjson"}}, bytes.NewReader(b), "application/json")
	if err != nil {
		return ExecResult{}, err
	}
	resp, err := c.send(hreq)
	if err != nil {
		return ExecResult{}, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	// Start small (the scanner grows the buffer for long frames): a 64 KiB
	// buffer per call was most of this call's allocation.
	sc.Buffer(make([]byte, 0, 4<<10), 64<<20)
	for sc.Scan() {
		var f struct {
			Type  string `json:"type"`
			Data  string `json:"data"`
			Error *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		line := sc.Bytes()
		if err := json.Unmarshal(line, &f); err != nil {
			return ExecResult{}, fmt.Errorf("exec stream: bad frame: %w", err)
		}
		switch f.Type {
		case "stdout":
			io.WriteString(stdout, f.Data)
		case "stderr":
			io.WriteString(stderr, f.Data)
		case "exit":
			var res ExecResult
			err := json.Unmarshal(line, &res)
			return res, err
		case "error":
			if f.Error == nil {
				return ExecResult{}, fmt.Errorf("exec stream: error frame without error")
			}
			return ExecResult{}, &Error{Status: 200, Code: f.Error.Code, Message: f.Error.Message}
		}
	}
	if err := sc.Err(); err != nil {
		return ExecResult{}, fmt.Errorf("exec stream: %w", err)
	}
	return ExecResult{}, fmt.Errorf("exec stream ended without an exit frame")
}
