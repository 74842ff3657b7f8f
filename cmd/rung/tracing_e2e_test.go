package main

import (
	"cmp"
	"context"
	"net/http"
	"os/exec"
	"slices"
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

// TestTraces runs an isolate exec, a container exec and one that the
// isolate tier refuses at run time, whose requests carry a client's
// traceparent, on a daemon whose spans go to a real OTLP/HTTP receiver,
// and checks the span tree: each request (a child of the client's span)
// -> its exec -> its tier runs (two for the fall-through), the
// container's cold start under the container run that needed it, with
// the sandbox and exec ids.
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
	type want struct {
		backend rung.Backend
		class   string
		tiers   []string // the exec's tier runs, in order
		cold    bool     // its container run started the container
	}
	execs := []struct {
		req  client.ExecRequest
		want want
	}{
		{client.ExecRequest{Command: "echo hi", Backend: rung.BackendIsolate}, want{rung.BackendIsolate, "requested", []string{"isolate"}, false}},
		{client.ExecRequest{Command: "echo hi", Backend: rung.BackendContainer}, want{rung.BackendContainer, "requested", []string{"container"}, true}},
		// The check cannot see the path; the isolate tier refuses it
		// when it meets it, and the exec runs again in the container.
		{client.ExecRequest{Command: "p=/etc/os-release; cat $p >/dev/null; echo ok"}, want{rung.BackendContainer, "fallthrough", []string{"isolate", "container"}, false}},
	}
	byID := map[string]want{}
	for _, e := range execs {
		res, err := traced.Exec(ctx, string(sb.ID), e.req)
		if err != nil || res.ExitCode != 0 || res.Backend != e.want.backend {
			t.Fatalf("exec %q: %+v, %v", e.req.Command, res, err)
		}
		byID[string(res.ExecID)] = e.want
	}

	wctx, cancel := context.WithTimeout(ctx, time.Minute) // only catches spans that never come
	defer cancel()
	spans, err := recv.Wait(wctx, func(s []tracingtest.Span) bool {
		return len(tracingtest.Named(s, "POST /v1/sandboxes/{id}/exec")) == len(execs) && len(tracingtest.Named(s, controller.SpanTierRun)) == 4 &&
			len(tracingtest.Named(s, "POST /v1/sandboxes")) == 1
	})
	if err != nil {
		t.Fatalf("spans so far %+v: %v", spans, err)
	}

	if cr := tracingtest.Named(spans, "POST /v1/sandboxes")[0]; cr.ParentID != "" || cr.TraceID == clientTrace || cr.Service != "rung" || cr.Attrs["http.response.status_code"] != int64(201) {
		t.Errorf("create request span = %+v; want a root span of service rung with status 201", cr)
	}
	if n := len(tracingtest.Named(spans, controller.SpanContainerStart)); n != 1 {
		t.Errorf("%d container start spans, want 1", n)
	}
	for _, req := range tracingtest.Named(spans, "POST /v1/sandboxes/{id}/exec") {
		if req.TraceID != clientTrace || req.ParentID != clientSpan || req.Kind != "SPAN_KIND_SERVER" {
			t.Errorf("exec request span = %+v; want a server span, child of the client's %s", req, clientSpan)
		}
		attrs := map[string]any{"http.route": "POST /v1/sandboxes/{id}/exec", "http.request.method": "POST", "http.response.status_code": int64(200),
			controller.AttrSandbox: string(sb.ID), controller.AttrTenant: string(sb.Tenant)}
		for k, v := range attrs {
			if req.Attrs[k] != v {
				t.Errorf("exec request span: %s = %v, want %v", k, req.Attrs[k], v)
			}
		}
		children := tracingtest.Children(spans, req)
		if len(children) != 1 || children[0].Name != controller.SpanExec {
			t.Errorf("children of the request span: %+v; want one %s", children, controller.SpanExec)
			continue
		}
		ex := children[0]
		w, ok := byID[ex.Str(controller.AttrExec)]
		if !ok || ex.Str(controller.AttrSandbox) != string(sb.ID) || ex.Str(controller.AttrBackend) != string(w.backend) || ex.Str(controller.AttrReasonClass) != w.class ||
			ex.Attrs[controller.AttrExitCode] != int64(0) || ex.Str(controller.AttrExitReason) != "exit" || ex.Str(controller.AttrReason) == "" {
			t.Errorf("exec span = %+v; want one of the execs %v of sandbox %s, exit 0", ex, byID, sb.ID)
			continue
		}
		runs := tracingtest.Children(spans, ex)
		slices.SortFunc(runs, func(a, b tracingtest.Span) int { return cmp.Compare(a.Start, b.Start) })
		var tiers []string
		for _, r := range runs {
			tiers = append(tiers, r.Str(controller.AttrTier))
			if r.Name != controller.SpanTierRun {
				t.Errorf("child of the exec span: %+v; want %s", r, controller.SpanTierRun)
			}
		}
		if !slices.Equal(tiers, w.tiers) {
			t.Errorf("exec %s ran in tiers %v, want %v", ex.Str(controller.AttrExec), tiers, w.tiers)
			continue
		}
		if len(runs) == 2 && !strings.Contains(runs[0].Str(controller.AttrTierRefused), "/etc/os-release") {
			t.Errorf("refused isolate run = %+v; want why it stopped", runs[0])
		}
		starts := tracingtest.Children(spans, runs[len(runs)-1])
		if !w.cold {
			if len(starts) != 0 {
				t.Errorf("children of the run of exec %s: %+v; want none", ex.Str(controller.AttrExec), starts)
			}
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

// TestTracesWarm: a create that claims a warm spare has the warm start as
// its request span's child.
func TestTracesWarm(t *testing.T) {
	recv := tracingtest.NewReceiver(t)
	_, d, addr := startContainerDaemonWith(t, DaemonConfig{Warm: []controller.WarmSpec{{Image: "lite", Count: 1}},
		Tracing: tracing.Config{Endpoint: recv.URL, BatchTimeout: 20 * time.Millisecond}})
	waitWarm(t, d)
	traced := client.New(addr, client.WithToken(d.Token), client.WithHTTPClient(&http.Client{
		Transport: traceparentTransport{"00-" + clientTrace + "-" + clientSpan + "-01"}}))
	sb, err := traced.Create(t.Context(), client.CreateRequest{})
	if err != nil || sb.State != rung.StateRunning {
		t.Fatalf("create: %+v, %v; want a running sandbox (a claimed spare)", sb, err)
	}
	wctx, cancel := context.WithTimeout(t.Context(), time.Minute) // only catches spans that never come
	defer cancel()
	spans, err := recv.Wait(wctx, func(s []tracingtest.Span) bool { return len(tracingtest.Named(s, "POST /v1/sandboxes")) == 1 })
	if err != nil {
		t.Fatalf("spans so far %+v: %v", spans, err)
	}
	req := tracingtest.Named(spans, "POST /v1/sandboxes")[0]
	starts := tracingtest.Children(spans, req)
	if req.ParentID != clientSpan || len(starts) != 1 || starts[0].Name != controller.SpanContainerStart {
		t.Fatalf("create request span %+v with children %+v; want the client's child, with the warm start", req, starts)
	}
	if st := starts[0]; st.Attrs[controller.AttrWarm] != true || st.Str(controller.AttrSandbox) != string(sb.ID) || !strings.HasPrefix(st.Str(controller.AttrImageDigest), "sha256:") {
		t.Errorf("warm start span = %+v; want warm, sandbox %s, the image's digest", st, sb.ID)
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
