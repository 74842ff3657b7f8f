package main

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/controller"
	"rung.dev/rung/tracing"
	"rung.dev/rung/tracing/tracingtest"
)

// traceparentTransport sends a W3C traceparent header with every
// request, as an instrumented client does.
type traceparentTransport struct{ header string }

func (tp traceparentTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Traceparent", tp.header)
	return http.DefaultTransport.RoundTrip(r)
}

// The trace a test client's requests belong to.
const (
	clientTrace = "0af7651916cd43dd8448eb211c80319c"
	clientSpan  = "b7ad6b7169203331"
)

// TestTraces runs an isolate exec and a container exec, whose requests
// carry a client's traceparent, on a daemon whose spans go to a real
// OTLP/HTTP receiver, and checks the span tree: each request (a child of
// the client's span) -> its exec -> its tier run, the container's cold
// start under the container run, with the sandbox and exec ids.
func TestTraces(t *testing.T) {
	recv := tracingtest.NewReceiver(t)
	c, d, addr := startContainerDaemonWith(t, DaemonConfig{Tracing: tracing.Config{Endpoint: recv.URL, BatchTimeout: 20 * time.Millisecond}})
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	traced := client.New(addr, client.WithToken(d.Token), client.WithHTTPClient(&http.Client{
		Transport: traceparentTransport{"00-" + clientTrace + "-" + clientSpan + "-01"}}))
	runs := map[rung.Backend]rung.ExecID{}
	for _, b := range []rung.Backend{rung.BackendIsolate, rung.BackendContainer} {
		res, err := traced.Exec(ctx, string(sb.ID), client.ExecRequest{Command: "echo hi", Backend: b})
		if err != nil || res.ExitCode != 0 || res.Backend != b {
			t.Fatalf("exec in %s: %+v, %v", b, res, err)
		}
		runs[b] = res.ExecID
	}

	wctx, cancel := context.WithTimeout(ctx, time.Minute) // only catches spans that never come
	defer cancel()
	spans, err := recv.Wait(wctx, func(s []tracingtest.Span) bool {
		return len(tracingtest.Named(s, "POST /v1/sandboxes/{id}/exec")) == 2 && len(tracingtest.Named(s, controller.SpanContainerStart)) == 1 &&
			len(tracingtest.Named(s, "POST /v1/sandboxes")) == 1
	})
	if err != nil {
		t.Fatalf("spans so far %+v: %v", spans, err)
	}

	if cr := tracingtest.Named(spans, "POST /v1/sandboxes")[0]; cr.ParentID != "" || cr.TraceID == clientTrace || cr.Service != "rung" || cr.Attrs["http.response.status_code"] != int64(201) {
		t.Errorf("create request span = %+v; want a root span of service rung with status 201", cr)
	}
	for _, req := range tracingtest.Named(spans, "POST /v1/sandboxes/{id}/exec") {
		if req.TraceID != clientTrace || req.ParentID != clientSpan || req.Kind != "SPAN_KIND_SERVER" {
			t.Errorf("exec request span = %+v; want a server span, child of the client's %s", req, clientSpan)
		}
		want := map[string]any{"http.route": "POST /v1/sandboxes/{id}/exec", "http.request.method": "POST", "http.response.status_code": int64(200),
			controller.AttrSandbox: string(sb.ID), controller.AttrTenant: string(sb.Tenant)}
		for k, v := range want {
			if req.Attrs[k] != v {
				t.Errorf("exec request span: %s = %v, want %v", k, req.Attrs[k], v)
			}
		}
		execs := tracingtest.Children(spans, req)
		if len(execs) != 1 || execs[0].Name != controller.SpanExec {
			t.Errorf("children of the request span: %+v; want one %s", execs, controller.SpanExec)
			continue
		}
		ex := execs[0]
		b := rung.Backend(ex.Str(controller.AttrBackend))
		if id, ok := runs[b]; !ok || ex.Str(controller.AttrExec) != string(id) || ex.Str(controller.AttrSandbox) != string(sb.ID) ||
			ex.Attrs[controller.AttrExitCode] != int64(0) || ex.Str(controller.AttrExitReason) != "exit" || ex.Str(controller.AttrReasonClass) != "requested" {
			t.Errorf("exec span = %+v; want exec %v of sandbox %s, exit 0, class requested", ex, runs, sb.ID)
		}
		tiers := tracingtest.Children(spans, ex)
		if len(tiers) != 1 || tiers[0].Name != controller.SpanTierRun || tiers[0].Str(controller.AttrTier) != string(b) {
			t.Errorf("children of the %s exec span: %+v; want one %s in %s", b, tiers, controller.SpanTierRun, b)
			continue
		}
		starts := tracingtest.Children(spans, tiers[0])
		if b == rung.BackendIsolate && len(starts) != 0 {
			t.Errorf("isolate run has children %+v", starts)
		}
		if b != rung.BackendContainer {
			continue
		}
		if len(starts) != 1 || starts[0].Name != controller.SpanContainerStart {
			t.Errorf("children of the container run: %+v; want its cold start", starts)
			continue
		}
		st := starts[0]
		if st.Attrs[controller.AttrWarm] != false || st.Str(controller.AttrSandbox) != string(sb.ID) ||
			!strings.HasPrefix(st.Str(controller.AttrImageDigest), "sha256:") || !strings.HasSuffix(st.Str(controller.AttrImage), "@"+st.Str(controller.AttrImageDigest)) ||
			st.Str(controller.AttrRuntime) == "" || st.End <= st.Start {
			t.Errorf("container start span = %+v; want a cold start of sandbox %s with its image digest and runtime", st, sb.ID)
		}
	}
}

// TestTracesServe: `rung serve --otlp-endpoint` sends spans, and a
// graceful stop flushes the ones not yet sent (the batch timeout, 5 s,
// has not passed); a malformed endpoint stops the start with a clear
// error.
func TestTracesServe(t *testing.T) {
	bin := rungBinary(t)
	recv := tracingtest.NewReceiver(t)
	p := startServe(t, bin, t.TempDir(), "--otlp-endpoint", strings.TrimSuffix(recv.URL, "/v1/traces"))
	c := client.New(p.addr, client.WithToken(p.token))
	sb, err := c.Create(t.Context(), client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(t.Context(), string(sb.ID), client.ExecRequest{Command: "echo hi"})
	if err != nil {
		t.Fatal(err)
	}
	p.stop(t)
	spans := recv.Spans()
	ex := tracingtest.Named(spans, controller.SpanExec)
	if len(ex) != 1 || ex[0].Str(controller.AttrExec) != string(res.ExecID) || ex[0].Service != "rung" {
		t.Errorf("exec spans after a graceful stop: %+v; want exec %s from service rung", ex, res.ExecID)
	}

	// Checked before anything opens: no image build, no pool.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // only catches a daemon that starts anyway
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--addr", freeAddr(t), "--data", t.TempDir(), "--no-network", "--otlp-endpoint", "localhost:4318")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--otlp-endpoint") || !strings.Contains(string(out), "http://") {
		t.Errorf("rung serve --otlp-endpoint localhost:4318: %v\n%s\nwant an error naming the flag and the scheme it needs", err, out)
	}
}
