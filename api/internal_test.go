package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"rung.dev/rung"
)

func TestStatusTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want int
	}{
		{rung.ErrInvalid, 400}, {rung.ErrUnauthenticated, 401}, {rung.ErrPermission, 403}, {rung.ErrNotFound, 404},
		{rung.ErrExists, 409}, {rung.ErrConflict, 409}, {rung.ErrTooLarge, 413}, {rung.ErrLimit, 429},
		{rung.ErrUnavailable, 503}, {rung.ErrTimeout, 504}, {errString("boom"), 500},
		{&rung.LimitError{Limit: "x", TooLarge: true}, 413}, {&rung.LimitError{Limit: "x"}, 429},
	}
	for _, tc := range tests {
		if got := Status(tc.err); got != tc.want {
			t.Errorf("Status(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestOpenAPICoversRoutes keeps openapi.json in sync with the routes.
func TestOpenAPICoversRoutes(t *testing.T) {
	t.Parallel()
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi = %q, want 3.x", doc.OpenAPI)
	}
	documented := 0
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt.pattern, " ")
		ops, ok := doc.Paths[path]
		if !ok {
			t.Errorf("route %s: path missing from openapi.json", rt.pattern)
			continue
		}
		if _, ok := ops[strings.ToLower(method)]; !ok {
			t.Errorf("route %s: method missing from openapi.json", rt.pattern)
		}
		documented++
	}
	n := 0
	for _, ops := range doc.Paths {
		for m := range ops {
			if m != "parameters" {
				n++
			}
		}
	}
	if n != documented {
		t.Errorf("openapi.json documents %d operations, the server has %d routes", n, documented)
	}
}

// TestPanicIsInternal checks that a panicking handler answers 500 with a
// request ID, and the server keeps serving.
func TestPanicIsInternal(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	h := s.wrap(route{public: true, h: func(*Server, http.ResponseWriter, *http.Request, caller) error { panic("boom") }})
	for range 2 {
		w := httptest.NewRecorder()
		h(w, httptest.NewRequest("GET", "/x", nil))
		var eb ErrorBody
		json.Unmarshal(w.Body.Bytes(), &eb)
		if w.Code != 500 || eb.Error.Code != "internal" || !strings.Contains(eb.Error.Message, "req_") || strings.Contains(eb.Error.Message, "boom") {
			t.Errorf("panic answered %d %s", w.Code, w.Body)
		}
	}
}
