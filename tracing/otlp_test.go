package tracing

import (
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"rung.dev/rung"
)

// TestEncodeRequest decodes the hand-written request with OTLP's
// generated messages and compares it, field by field, with the request
// those messages describe: every kind of attribute value, events, links,
// both statuses, dropped counts, flags, and spans grouped by resource
// and scope.
func TestEncodeRequest(t *testing.T) {
	t.Parallel()
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	ts, err := trace.ParseTraceState("k=v")
	if err != nil {
		t.Fatal(err)
	}
	sc := func(sid byte, remote bool) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{sid}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: remote})
	}
	res := resource.NewWithAttributes("https://schema/1", attribute.String("service.name", "rung"))
	other := resource.NewSchemaless(attribute.String("service.name", "other"))
	scope := instrumentation.Scope{Name: "rung.dev/rung", Version: "1"}
	start := time.Unix(1700000000, 5)
	end := start.Add(time.Second)
	attrs := []attribute.KeyValue{
		attribute.String("s", "x"), attribute.Bool("b", true), attribute.Int64("i", -3), attribute.Float64("f", 1.5),
		attribute.StringSlice("ss", []string{"a", "b"}), attribute.BoolSlice("bs", []bool{false}),
		attribute.Int64Slice("is", []int64{math.MaxInt64}), attribute.Float64Slice("fs", []float64{-0.5}),
		{Key: "empty"},
	}
	spans := tracetest.SpanStubs{
		{
			Name: "POST /x", SpanContext: sc(2, false), Parent: sc(1, true), SpanKind: trace.SpanKindServer,
			StartTime: start, EndTime: end, Attributes: attrs, DroppedAttributes: 2,
			Events:        []sdktrace.Event{{Name: "ev", Time: start, Attributes: []attribute.KeyValue{attribute.Int("n", 1)}, DroppedAttributeCount: 1}},
			DroppedEvents: 3,
			Links:         []sdktrace.Link{{SpanContext: sc(9, true), Attributes: []attribute.KeyValue{attribute.String("l", "y")}, DroppedAttributeCount: 4}},
			DroppedLinks:  5,
			Status:        sdktrace.Status{Code: codes.Error, Description: "boom"},
			Resource:      res, InstrumentationScope: scope,
		},
		{
			Name: "rung.exec", SpanContext: sc(3, false), Parent: sc(2, false), SpanKind: trace.SpanKindInternal,
			StartTime: start, EndTime: end, Status: sdktrace.Status{Code: codes.Ok},
			Resource: res, InstrumentationScope: scope,
		},
		{Name: "root", SpanContext: sc(4, false), StartTime: start, EndTime: end, Resource: other, InstrumentationScope: scope},
	}
	var got coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(encodeRequest(spans.Snapshots()), &got); err != nil {
		t.Fatalf("the request does not decode: %v", err)
	}

	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	kv := func(k string, v *commonpb.AnyValue) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: v} }
	arr := func(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
	}
	boolV := func(b bool) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}}
	}
	intV := func(i int64) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}
	}
	dblV := func(f float64) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
	}
	id := func(b byte) []byte { return []byte{b, 0, 0, 0, 0, 0, 0, 0} }
	pbScope := &commonpb.InstrumentationScope{Name: "rung.dev/rung", Version: "1"}
	startNs, endNs := uint64(start.UnixNano()), uint64(end.UnixNano())
	const sampledLocal = 0x101 // sampled, HAS_IS_REMOTE
	want := &coltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
		{
			Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", str("rung"))}},
			SchemaUrl: "https://schema/1",
			ScopeSpans: []*tracepb.ScopeSpans{{Scope: pbScope, Spans: []*tracepb.Span{
				{
					TraceId: tid[:], SpanId: id(2), ParentSpanId: id(1), TraceState: "k=v", Flags: sampledLocal | 0x200,
					Name: "POST /x", Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: startNs, EndTimeUnixNano: endNs,
					Attributes: []*commonpb.KeyValue{
						kv("s", str("x")), kv("b", boolV(true)), kv("i", intV(-3)), kv("f", dblV(1.5)),
						kv("ss", arr(str("a"), str("b"))), kv("bs", arr(boolV(false))), kv("is", arr(intV(math.MaxInt64))),
						kv("fs", arr(dblV(-0.5))), kv("empty", &commonpb.AnyValue{}),
					},
					DroppedAttributesCount: 2,
					Events:                 []*tracepb.Span_Event{{TimeUnixNano: startNs, Name: "ev", Attributes: []*commonpb.KeyValue{kv("n", intV(1))}, DroppedAttributesCount: 1}},
					DroppedEventsCount:     3,
					Links:                  []*tracepb.Span_Link{{TraceId: tid[:], SpanId: id(9), TraceState: "k=v", Attributes: []*commonpb.KeyValue{kv("l", str("y"))}, DroppedAttributesCount: 4, Flags: sampledLocal | 0x200}},
					DroppedLinksCount:      5,
					Status:                 &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "boom"},
				},
				{
					TraceId: tid[:], SpanId: id(3), ParentSpanId: id(2), TraceState: "k=v", Flags: sampledLocal,
					Name: "rung.exec", Kind: tracepb.Span_SPAN_KIND_INTERNAL, StartTimeUnixNano: startNs, EndTimeUnixNano: endNs,
					Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK},
				},
			}}},
		},
		{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", str("other"))}},
			ScopeSpans: []*tracepb.ScopeSpans{{Scope: pbScope, Spans: []*tracepb.Span{{
				TraceId: tid[:], SpanId: id(4), TraceState: "k=v", Flags: sampledLocal,
				Name: "root", StartTimeUnixNano: startNs, EndTimeUnixNano: endNs,
			}}}},
		},
	}}
	if !proto.Equal(&got, want) {
		t.Errorf("decoded request differs from the expected one:\ngot  %v\nwant %v", &got, want)
	}
}

