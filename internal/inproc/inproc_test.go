package inproc

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, url string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: Transport{Handler: h}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// A response streams: the client reads what the handler flushed while
// the handler still runs.
func TestStreams(t *testing.T) {
	t.Parallel()
	next := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-A", "1")
		w.WriteHeader(http.StatusAccepted)
		w.Header().Set("X-A", "changed after the header") // not sent, as over a socket
		io.WriteString(w, "one\n")
		http.NewResponseController(w).Flush()
		<-next
		io.WriteString(w, "two\n")
	})
	resp := get(t, h, "http://x/", nil)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("X-A") != "1" {
		t.Fatalf("status %d, X-A %q", resp.StatusCode, resp.Header.Get("X-A"))
	}
	br := bufio.NewReader(resp.Body)
	if l, err := br.ReadString('\n'); l != "one\n" || err != nil {
		t.Fatalf("first line %q, %v", l, err)
	}
	close(next)
	if rest, err := io.ReadAll(br); string(rest) != "two\n" || err != nil {
		t.Fatalf("rest %q, %v", rest, err)
	}
}

// The handler sees the request as a server would.
func TestRequest(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, strings.Join([]string{r.Method, r.Host, r.RequestURI, r.Header.Get("X-Forwarded-Proto"), string(b)}, " "))
	})
	for url, want := range map[string]string{
		"http://api.test:7420/v1/x?a=b": "POST api.test:7420 /v1/x?a=b  body",
		"https://api.test/v1/y":         "POST api.test /v1/y https body",
	} {
		resp := get(t, h, url, strings.NewReader("body"))
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != want || resp.StatusCode != 200 {
			t.Errorf("%s: %d %q, want 200 %q", url, resp.StatusCode, b, want)
		}
	}
}

// Closing the body cancels the handler's context and waits for it.
func TestCloseCancels(t *testing.T) {
	t.Parallel()
	returned := false
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		<-r.Context().Done()
		returned = true // read after Close: Close waits for the handler
	})
	resp := get(t, h, "http://x/", nil)
	resp.Body.Close()
	if !returned {
		t.Error("Close returned before the handler")
	}
}

// A handler blocked writing to a client that went away returns.
func TestCloseUnblocksWrites(t *testing.T) {
	t.Parallel()
	var werr error
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for werr == nil {
			_, werr = io.WriteString(w, strings.Repeat("x", 1<<10))
		}
	})
	resp := get(t, h, "http://x/", nil)
	io.ReadFull(resp.Body, make([]byte, 10))
	resp.Body.Close()
	if !errors.Is(werr, io.ErrClosedPipe) {
		t.Errorf("write after Close: %v", werr)
	}
}

// A panicking handler is a 500 and a broken body, not a crash.
func TestPanic(t *testing.T) {
	t.Parallel()
	resp := get(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }), "http://x/", nil)
	_, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("panic: %d, %v", resp.StatusCode, err)
	}
	resp = get(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "part")
		panic(http.ErrAbortHandler)
	}), "http://x/", nil)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "part" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("abort: %q, %v", b, err)
	}
}
