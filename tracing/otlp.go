package tracing

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"

	"rung.dev/rung"
)

// rung's own OTLP/HTTP exporter. OpenTelemetry's (otlptracehttp) links
// the generated OTLP messages, whose package also holds the collector's
// gRPC stubs: grpc and grpc-gateway, 13 MB of binary and about 7 ms of
// package initialisation at every start of the one rung binary, the
// in-container agent's included. This one writes the
// ExportTraceServiceRequest with protowire, field by field, so nothing
// registers a descriptor at init.

// The exporter's environment variables besides the endpoint, as
// OpenTelemetry's specification defines them; the traces one wins.
const (
	EnvTracesHeaders = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	EnvHeaders       = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvTracesTimeout = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
	EnvTimeout       = "OTEL_EXPORTER_OTLP_TIMEOUT"
)

// DefaultExportTimeout bounds one export request when neither timeout
// variable is set (the specification's default).
const DefaultExportTimeout = 10 * time.Second

// Limits on what the exporter reads back from a collector.
const (
	maxResponse   = 64 << 10 // bytes of a response body read
	maxErrorShown = 200      // bytes of an error body put in the log
)

// Field numbers of OTLP's messages (opentelemetry-proto, collector/trace/v1,
// trace/v1, resource/v1 and common/v1).
const (
	fRequestResourceSpans = 1 // ExportTraceServiceRequest.resource_spans

	fResourceSpansResource   = 1
	fResourceSpansScopeSpans = 2
	fResourceSpansSchemaURL  = 3

	fResourceAttributes = 1

	fScopeSpansScope     = 1
	fScopeSpansSpans     = 2
	fScopeSpansSchemaURL = 3

	fScopeName       = 1
	fScopeVersion    = 2
	fScopeAttributes = 3

	fSpanTraceID       = 1
	fSpanSpanID        = 2
	fSpanTraceState    = 3
	fSpanParentSpanID  = 4
	fSpanName          = 5
	fSpanKind          = 6
	fSpanStart         = 7
	fSpanEnd           = 8
	fSpanAttributes    = 9
	fSpanDroppedAttrs  = 10
	fSpanEvents        = 11
	fSpanDroppedEvents = 12
	fSpanLinks         = 13
	fSpanDroppedLinks  = 14
	fSpanStatus        = 15
	fSpanFlags         = 16

	fEventTime         = 1
	fEventName         = 2
	fEventAttributes   = 3
	fEventDroppedAttrs = 4

	fLinkTraceID      = 1
	fLinkSpanID       = 2
	fLinkTraceState   = 3
	fLinkAttributes   = 4
	fLinkDroppedAttrs = 5
	fLinkFlags        = 6

	fStatusMessage = 2
	fStatusCode    = 3

	fKeyValueKey   = 1
	fKeyValueValue = 2

	fAnyString = 1
	fAnyBool   = 2
	fAnyInt    = 3
	fAnyDouble = 4
	fAnyArray  = 5
	fAnyKVList = 6
	fAnyBytes  = 7

	fArrayValues  = 1 // ArrayValue.values
	fKVListValues = 1 // KeyValueList.values

	fResponsePartialSuccess = 1 // ExportTraceServiceResponse.partial_success
	fPartialRejectedSpans   = 1
	fPartialErrorMessage    = 2
)

// OTLP's Status.StatusCode values (OpenTelemetry's codes number them
// differently) and SpanFlags bits.
const (
	statusOK    = 1
	statusError = 2

	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// exporter is an sdktrace.SpanExporter sending OTLP/HTTP protobuf. It
// logs a failed batch with rung's logger, once, and when exports work
// again, and reports success to the batch processor, which would only
// hand the error to OpenTelemetry's global handler (a second line, on
// stderr). A failed batch is dropped, not retried. Its exports end when
// life does (Shutdown's bound).
type exporter struct {
	client   *http.Client
	endpoint string
	headers  http.Header
	timeout  time.Duration
	life     context.Context
	log      *slog.Logger
	failing  atomic.Bool // the last export failed
	stopped  atomic.Bool
}

var _ sdktrace.SpanExporter = (*exporter)(nil)

func newExporter(endpoint string, getenv func(string) string, life context.Context, log *slog.Logger) (*exporter, error) {
	headers, err := exportHeaders(getenv)
	if err != nil {
		return nil, err
	}
	timeout, err := exportTimeout(getenv)
	if err != nil {
		return nil, err
	}
	return &exporter{
		client:   &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		endpoint: endpoint, headers: headers, timeout: timeout, life: life, log: log,
	}, nil
}

// exportHeaders parses the headers variable: key=value pairs separated
// by commas, values percent-encoded (W3C Baggage's format).
func exportHeaders(getenv func(string) string) (http.Header, error) {
	from, v := EnvTracesHeaders, getenv(EnvTracesHeaders)
	if v == "" {
		from, v = EnvHeaders, getenv(EnvHeaders)
	}
	h := http.Header{}
	for pair := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || !token(k) {
			return nil, rung.Errorf(rung.ErrInvalid, "%s: %q is not key=value with a header name as key", from, pair)
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return nil, rung.Errorf(rung.ErrInvalid, "%s: header %s: %v", from, k, err)
		}
		if strings.ContainsAny(dec, "\r\n\x00") {
			return nil, rung.Errorf(rung.ErrInvalid, "%s: header %s: a line break or NUL in its value", from, k)
		}
		h.Add(k, dec)
	}
	return h, nil
}

