package agent_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"rung.dev/rung/agent"
)

// A tunnel carries bytes both ways to a loopback port, half-closes pass
// through, and a port nothing listens on is a 502 at once.
func TestDialPort(t *testing.T) {
	t.Parallel()
	c := startAgent(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // echo upper-cased, until the client's half-close
				defer conn.Close()
				b, _ := io.ReadAll(conn)
				conn.Write([]byte(strings.ToUpper(string(b))))
			}()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	for range 3 { // connections are independent of each other
		conn, err := c.DialPort(t.Context(), port)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write([]byte("hello tunnel")); err != nil {
			t.Fatal(err)
		}
		conn.(interface{ CloseWrite() error }).CloseWrite()
		got, err := io.ReadAll(conn)
		conn.Close()
		if err != nil || string(got) != "HELLO TUNNEL" {
			t.Fatalf("echo through tunnel = %q, %v", got, err)
		}
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	_, err = c.DialPort(t.Context(), closedPort)
	if se, ok := errors.AsType[*agent.StatusError](err); !ok || se.Code != http.StatusBadGateway {
		t.Errorf("DialPort of a closed port: %v, want a 502 StatusError", err)
	}
	if _, err := c.DialPort(t.Context(), 70000); err == nil {
		t.Error("DialPort(70000) succeeded")
	}
}

// An HTTP server behind the tunnel answers like a direct connection.
func TestDialPortHTTP(t *testing.T) {
	t.Parallel()
	c := startAgent(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "path="+r.URL.Path)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	conn, err := c.DialPort(t.Context(), ln.Addr().(*net.TCPAddr).Port)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	for _, p := range []string{"/a", "/b/c"} { // keep-alive: two requests, one tunnel
		io.WriteString(conn, "GET "+p+" HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "path="+p {
			t.Errorf("GET %s through tunnel = %q", p, b)
		}
	}
}
