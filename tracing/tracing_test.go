package tracing_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/tracing"
	"rung.dev/rung/tracing/tracingtest"
)

func TestEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, flag    string
		env           map[string]string
		want, wantErr string
	}{
		{name: "off"},
		{name: "flag", flag: "http://c:4318/v1/traces", want: "http://c:4318/v1/traces"},
		{name: "flag without path", flag: "https://c:4318", want: "https://c:4318/v1/traces"},
		{name: "flag root path", flag: "http://c:4318/", want: "http://c:4318/v1/traces"},
		{name: "flag other path", flag: "http://c/otlp/traces", want: "http://c/otlp/traces"},
		{name: "flag wins", flag: "http://a:1", env: map[string]string{tracing.EnvTracesEndpoint: "http://b:2/x"}, want: "http://a:1/v1/traces"},
		{name: "traces env as it is", env: map[string]string{tracing.EnvTracesEndpoint: "http://b:2/x", tracing.EnvEndpoint: "http://c:3"}, want: "http://b:2/x"},
		{name: "traces env root", env: map[string]string{tracing.EnvTracesEndpoint: "http://b:2"}, want: "http://b:2/"},
		{name: "base env", env: map[string]string{tracing.EnvEndpoint: "http://c:3"}, want: "http://c:3/v1/traces"},
		{name: "base env with path", env: map[string]string{tracing.EnvEndpoint: "http://c:3/otlp/"}, want: "http://c:3/otlp/v1/traces"},
		{name: "grpc scheme", flag: "grpc://c:4317", wantErr: "--otlp-endpoint"},
		{name: "no scheme", flag: "c:4318", wantErr: "http:// or https://"},
		{name: "no host", flag: "http:///v1/traces", wantErr: "no host"},
		{name: "query", flag: "http://c/v1/traces?x=1", wantErr: "query"},
		{name: "bad env", env: map[string]string{tracing.EnvEndpoint: "::nope"}, wantErr: tracing.EnvEndpoint},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tracing.Endpoint(tc.flag, func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if !errors.Is(err, rung.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Endpoint(%q) = %q, %v; want an invalid_argument error naming %q", tc.flag, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Endpoint(%q) = %q, %v; want %q", tc.flag, got, err, tc.want)
			}
		})
	}
}

func TestOffWithoutEndpoint(t *testing.T) {
	t.Parallel()
	tr, err := tracing.New(t.Context(), tracing.Config{Getenv: func(string) string { return "" }})
	if tr != nil || err != nil {
		t.Fatalf("New without an endpoint = %v, %v; want nil, nil (off)", tr, err)
	}
}

// syncBuffer is a log sink for a handler written from the exporter's
// goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTracer(t *testing.T, endpoint string, log *slog.Logger) *tracing.Tracer {
	t.Helper()
	tr, err := tracing.New(t.Context(), tracing.Config{Endpoint: endpoint, Logger: log, Getenv: func(string) string { return "" }})
	if err != nil || tr == nil {
		t.Fatalf("New(%s) = %v, %v", endpoint, tr, err)
	}
	return tr
}