// token reports whether s is an HTTP header name (RFC 9110's token).
func token(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// exportTimeout parses the timeout variable, in milliseconds.
func exportTimeout(getenv func(string) string) (time.Duration, error) {
	from, v := EnvTracesTimeout, getenv(EnvTracesTimeout)
	if v == "" {
		from, v = EnvTimeout, getenv(EnvTimeout)
	}
	if v == "" {
		return DefaultExportTimeout, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms <= 0 || ms > math.MaxInt64/int64(time.Millisecond) {
		return 0, rung.Errorf(rung.ErrInvalid, "%s %q: want a positive number of milliseconds", from, v)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// ExportSpans sends spans as one request; see [exporter].
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 || e.stopped.Load() {
		return nil
	}
	err := e.send(ctx, encodeRequest(spans))
	switch {
	case err != nil:
		e.failing.Store(true)
		e.log.Warn("trace export failed: spans dropped", "endpoint", e.endpoint, "spans", len(spans), "err", err)
	case e.failing.Swap(false):
		e.log.Info("trace export works again", "endpoint", e.endpoint)
	}
	return nil
}

// Shutdown stops further exports; the batch processor has sent its last
// batch by the time it calls this.
func (e *exporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	e.client.CloseIdleConnections()
	return nil
}

func (e *exporter) send(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	stop := context.AfterFunc(e.life, cancel)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, vs := range e.headers {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("collector answered %s%s", resp.Status, errorText(resp.Header.Get("Content-Type"), data))
	}
	if err != nil {
		return nil // the spans were accepted; the rest of the answer is not needed
	}
	if n, msg := partialSuccess(data); n > 0 {
		return fmt.Errorf("collector rejected %d spans: %s", n, msg)
	}
	return nil
}

// errorText is ": " and the start of a collector's error body when it is
// text, "" otherwise (OTLP's error bodies are protobuf Status messages,
// not worth decoding for a log line).
func errorText(contentType string, data []byte) string {
	if !strings.HasPrefix(contentType, "text/") && !strings.HasPrefix(contentType, "application/json") {
		return ""
	}
	s := strings.ToValidUTF8(strings.TrimSpace(string(data[:min(len(data), maxErrorShown)])), "?")
	if s == "" {
		return ""
	}
	return ": " + s
}

// partialSuccess reads an ExportTraceServiceResponse: how many spans the
// collector rejected, and why. A body that does not parse counts as full
// success (the status said so).
func partialSuccess(b []byte) (rejected int64, msg string) {
	ps, ok := field(b, fResponsePartialSuccess, protowire.BytesType)
	if !ok {
		return 0, ""
	}
	if v, ok := field(ps, fPartialRejectedSpans, protowire.VarintType); ok {
		n, _ := protowire.ConsumeVarint(v)
		rejected = int64(n)
	}
	if v, ok := field(ps, fPartialErrorMessage, protowire.BytesType); ok {
		msg = strings.ToValidUTF8(string(v[:min(len(v), maxErrorShown)]), "?")
	}
	return rejected, msg
}

// field returns the last occurrence of field num of type typ in message
// b: a bytes field's contents, a varint's encoding; false if absent or b
// is malformed.
func field(b []byte, num protowire.Number, typ protowire.Type) ([]byte, bool) {
	var found []byte
	ok := false
	for len(b) > 0 {
		n, t, tl := protowire.ConsumeTag(b)
		if tl < 0 {
			return nil, false
		}
		vl := protowire.ConsumeFieldValue(n, t, b[tl:])
		if vl < 0 {
			return nil, false
		}
		if n == num && t == typ {
			v := b[tl : tl+vl]
			if t == protowire.BytesType {
				var bl int
				v, bl = protowire.ConsumeBytes(v)
				if bl < 0 {
					return nil, false
				}
			}
			found, ok = v, true
		}
		b = b[tl+vl:]
	}
	return found, ok
}

// encodeRequest writes spans as an ExportTraceServiceRequest: one
// ResourceSpans per resource, one ScopeSpans per instrumentation scope
// within it, spans in the order given.
func encodeRequest(spans []sdktrace.ReadOnlySpan) []byte {
	type group struct {
		res    *resource.Resource
		scopes []instrumentation.Scope
		spans  [][]sdktrace.ReadOnlySpan // by scope
	}
	var groups []*group
	for _, s := range spans {
		var g *group
		for _, c := range groups {
			if c.res == s.Resource() {
				g = c
				break
			}
		}
		if g == nil {
			g = &group{res: s.Resource()}
			groups = append(groups, g)
		}
		i := 0
		for i < len(g.scopes) && !sameScope(g.scopes[i], s.InstrumentationScope()) {
			i++
		}
		if i == len(g.scopes) {
			g.scopes = append(g.scopes, s.InstrumentationScope())
			g.spans = append(g.spans, nil)
		}
		g.spans[i] = append(g.spans[i], s)
	}
	b := make([]byte, 0, 512*len(spans))
	for _, g := range groups {
		b = appendMessage(b, fRequestResourceSpans, func(b []byte) []byte {
			if g.res != nil {
				b = appendMessage(b, fResourceSpansResource, func(b []byte) []byte {
					return appendAttributes(b, fResourceAttributes, g.res.Attributes())
				})
			}
			for i, sc := range g.scopes {
				b = appendMessage(b, fResourceSpansScopeSpans, func(b []byte) []byte {
					b = appendMessage(b, fScopeSpansScope, func(b []byte) []byte {
						b = appendString(b, fScopeName, sc.Name)
						b = appendString(b, fScopeVersion, sc.Version)
						return appendAttributes(b, fScopeAttributes, sc.Attributes.ToSlice())
					})
					for _, s := range g.spans[i] {
						b = appendMessage(b, fScopeSpansSpans, func(b []byte) []byte { return appendSpan(b, s) })
					}
					return appendString(b, fScopeSpansSchemaURL, sc.SchemaURL)
				})
			}
			if g.res != nil {
				b = appendString(b, fResourceSpansSchemaURL, g.res.SchemaURL())
			}
			return b
		})
	}
	return b
}

func sameScope(a, b instrumentation.Scope) bool {
	return a.Name == b.Name && a.Version == b.Version && a.SchemaURL == b.SchemaURL && a.Attributes.Equals(&b.Attributes)
}

func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, fSpanTraceID, tid[:])
	b = appendBytes(b, fSpanSpanID, sid[:])
	b = appendString(b, fSpanTraceState, sc.TraceState().String())
	flags := uint32(sc.TraceFlags()) | flagHasIsRemote
	if p := s.Parent(); p.IsValid() {
		psid := p.SpanID()
		b = appendBytes(b, fSpanParentSpanID, psid[:])
		if p.IsRemote() {
			flags |= flagIsRemote
		}
	}
	b = appendString(b, fSpanName, s.Name())
	if k := s.SpanKind(); k >= trace.SpanKindInternal && k <= trace.SpanKindConsumer {
		// OTLP numbers the kinds as OpenTelemetry's API does.
		b = protowire.AppendTag(b, fSpanKind, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(k))
	}
	b = appendTime(b, fSpanStart, s.StartTime())
	b = appendTime(b, fSpanEnd, s.EndTime())
	b = appendAttributes(b, fSpanAttributes, s.Attributes())
	b = appendCount(b, fSpanDroppedAttrs, s.DroppedAttributes())
	for _, ev := range s.Events() {
		b = appendMessage(b, fSpanEvents, func(b []byte) []byte {
			b = appendTime(b, fEventTime, ev.Time)
			b = appendString(b, fEventName, ev.Name)
			b = appendAttributes(b, fEventAttributes, ev.Attributes)
			return appendCount(b, fEventDroppedAttrs, ev.DroppedAttributeCount)
		})
	}
	b = appendCount(b, fSpanDroppedEvents, s.DroppedEvents())
	for _, l := range s.Links() {
		b = appendMessage(b, fSpanLinks, func(b []byte) []byte {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b = appendBytes(b, fLinkTraceID, ltid[:])
			b = appendBytes(b, fLinkSpanID, lsid[:])
			b = appendString(b, fLinkTraceState, l.SpanContext.TraceState().String())
			b = appendAttributes(b, fLinkAttributes, l.Attributes)
			b = appendCount(b, fLinkDroppedAttrs, l.DroppedAttributeCount)
			lflags := uint32(l.SpanContext.TraceFlags()) | flagHasIsRemote
			if l.SpanContext.IsRemote() {
				lflags |= flagIsRemote
			}
			b = protowire.AppendTag(b, fLinkFlags, protowire.Fixed32Type)
			return protowire.AppendFixed32(b, lflags)
		})
	}
	b = appendCount(b, fSpanDroppedLinks, s.DroppedLinks())
	if st := s.Status(); st.Code != codes.Unset {
		b = appendMessage(b, fSpanStatus, func(b []byte) []byte {
			code := uint64(statusOK)
			if st.Code == codes.Error {
				code = statusError
				b = appendString(b, fStatusMessage, st.Description)
			}
			b = protowire.AppendTag(b, fStatusCode, protowire.VarintType)
			return protowire.AppendVarint(b, code)
		})
	}
	b = protowire.AppendTag(b, fSpanFlags, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, flags)
}

// appendAttributes writes kvs as repeated KeyValue field num.
func appendAttributes(b []byte, num protowire.Number, kvs []attribute.KeyValue) []byte {
	for _, kv := range kvs {
		b = appendMessage(b, num, func(b []byte) []byte {
			b = appendString(b, fKeyValueKey, string(kv.Key))
			return appendMessage(b, fKeyValueValue, func(b []byte) []byte { return appendValue(b, kv.Value) })
		})
	}
	return b
}

// appendValue writes v as an AnyValue's contents; an EMPTY value is an
// AnyValue with none of its fields set, as OTLP represents it.
func appendValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		b = protowire.AppendTag(b, fAnyBool, protowire.VarintType)
		return protowire.AppendVarint(b, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		b = protowire.AppendTag(b, fAnyInt, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = protowire.AppendTag(b, fAnyDouble, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = protowire.AppendTag(b, fAnyString, protowire.BytesType)
		return protowire.AppendString(b, v.AsString())
	case attribute.BYTESLICE:
		b = protowire.AppendTag(b, fAnyBytes, protowire.BytesType)
		return protowire.AppendBytes(b, v.AsByteSlice())
	case attribute.BOOLSLICE, attribute.INT64SLICE, attribute.FLOAT64SLICE, attribute.STRINGSLICE, attribute.SLICE:
		return appendMessage(b, fAnyArray, func(b []byte) []byte {
			for _, e := range elements(v) {
				b = appendMessage(b, fArrayValues, func(b []byte) []byte { return appendValue(b, e) })
			}
			return b
		})
	case attribute.MAP:
		return appendMessage(b, fAnyKVList, func(b []byte) []byte {
			return appendAttributes(b, fKVListValues, v.AsMap())
		})
	}
	return b
}

// elements returns an array value's elements as Values.
func elements(v attribute.Value) []attribute.Value {
	var out []attribute.Value
	switch v.Type() {
	case attribute.BOOLSLICE:
		for _, x := range v.AsBoolSlice() {
			out = append(out, attribute.BoolValue(x))
		}
	case attribute.INT64SLICE:
		for _, x := range v.AsInt64Slice() {
			out = append(out, attribute.Int64Value(x))
		}
	case attribute.FLOAT64SLICE:
		for _, x := range v.AsFloat64Slice() {
			out = append(out, attribute.Float64Value(x))
		}
	case attribute.STRINGSLICE:
		for _, x := range v.AsStringSlice() {
			out = append(out, attribute.StringValue(x))
		}
	case attribute.SLICE:
		out = v.AsSlice()
	}
	return out
}

// appendMessage writes field num holding the message body writes. The
// body is written in place and moved up to make room for its length.
func appendMessage(b []byte, num protowire.Number, body func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	start := len(b)
	b = body(b)
	n := len(b) - start
	sz := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, sz)...)
	copy(b[start+sz:], b[start:start+n])
	protowire.AppendVarint(b[start:start], uint64(n))
	return b
}

// appendString writes a string field, omitted when empty (proto3).
func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// appendTime writes t as fixed64 Unix nanoseconds, omitted when zero.
func appendTime(b []byte, num protowire.Number, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, uint64(t.UnixNano()))
}

// appendCount writes a uint32 count, omitted when zero or negative.
func appendCount(b []byte, num protowire.Number, n int) []byte {
	if n <= 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(min(n, math.MaxUint32)))
}
