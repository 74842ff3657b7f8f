// Package tracing exports rung's traces to an OpenTelemetry collector
// over OTLP/HTTP. It is the one importer of OpenTelemetry's modules: the
// controller and the API start spans through interfaces of their own
// ([controller.Tracer], and api.Tracer), which [Tracer] implements, and
// nothing else in rung sees an OpenTelemetry type. Tracing is off unless
// an endpoint is configured ([Config].Endpoint, `rung serve
// --otlp-endpoint`, or the standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// and OTEL_EXPORTER_OTLP_ENDPOINT variables).
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

// ServiceName is the service.name of rung's spans, unless
// OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names another.
const ServiceName = "rung"

// The environment variables that configure the endpoint when
// [Config].Endpoint is empty, as OpenTelemetry's specification defines
// them: the traces one is used as it is, the other is a base URL to which
// /v1/traces is added.
const (
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
)

// Config configures a [Tracer]. The zero value, with neither variable
// set, is tracing off.
type Config struct {
	// Endpoint is the collector's OTLP/HTTP traces URL
	// (http://collector:4318/v1/traces); a URL without a path gets
	// /v1/traces. "" takes EnvTracesEndpoint, then EnvEndpoint; with none
	// of the three, tracing is off. The headers and timeout variables
	// (EnvTracesHeaders, EnvHeaders, EnvTracesTimeout, EnvTimeout) apply;
	// the certificate and compression ones do not (the system's roots
	// verify https, and requests are not compressed).
	Endpoint string
	// BatchTimeout is how long the batch span processor waits to fill a
	// batch before it sends what it has; default 5 s (the SDK's). Tests
	// shorten it.
	BatchTimeout time.Duration
	// Logger gets failed exports, at warn; nil discards.
	Logger *slog.Logger
	// Getenv reads the environment; nil is os.Getenv. Tests set it.
	Getenv func(string) string
}

// Tracer starts spans and exports them in batches from a goroutine of
// its own, which [Tracer.Shutdown] stops. A full queue (2048 spans, the
// SDK's default) drops spans rather than block whoever starts them, and
// a failed export is logged, never returned to them. It is safe for
// concurrent use.
type Tracer struct {
	tp       *sdktrace.TracerProvider
	tr       trace.Tracer
	prop     propagation.TraceContext
	endpoint string
	cancel   context.CancelFunc // ends the exports in flight: Shutdown's bound
}

// Tracer is also an api.Tracer (Continue); cmd/rung's wiring checks
// that, as package tracing does not import api.
var _ controller.Tracer = (*Tracer)(nil)

// New returns a Tracer exporting to cfg's endpoint, or nil and no error
// when none is configured (tracing off: leave the controller's and the
// API's Tracer nil then, not a nil *Tracer). A malformed endpoint, or one
// that is not http or https, or a malformed headers or timeout variable,
// is an ErrInvalid error naming where it came from. No connection is made here: an unreachable collector shows as
// failed exports in the log.
func New(ctx context.Context, cfg Config) (*Tracer, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	endpoint, err := Endpoint(cfg.Endpoint, getenv)
	if err != nil || endpoint == "" {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	exp, err := newExporter(endpoint, getenv, life, log)
	if err != nil {
		cancel()
		return nil, err
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", ServiceName)),
		resource.WithFromEnv()) // last, so that OTEL_SERVICE_NAME wins
	if err != nil {
		// A malformed OTEL_RESOURCE_ATTRIBUTES: what parsed is kept.
		log.WarnContext(ctx, "trace resource", "err", err)
	}
	if res == nil {
		res = resource.NewSchemaless(attribute.String("service.name", ServiceName))
	}
	var opts []sdktrace.BatchSpanProcessorOption
	if cfg.BatchTimeout > 0 {
		opts = append(opts, sdktrace.WithBatchTimeout(cfg.BatchTimeout))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, opts...), sdktrace.WithResource(res))
	return &Tracer{tp: tp, tr: tp.Tracer("rung.dev/rung"), endpoint: endpoint, cancel: cancel}, nil
}