// TestExportRequest checks the HTTP side against a server that records
// what it gets: POST, the protobuf content type, the headers variable's
// headers (percent-decoded), and a partial success logged as a failure.
func TestExportRequest(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, ctype, auth, team string
		body                      []byte
	}
	got := make(chan seen, 1)
	// ExportTraceServiceResponse{partial_success{rejected_spans: 1, error_message: "no"}}
	answer := []byte{0x0a, 0x06, 0x08, 0x01, 0x12, 0x02, 'n', 'o'}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), r.Header.Get("X-Team"), body}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(answer)
	}))
	defer srv.Close()
	env := map[string]string{EnvHeaders: "Authorization=Bearer%20abc, X-Team = a%2Cb", EnvTimeout: "5000"}
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	e, err := newExporter(srv.URL+"/v1/traces", func(k string) string { return env[k] }, t.Context(), log)
	if err != nil {
		t.Fatal(err)
	}
	if e.timeout != 5*time.Second {
		t.Errorf("timeout = %v; want 5s from %s", e.timeout, EnvTimeout)
	}
	stub := tracetest.SpanStub{Name: "x", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}})}
	if err := e.ExportSpans(t.Context(), []sdktrace.ReadOnlySpan{stub.Snapshot()}); err != nil {
		t.Fatalf("ExportSpans = %v; failures are logged, not returned", err)
	}
	s := <-got
	if s.method != http.MethodPost || s.ctype != "application/x-protobuf" || s.auth != "Bearer abc" || s.team != "a,b" {
		t.Errorf("request: %s, Content-Type %q, Authorization %q, X-Team %q", s.method, s.ctype, s.auth, s.team)
	}
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(s.body, &req); err != nil || len(req.ResourceSpans) != 1 || req.ResourceSpans[0].ScopeSpans[0].Spans[0].Name != "x" {
		t.Errorf("body = %v, %v; want the one span", &req, err)
	}
	if out := logs.String(); !strings.Contains(out, "collector rejected 1 spans: no") {
		t.Errorf("log = %s; want the partial success's rejection", out)
	}
}

func TestExporterEnvInvalid(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{
		{EnvHeaders: "novalue"},
		{EnvTracesHeaders: "=v"},
		{EnvHeaders: "k=%zz"},
		{EnvHeaders: "a b=c"},
		{EnvTracesHeaders: "k=x%0D%0AEvil: 1"},
		{EnvTimeout: "soon"},
		{EnvTracesTimeout: "0"},
		{EnvTimeout: "-5"},
	} {
		_, err := New(t.Context(), Config{Endpoint: "http://c:4318", Getenv: func(k string) string { return env[k] }})
		var name string
		for k := range env {
			name = k
		}
		if !errors.Is(err, rung.ErrInvalid) || !strings.Contains(err.Error(), name) {
			t.Errorf("New with %v = %v; want an invalid_argument error naming %s", env, err, name)
		}
	}
}
