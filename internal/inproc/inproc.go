// Package inproc serves HTTP requests with an [http.Handler] in the same
// process, without a socket: a [Transport] lets an HTTP client (rung's
// Go SDK) call the daemon's own API handler, so that a caller inside the
// daemon goes through exactly the checks every other client does.
package inproc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// Transport is an [http.RoundTripper] that serves each request with
// Handler in a goroutine of its own. The response arrives as soon as the
// handler writes its header (or returns), and its body streams what the
// handler writes: a write blocks until the client reads it, so Flush has
// nothing to do. Closing the body cancels the request's context and
// waits for the handler to return. A request whose URL scheme is https
// carries X-Forwarded-Proto: https, as one a TLS proxy passed on would.
// The handler gets no connection to hijack. It is safe for concurrent
// use.
type Transport struct {
	Handler http.Handler
}

// RoundTrip implements [http.RoundTripper].
func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	r := req.Clone(ctx)
	r.RequestURI = req.URL.RequestURI()
	r.RemoteAddr = "127.0.0.1:0"
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	if r.Host == "" {
		r.Host = req.URL.Host
	}
	if r.Body == nil {
		r.Body = http.NoBody
	}
	if req.URL.Scheme == "https" {
		r.Header.Set("X-Forwarded-Proto", "https")
	}
	pr, pw := io.Pipe()
	w := &writer{header: http.Header{}, pw: pw, head: make(chan struct{})}
	done := make(chan struct{})
	// Ends when the handler returns: it sees its context canceled, or
	// its writes fail, once the client closes the body (body.Close
	// waits for it).
	go func() {
		defer close(done)
		defer r.Body.Close()
		defer func() {
			p := recover()
			if p != nil && p != http.ErrAbortHandler {
				w.writeHeader(http.StatusInternalServerError)
				pw.CloseWithError(fmt.Errorf("handler panic: %v", p))
				return
			}
			w.writeHeader(http.StatusOK) // a handler that wrote nothing
			if p != nil {
				pw.CloseWithError(io.ErrUnexpectedEOF)
				return
			}
			pw.Close()
		}()
		t.Handler.ServeHTTP(w, r)
	}()
	<-w.head
	return &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          &body{pr: pr, cancel: cancel, done: done},
		ContentLength: -1,
		Request:       req,
	}, nil
}

// writer is the handler's [http.ResponseWriter].
type writer struct {
	header http.Header // the handler's until the header is written
	pw     *io.PipeWriter
	once   sync.Once
	head   chan struct{} // closed once status and sent are set
	status int
	sent   http.Header // header as written: a copy, as net/http takes one
}

func (w *writer) Header() http.Header { return w.header }

func (w *writer) WriteHeader(code int) {
	if code < 200 && code != http.StatusSwitchingProtocols {
		return // informational: the real header follows
	}
	w.writeHeader(code)
}

func (w *writer) writeHeader(code int) {
	w.once.Do(func() {
		w.status, w.sent = code, w.header.Clone()
		close(w.head)
	})
}

func (w *writer) Write(p []byte) (int, error) {
	w.writeHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush implements [http.Flusher]: a write has reached the reader when it
// returns.
func (w *writer) Flush() {}

// body is a response's body: the read end of the handler's pipe.
type body struct {
	pr     *io.PipeReader
	cancel context.CancelFunc
	done   chan struct{} // closed when the handler's goroutine ends
}

func (b *body) Read(p []byte) (int, error) { return b.pr.Read(p) }

// Close ends the request: the handler's context is canceled, its next
// write fails, and Close returns once it has returned.
func (b *body) Close() error {
	b.cancel()
	b.pr.Close()
	<-b.done
	return nil
}
