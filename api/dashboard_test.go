package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"rung.dev/rung/api"
	"rung.dev/rung/controller"
	"rung.dev/rung/controller/controllertest"
)

// TestDashboardMount: Config.Dashboard is served at "/" and "/ui/", GET
// only, outside the route table (every other path still answers the
// API's not_found), and a preview host's "/" stays the sandbox's.
func TestDashboardMount(t *testing.T) {
	c := controllertest.New(t, controller.Config{})
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("page " + r.URL.Path)) })
	var mu sync.Mutex
	var routes []string
	srv := httptest.NewServer(api.New(api.Config{Controller: c, Dashboard: page, PreviewDomain: "preview.test",
		Observe: func(route string, code int, took time.Duration) {
			mu.Lock()
			routes = append(routes, route)
			mu.Unlock()
		}}))
	defer srv.Close()
	tests := []struct {
		name, method, path, host string
		status                   int
		body                     string
	}{
		{"page", "GET", "/", "", 200, "page /"},
		{"page by name", "GET", "/index.html", "", 200, "page /index.html"},
		{"asset", "GET", "/ui/app.js", "", 200, "page /ui/app.js"},
		{"other path", "GET", "/nope", "", 404, `"not_found"`},
		{"post", "POST", "/", "", 404, `"not_found"`},
		{"api", "GET", "/v1/sandboxes", "", 401, `"unauthenticated"`},
		{"preview host", "GET", "/", "8080-e4jrpvghfpwsobbgj7nh5fq5v4.preview.test", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+tc.path, nil)
			if tc.host != "" {
				req.Host = tc.host
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var b strings.Builder
			buf := make([]byte, 4096)
			n, _ := res.Body.Read(buf)
			b.Write(buf[:n])
			if tc.status == 0 { // a preview: anything but the page
				if res.StatusCode == 200 || strings.HasPrefix(b.String(), "page") {
					t.Errorf("preview host's / = %d %q: the dashboard", res.StatusCode, b.String())
				}
				return
			}
			if res.StatusCode != tc.status || !strings.Contains(b.String(), tc.body) {
				t.Errorf("%s %s (host %q) = %d %q, want %d with %q", tc.method, tc.path, tc.host, res.StatusCode, b.String(), tc.status, tc.body)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(routes) == 0 || routes[0] != "dashboard" {
		t.Errorf("Observe routes %q: want GET / first, as dashboard", routes)
	}
}

// TestExecWebSocketSubprotocolToken: a browser's WebSocket cannot send
// Authorization, so the exec WebSocket also takes the token as a
// "rung.bearer.<token>" subprotocol and selects "rung"; a wrong token
// there is refused like a wrong header, and other routes never take it.
func TestExecWebSocketSubprotocolToken(t *testing.T) {
	e := newEnv(t)
	id := string(e.sandbox(t, e.acme, `{}`).ID)
	ws := "ws" + strings.TrimPrefix(e.url, "http") + "/v1/sandboxes/" + id + "/exec/ws"
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	conn, res, err := websocket.Dial(ctx, ws, &websocket.DialOptions{Subprotocols: []string{"rung", "rung.bearer." + e.acme}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if got := res.Header.Get("Sec-WebSocket-Protocol"); got != "rung" {
		t.Errorf("selected subprotocol %q, want rung (never the token)", got)
	}
	b, _ := json.Marshal(api.ExecRequest{Command: "echo via-subprotocol", Backend: "isolate"})
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for {
		_, m, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (no exit frame; output %q)", err, out.String())
		}
		var f api.ExecResult
		json.Unmarshal(m, &f)
		if f.Type == "exit" {
			break
		}
		var fr api.Frame
		json.Unmarshal(m, &fr)
		out.WriteString(fr.Data)
	}
	if out.String() != "via-subprotocol\n" {
		t.Errorf("output %q", out.String())
	}

	for _, tc := range []struct{ name, url, proto string }{
		{"wrong token", ws, "rung.bearer.rung_wrong"},
		{"empty token", ws, "rung.bearer."},
		{"no token", ws, "rung"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, res, err := websocket.Dial(ctx, tc.url, &websocket.DialOptions{Subprotocols: []string{"rung", tc.proto}})
			if err == nil {
				t.Fatal("dial succeeded")
			}
			if res == nil || res.StatusCode != http.StatusUnauthorized {
				t.Errorf("dial: %v, response %v; want 401", err, res)
			}
		})
	}

	// Another tenant's token is a tenant's: its exec is not_found.
	conn2, _, err := websocket.Dial(ctx, ws, &websocket.DialOptions{Subprotocols: []string{"rung", "rung.bearer." + e.beta}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.CloseNow()
	conn2.Write(ctx, websocket.MessageText, b)
	_, m, err := conn2.Read(ctx)
	var f api.Frame
	if err != nil || json.Unmarshal(m, &f) != nil || f.Type != "error" || f.Error == nil || f.Error.Code != "not_found" {
		t.Errorf("another tenant's exec: frame %s, %v; want a not_found error", m, err)
	}

	// A plain GET with the subprotocol header is not a WebSocket: the
	// token is not taken from it, and no other route takes it either.
	for _, path := range []string{"/v1/sandboxes/" + id + "/exec/ws", "/v1/sandboxes"} {
		req, _ := http.NewRequestWithContext(ctx, "GET", e.url+path, nil)
		req.Header.Set("Sec-WebSocket-Protocol", "rung, rung.bearer."+e.acme)
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Connection", "Upgrade")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if path == "/v1/sandboxes" && res.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with a subprotocol token = %d, want 401", path, res.StatusCode)
		}
		if path != "/v1/sandboxes" && res.StatusCode == http.StatusOK {
			t.Errorf("GET %s without a WebSocket handshake = 200", path)
		}
	}
}
