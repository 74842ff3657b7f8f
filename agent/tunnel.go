package agent

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The port tunnel: the host reaches a TCP port inside the container by
// asking the agent, which dials it on the container's loopback and then
// copies bytes both ways over the same socket connection. It works in
// every network mode and under every runtime (the agent dials from inside
// the container's network stack, gVisor's included), and the container
// never gets an address the host dials.

// tunnelProtocol is the Upgrade token of a port tunnel.
const tunnelProtocol = "rung-tcp"

// handleTunnel dials ?port on the container's loopback and, once
// connected, switches the connection to a raw byte stream (101). A port
// nothing listens on is 502 at once.
func (s *server) handleTunnel(w http.ResponseWriter, r *http.Request) {
	port, err := strconv.Atoi(r.URL.Query().Get("port"))
	if err != nil || port <= 0 || port > 65535 {
		http.Error(w, "bad port", http.StatusBadRequest)
		return
	}
	if r.Header.Get("Upgrade") != tunnelProtocol {
		http.Error(w, "want Upgrade: "+tunnelProtocol, http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	up, err := dialLoopback(ctx, port)
	cancel()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Connection", "Upgrade")
	w.Header().Set("Upgrade", tunnelProtocol)
	w.WriteHeader(http.StatusSwitchingProtocols)
	if err := rc.Flush(); err != nil {
		up.Close()
		return
	}
	conn, brw, err := rc.Hijack()
	if err != nil {
		up.Close()
		return
	}
	splice(conn, brw.Reader, up)
}

// dialLoopback connects to port on 127.0.0.1 or [::1], whichever accepts
// first (a server "on localhost" may take either).
func dialLoopback(ctx context.Context, port int) (net.Conn, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, len(loopbacks))
	for _, host := range loopbacks {
		go func() {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			ch <- res{c, err}
		}()
	}
	var first error
	var won net.Conn
	for range loopbacks {
		r := <-ch
		switch {
		case r.err == nil && won == nil:
			won = r.c
			cancel()
		case r.err == nil:
			r.c.Close()
		case first == nil:
			first = r.err
		}
	}
	if won != nil {
		return won, nil
	}
	return nil, fmt.Errorf("nothing accepts connections on port %d in the sandbox: %v", port, first)
}

// splice copies between a (whose already-read bytes are in ar) and b
// until both directions end, half-closing each side's write when its
// source ends, then closes both.
func splice(a net.Conn, ar io.Reader, b net.Conn) {
	var wg sync.WaitGroup
	wg.Go(func() {
		io.Copy(b, ar)
		closeWrite(b)
	})
	io.Copy(a, b)
	closeWrite(a)
	wg.Wait()
	a.Close()
	b.Close()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// DialPort connects to a TCP port inside the container through the
// agent (see handleTunnel). A port nothing listens on is a
// [*StatusError] with code 502.
func (c *Client) DialPort(ctx context.Context, port int) (net.Conn, error) {
	conn, err := c.dial(ctx, "unix", "")
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	fmt.Fprintf(conn, "GET /v1/tunnel?port=%d HTTP/1.1\r\nHost: agent\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", port, tunnelProtocol)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("agent tunnel: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		conn.Close()
		return nil, &StatusError{Code: resp.StatusCode, Msg: string(bytes.TrimSpace(msg))}
	}
	if !stop() {
		conn.Close()
		return nil, ctx.Err()
	}
	conn.SetDeadline(time.Time{})
	return &bufferedConn{Conn: conn, r: br}, nil
}

// bufferedConn is a connection whose first bytes may already sit in r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite half-closes the underlying connection.
func (c *bufferedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
