package e2b

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"rung.dev/rung/controller"
	"rung.dev/rung/controller/controllertest"
	"rung.dev/rung/storage/storagetest"
)

// TestAutoPause: create's autoPause with autoPauseMemory false pauses the
// sandbox at its timeout (files kept: the controller's TTL stops it and
// marks it paused), envd then answers as for a paused sandbox, connect
// resumes it with a new timeout, and that one pauses it again. What needs
// memory is refused with a reason. Time is synctest's fake clock; the
// handler is called without a socket.
func TestAutoPause(t *testing.T) {
	pool := storagetest.NewTestPool(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		c := controllertest.New(t, controller.Config{Pool: pool})
		if _, err := c.CreateTenant(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		key, err := c.CreateToken(ctx, controller.TokenRequest{Tenant: "acme", E2B: true})
		if err != nil {
			t.Fatal(err)
		}
		s := New(Config{Controller: c})
		defer s.Close()
		call := func(method, path, body string, h http.Header) (int, string) {
			t.Helper()
			req := httptest.NewRequestWithContext(ctx, method, path, strings.NewReader(body))
			for k, v := range h {
				req.Header[k] = v
			}
			if req.Header.Get("E2b-Sandbox-Id") == "" {
				req.Header.Set("X-API-KEY", key.Bearer)
			}
			w := httptest.NewRecorder()
			s.Handler().ServeHTTP(w, req)
			return w.Code, w.Body.String()
		}

		refused := []struct {
			name   string
			body   string
			status int
			msg    string
		}{
			{"auto-pause keeping memory (the default)", `{"autoPause":true}`, 503, "auto-pause that keeps memory is not available"},
			{"auto-pause keeping memory", `{"autoPause":true,"autoPauseMemory":true}`, 503, "auto-pause that keeps memory is not available"},
			{"auto-resume", `{"autoPause":true,"autoResume":{"enabled":true}}`, 503, "auto-resume on traffic is not available"},
			{"auto-resume of a filesystem-only pause", `{"autoPause":true,"autoPauseMemory":false,"autoResume":{"enabled":true}}`, 400, "autoResume cannot be combined"},
			{"auto-resume without auto-pause", `{"autoResume":{"enabled":true}}`, 400, "autoResume needs autoPause"},
		}
		for _, tc := range refused {
			if status, body := call("POST", "/sandboxes", tc.body, nil); status != tc.status || !strings.Contains(body, tc.msg) {
				t.Errorf("%s: %d %s, want %d %q", tc.name, status, body, tc.status, tc.msg)
			}
		}

		status, body := call("POST", "/sandboxes", `{"timeout":60,"autoPause":true,"autoPauseMemory":false}`, nil)
		if status != http.StatusCreated {
			t.Fatalf("create: %d %s", status, body)
		}
		var sb struct {
			SandboxID       string `json:"sandboxID"`
			EnvdAccessToken string `json:"envdAccessToken"`
		}
		if err := json.Unmarshal([]byte(body), &sb); err != nil {
			t.Fatal(err)
		}
		info := func() (state, onTimeout string) {
			t.Helper()
			status, body := call("GET", "/sandboxes/"+sb.SandboxID, "", nil)
			var d detailOut
			if status != 200 || json.Unmarshal([]byte(body), &d) != nil {
				t.Fatalf("getInfo: %d %s", status, body)
			}
			return d.State, d.Lifecycle.OnTimeout
		}
		health := func() int {
			status, _ := call("GET", "/health", "", http.Header{"E2b-Sandbox-Id": {sb.SandboxID}, "X-Access-Token": {sb.EnvdAccessToken}})
			return status
		}
		if state, on := info(); state != "running" || on != "pause" {
			t.Errorf("after create: state %s, onTimeout %s; want running, pause", state, on)
		}
		time.Sleep(59 * time.Second)
		synctest.Wait()
		if state, _ := info(); state != "running" {
			t.Errorf("before its timeout: %s, want running", state)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if state, _ := info(); state != "paused" || health() != http.StatusBadGateway {
			t.Errorf("after its timeout: %s, health %d; want paused, 502", state, health())
		}
		if status, body := call("POST", "/sandboxes/"+sb.SandboxID+"/connect", `{"timeout":30}`, nil); status != http.StatusCreated {
			t.Fatalf("connect: %d %s, want 201 (resumed)", status, body)
		}
		if state, _ := info(); state != "running" || health() != http.StatusNoContent {
			t.Errorf("after connect: %s, health %d; want running, 204", state, health())
		}
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if state, _ := info(); state != "paused" {
			t.Errorf("after the timeout connect set: %s, want paused again", state)
		}
	})
}