// Endpoint returns the traces URL that flag (Config.Endpoint) or else
// the environment configures, "" for none. Errors are ErrInvalid and name
// the flag or variable.
func Endpoint(flag string, getenv func(string) string) (string, error) {
	if flag != "" {
		u, err := parseEndpoint(flag, "--otlp-endpoint")
		if err != nil {
			return "", err
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		return u.String(), nil
	}
	if v := getenv(EnvTracesEndpoint); v != "" {
		u, err := parseEndpoint(v, EnvTracesEndpoint)
		if err != nil {
			return "", err
		}
		if u.Path == "" { // the specification's one change to this URL
			u.Path = "/"
		}
		return u.String(), nil
	}
	if v := getenv(EnvEndpoint); v != "" {
		u, err := parseEndpoint(v, EnvEndpoint)
		if err != nil {
			return "", err
		}
		u.Path = path.Join("/", u.Path, "v1/traces")
		return u.String(), nil
	}
	return "", nil
}

func parseEndpoint(v, from string) (*url.URL, error) {
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return nil, rung.Errorf(rung.ErrInvalid, "%s: %v", from, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, rung.Errorf(rung.ErrInvalid, "%s %q: want an http:// or https:// URL (OTLP/HTTP)", from, v)
	case u.Host == "":
		return nil, rung.Errorf(rung.ErrInvalid, "%s %q: no host", from, v)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, rung.Errorf(rung.ErrInvalid, "%s %q: a query or fragment has no place in an OTLP endpoint", from, v)
	}
	return u, nil
}

// EndpointURL is where the spans go.
func (t *Tracer) EndpointURL() string { return t.endpoint }

// Start starts a span (see [controller.Tracer]).
func (t *Tracer) Start(ctx context.Context, name string, start time.Time, attrs ...slog.Attr) (context.Context, controller.Span) {
	opts := []trace.SpanStartOption{trace.WithAttributes(convert(attrs)...)}
	if !start.IsZero() {
		opts = append(opts, trace.WithTimestamp(start))
	}
	if strings.HasPrefix(name, "rung.") {
		opts = append(opts, trace.WithSpanKind(trace.SpanKindInternal))
	} else { // a request's span: the API's, named after its route
		opts = append(opts, trace.WithSpanKind(trace.SpanKindServer))
	}
	ctx, s := t.tr.Start(ctx, name, opts...)
	return ctx, span{s}
}

// Continue returns ctx with the remote parent that h's traceparent and
// tracestate headers name (see api.Tracer), W3C Trace Context's; ctx
// itself when they are missing or malformed.
func (t *Tracer) Continue(ctx context.Context, h http.Header) context.Context {
	return t.prop.Extract(ctx, propagation.HeaderCarrier(h))
}

// Flush sends the spans ended so far, waiting until they are sent (or
// their export failed, which is logged) or ctx ends.
func (t *Tracer) Flush(ctx context.Context) error {
	if err := t.tp.ForceFlush(ctx); err != nil {
		return fmt.Errorf("trace flush: %w", err)
	}
	return nil
}

// Shutdown sends the spans not yet sent and stops the exporter, waiting
// for them until ctx ends; then it abandons the export in flight. Spans
// started later are dropped. Calls after the first do nothing.
func (t *Tracer) Shutdown(ctx context.Context) error {
	stop := context.AfterFunc(ctx, t.cancel)
	defer stop()
	defer t.cancel()
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("trace shutdown: %w", err)
	}
	return nil
}

// span is an OpenTelemetry span as a [controller.Span].
type span struct{ s trace.Span }

func (s span) Set(attrs ...slog.Attr) { s.s.SetAttributes(convert(attrs)...) }

func (s span) End(err error) {
	if err != nil {
		s.s.SetAttributes(attribute.String("rung.error.code", rung.Code(err)))
		s.s.SetStatus(codes.Error, err.Error())
	}
	s.s.End()
}

// convert turns slog attributes into OpenTelemetry's: strings, integers,
// booleans and floats as they are, anything else as its text.
func convert(attrs []slog.Attr) []attribute.KeyValue {
	kvs := make([]attribute.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		v := a.Value.Resolve()
		switch v.Kind() {
		case slog.KindString:
			kvs = append(kvs, attribute.String(a.Key, v.String()))
		case slog.KindInt64:
			kvs = append(kvs, attribute.Int64(a.Key, v.Int64()))
		case slog.KindUint64:
			kvs = append(kvs, attribute.Int64(a.Key, int64(v.Uint64())))
		case slog.KindBool:
			kvs = append(kvs, attribute.Bool(a.Key, v.Bool()))
		case slog.KindFloat64:
			kvs = append(kvs, attribute.Float64(a.Key, v.Float64()))
		default:
			kvs = append(kvs, attribute.String(a.Key, v.String()))
		}
	}
	return kvs
}
