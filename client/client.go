// Package client is the Go SDK for rung's HTTP API. It mirrors the API one
// method per endpoint, takes a context everywhere, and turns error
// responses back into the rung error classes, so that
// errors.Is(err, rung.ErrNotFound) works on both sides of the wire. It
// imports only the standard library and package rung.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"rung.dev/rung"
)

// Client talks to one rung daemon with one token. It is safe for
// concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// Option configures a [Client].
type Option func(*Client)

// WithToken sets the bearer token.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient sets the HTTP client (default: a client with keep-alive
// and no overall timeout; use contexts for deadlines).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// New returns a client for the daemon at addr ("127.0.0.1:7420" or a URL
// such as "http://host:7420").
func New(addr string, opts ...Option) *Client {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	c := &Client{base: strings.TrimRight(addr, "/"), hc: &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 256, ForceAttemptHTTP2: false, Proxy: http.ProxyFromEnvironment,
	}}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Error is an error response. It unwraps to the rung class of its code
// (nothing for "internal"), so errors.Is works.
type Error struct {
	Status  int    // HTTP status
	Code    string // wire code, such as "not_found"
	Message string
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the error class of e's code.
func (e *Error) Unwrap() error { return rung.ClassOf(e.Code) }

func (c *Client) newRequest(ctx context.Context, method, path string, q url.Values, body io.Reader, ctype string) (*http.Request, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	return req, nil
}

// send performs a request and returns the response when its status is
// 2xx; otherwise it returns the decoded *Error.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	if resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusSwitchingProtocols {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var eb struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &eb) != nil || eb.Error.Code == "" {
		return nil, &Error{Status: resp.StatusCode, Code: rung.CodeInternal, Message: fmt.Sprintf("%s %s: HTTP %d", req.Method, req.URL.Path, resp.StatusCode)}
	}
	return nil, &Error{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
}

// do sends a JSON request (in may be nil) and decodes a JSON response
// into out (which may be nil).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body io.Reader
	ctype := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body, ctype = bytes.NewReader(b), "application/json"
	}
	req, err := c.newRequest(ctx, method, path, q, body, ctype)
	if err != nil {
		return err
	}
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", method, path, err)
	}
	return nil
}

func sbPath(id string, rest ...string) string {
	return "/v1/sandboxes/" + url.PathEscape(id) + strings.Join(rest, "")
}
