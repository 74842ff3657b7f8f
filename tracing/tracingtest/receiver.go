// Package tracingtest is a real OTLP/HTTP traces receiver for tests: an
// httptest server that decodes each ExportTraceServiceRequest (protobuf,
// optionally gzip-compressed) as a collector does and keeps its spans,
// so a test can run rung with tracing on and check the spans it sent.
package tracingtest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, in the terms a test checks. IDs are hex;
// ParentID is "" for a root span.
type Span struct {
	TraceID, SpanID, ParentID string
	Name                      string
	Kind                      string // "SPAN_KIND_SERVER", "SPAN_KIND_INTERNAL", ...
	// Attrs holds the span's attributes: string, int64, bool or float64
	// values (arrays and maps as their text).
	Attrs map[string]any
	// Service is the service.name of the resource the span came with.
	Service string
	// Error is the status message of a span whose status is an error,
	// else "".
	Error      string
	Start, End uint64 // Unix nanoseconds
}

// Str returns attribute key as a string, "" when absent or not one.
func (s Span) Str(key string) string {
	v, _ := s.Attrs[key].(string)
	return v
}

// Receiver receives traces at URL until the test ends. It is safe for
// concurrent use.
type Receiver struct {
	// URL is the traces endpoint (…/v1/traces).
	URL string
	srv *httptest.Server

	mu      sync.Mutex // guards the fields below
	spans   []Span
	more    chan struct{} // closed, and replaced, when spans arrive
	fail    int           // answer the next fail requests with 503
	refused int           // requests answered with an error
}

// NewReceiver starts a receiver; it stops when the test ends.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{more: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	r.URL = r.srv.URL + "/v1/traces"
	return r
}

// FailNext makes the receiver answer the next n export requests with
// 400 Bad Request, which the exporter does not retry: the batch is lost.
func (r *Receiver) FailNext(n int) {
	r.mu.Lock()
	r.fail = n
	r.mu.Unlock()
}

// Refused returns how many requests were answered with an error.
func (r *Receiver) Refused() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if err := r.receive(req); err != nil {
		r.mu.Lock()
		r.refused++
		r.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Write(b)
}

func (r *Receiver) receive(req *http.Request) error {
	r.mu.Lock()
	failing := r.fail > 0
	if failing {
		r.fail--
	}
	r.mu.Unlock()
	switch {
	case failing:
		return fmt.Errorf("failing as asked")
	case req.Method != http.MethodPost || req.URL.Path != "/v1/traces":
		return fmt.Errorf("%s %s: want POST /v1/traces", req.Method, req.URL.Path)
	case req.Header.Get("Content-Type") != "application/x-protobuf":
		return fmt.Errorf("content type %q: want application/x-protobuf", req.Header.Get("Content-Type"))
	}
	body := io.Reader(http.MaxBytesReader(nil, req.Body, 64<<20))
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			return err
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	var msg coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		return fmt.Errorf("decode ExportTraceServiceRequest: %w", err)
	}
	var got []Span
	for _, rs := range msg.GetResourceSpans() {
		service, _ := attrs(rs.GetResource().GetAttributes())["service.name"].(string)
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					Name: s.GetName(), Kind: s.GetKind().String(), Attrs: attrs(s.GetAttributes()), Service: service,
					Start: s.GetStartTimeUnixNano(), End: s.GetEndTimeUnixNano()}
				if p := s.GetParentSpanId(); len(p) > 0 {
					sp.ParentID = hex.EncodeToString(p)
				}
				if st := s.GetStatus(); strings.HasSuffix(st.GetCode().String(), "ERROR") {
					sp.Error = st.GetMessage()
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	close(r.more)
	r.more = make(chan struct{})
	r.mu.Unlock()
	return nil
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = x.IntValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = x.BoolValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = x.DoubleValue
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}

// Spans returns the spans received so far, in the order they came.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// Wait waits until the spans received so far satisfy done, and returns
// them; or returns them with ctx's error. It waits on arrivals, never
// polls.
func (r *Receiver) Wait(ctx context.Context, done func([]Span) bool) ([]Span, error) {
	for {
		r.mu.Lock()
		spans, more := slices.Clone(r.spans), r.more
		r.mu.Unlock()
		if done(spans) {
			return spans, nil
		}
		select {
		case <-more:
		case <-ctx.Done():
			return spans, ctx.Err()
		}
	}
}

// Named returns the spans called name.
func Named(spans []Span, name string) []Span {
	var out []Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Children returns the spans whose parent is parent.
func Children(spans []Span, parent Span) []Span {
	var out []Span
	for _, s := range spans {
		if s.ParentID == parent.SpanID && s.TraceID == parent.TraceID {
			out = append(out, s)
		}
	}
	return out
}