// TestSpans checks a trace end to end through a real OTLP/HTTP receiver:
// a client's traceparent continues, children nest, attributes keep their
// types, a failed span carries its code, and Shutdown flushes.
func TestSpans(t *testing.T) {
	t.Parallel()
	recv := tracingtest.NewReceiver(t)
	tr := newTracer(t, recv.URL, nil)

	h := http.Header{}
	const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	h.Set("Traceparent", "00-"+clientTrace+"-"+clientSpan+"-01")
	ctx := tr.Continue(t.Context(), h)
	ctx, req := tr.Start(ctx, "POST /v1/sandboxes/{id}/exec", time.Time{}, slog.String("http.route", "POST /v1/sandboxes/{id}/exec"))
	ectx, exec := tr.Start(ctx, controller.SpanExec, time.Time{}, slog.String(controller.AttrSandbox, "sbx_1"))
	_, run := tr.Start(ectx, controller.SpanTierRun, time.Now().Add(-time.Second), slog.Int(controller.AttrExitCode, 3), slog.Bool("b", true), slog.Duration("d", time.Second))
	run.End(nil)
	exec.Set(slog.String(controller.AttrExec, "exe_1"))
	exec.End(rung.Errorf(rung.ErrLimit, "too many"))
	req.End(nil)
	req.End(nil) // a second End does nothing

	// A malformed traceparent starts a new trace.
	_, lone := tr.Start(tr.Continue(t.Context(), http.Header{"Traceparent": {"00-zz-yy-01"}}), "GET /x", time.Time{})
	lone.End(nil)

	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := recv.Spans()
	if len(spans) != 4 {
		t.Fatalf("got %d spans, want 4: %+v", len(spans), spans)
	}
	reqS, execS, runS, loneS := tracingtest.Named(spans, "POST /v1/sandboxes/{id}/exec"), tracingtest.Named(spans, controller.SpanExec),
		tracingtest.Named(spans, controller.SpanTierRun), tracingtest.Named(spans, "GET /x")
	if len(reqS) != 1 || len(execS) != 1 || len(runS) != 1 || len(loneS) != 1 {
		t.Fatalf("spans by name: %+v", spans)
	}
	if r := reqS[0]; r.TraceID != clientTrace || r.ParentID != clientSpan || r.Kind != "SPAN_KIND_SERVER" || r.Service != tracing.ServiceName {
		t.Errorf("request span = %+v; want trace %s, parent %s, kind server, service %s", r, clientTrace, clientSpan, tracing.ServiceName)
	}
	if e := execS[0]; e.ParentID != reqS[0].SpanID || e.TraceID != clientTrace || e.Kind != "SPAN_KIND_INTERNAL" {
		t.Errorf("exec span = %+v; want a child of the request span %s", e, reqS[0].SpanID)
	}
	if e := execS[0]; e.Str(controller.AttrSandbox) != "sbx_1" || e.Str(controller.AttrExec) != "exe_1" || e.Str("rung.error.code") != "limit_exceeded" || e.Error == "" {
		t.Errorf("exec span = %+v; want sandbox, exec id and the error", e)
	}
	if r := runS[0]; r.ParentID != execS[0].SpanID || r.Attrs[controller.AttrExitCode] != int64(3) || r.Attrs["b"] != true || r.Str("d") != "1s" {
		t.Errorf("tier span = %+v; want a child of the exec with typed attributes", r)
	}
	if r := runS[0]; r.End-r.Start < uint64(time.Second) {
		t.Errorf("tier span lasted %dns; it was started a second ago", r.End-r.Start)
	}
	if l := loneS[0]; l.ParentID != "" || l.TraceID == clientTrace {
		t.Errorf("span under a malformed traceparent = %+v; want a new root", l)
	}
}

// TestExportFailureLogged: a collector that refuses a batch costs that
// batch, logged once at warn, and no caller sees an error; the next batch
// goes through and the recovery is logged.
func TestExportFailureLogged(t *testing.T) {
	t.Parallel()
	recv := tracingtest.NewReceiver(t)
	var logs syncBuffer
	tr := newTracer(t, recv.URL, slog.New(slog.NewTextHandler(&logs, nil)))
	recv.FailNext(1)
	_, sp := tr.Start(t.Context(), "lost", time.Time{})
	sp.End(nil)
	if err := tr.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); recv.Refused() != 1 || !strings.Contains(out, `level=WARN msg="trace export failed: spans dropped"`) {
		t.Fatalf("after a refused batch: %d refused, log %s; want 1 and the failure at warn", recv.Refused(), out)
	}
	_, sp = tr.Start(t.Context(), "kept", time.Time{})
	sp.End(nil)
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if spans := recv.Spans(); len(spans) != 1 || spans[0].Name != "kept" {
		t.Errorf("received %+v; want the one span of the second batch", spans)
	}
	if out := logs.String(); !strings.Contains(out, "trace export works again") {
		t.Errorf("log = %s; want the recovery", out)
	}
}

// TestStuckCollector: a collector that never answers blocks neither the
// spans' callers, past the queue's bound, nor Shutdown, past its ctx.
func TestStuckCollector(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	tr := newTracer(t, srv.URL, nil)
	for range 10000 { // the queue holds 2048: the rest are dropped, not waited for
		_, sp := tr.Start(t.Context(), controller.SpanExec, time.Time{})
		sp.End(nil)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := tr.Shutdown(ctx); err == nil {
		t.Error("Shutdown with a collector that never answers returned nil before its ctx ended")
	}
}
