package controller

import (
	"context"
	"log/slog"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/router"
)

// Tracer starts the spans of traces. Package tracing implements it over
// an OTLP exporter, and cmd/rung wires it through [Config].Tracer (and
// the API's); nil, the default, traces nothing, and each place that would
// start a span then costs one nil check. It must be safe for concurrent
// use and never block: spans are exported in the background.
type Tracer interface {
	// Start starts a span named name (from a small fixed set, never a
	// caller's text) at start, the zero time meaning now, as a child of
	// the span ctx carries if it carries one, and returns ctx carrying
	// the new span.
	Start(ctx context.Context, name string, start time.Time, attrs ...slog.Attr) (context.Context, Span)
}

// Span is a started span. Its methods are safe for concurrent use.
type Span interface {
	// Set adds attributes; a key set again takes the later value. String,
	// integer, boolean and float values are kept as they are, others as
	// their text.
	Set(attrs ...slog.Attr)
	// End ends the span now; a non-nil err marks it failed, with err's
	// wire code (rung.Code) and text. Calls after the first do nothing.
	End(err error)
}

// The spans the controller starts, and the attribute keys that rung's
// spans carry (docs/API.md, "Traces", lists them all).
const (
	SpanExec           = "rung.exec"            // one exec, from its request to its result
	SpanTierRun        = "rung.tier.run"        // one run of an exec in a tier, a child of its exec
	SpanContainerStart = "rung.container.start" // a sandbox's container started, cold or warm

	AttrTenant      = "rung.tenant.id"
	AttrSandbox     = "rung.sandbox.id"
	AttrSandboxName = "rung.sandbox.name" // a request's sandbox, named by name rather than id
	AttrExec        = "rung.exec.id"
	AttrBackend     = "rung.exec.backend"      // the tier it ran in: isolate or container
	AttrReason      = "rung.exec.reason"       // why it ran there, the router's (or fall-through's) text
	AttrReasonClass = "rung.exec.reason_class" // the bounded class of that reason (router.Class…)
	AttrExitCode    = "rung.exec.exit_code"
	AttrExitReason  = "rung.exec.exit_reason"
	AttrTier        = "rung.tier"              // a tier run's tier: isolate or container
	AttrTierRefused = "rung.tier.refused"      // why the isolate tier stopped an exec it could not run faithfully
	AttrWarm        = "rung.container.warm"    // a warm spare claimed rather than a cold start
	AttrRuntime     = "rung.container.runtime" // runc, crun or runsc
	AttrImage       = "rung.container.image"   // the pinned reference, name@sha256:…
	AttrImageDigest = "rung.container.image_digest"
)

// startSpan starts a span named name as a child of ctx's span when
// tracing is on; off, it returns ctx and a nil Span, and callers check
// for nil before building attributes, so tracing off costs nothing more.
func (c *Controller) startSpan(ctx context.Context, name string, attrs ...slog.Attr) (context.Context, Span) {
	if c.cfg.Tracer == nil {
		return ctx, nil
	}
	return c.cfg.Tracer.Start(ctx, name, time.Time{}, attrs...)
}

// traceExecEnd adds to an exec's span what its result says: the exec id,
// the tier it ran in and why, and how it ended.
func traceExecEnd(sp Span, id rung.ExecID, d router.Decision, o outcome) {
	sp.Set(slog.String(AttrExec, string(id)), slog.String(AttrBackend, string(d.Backend)),
		slog.String(AttrReason, d.Reason), slog.String(AttrReasonClass, d.Class),
		slog.Int(AttrExitCode, o.Code), slog.String(AttrExitReason, string(o.Reason)))
}

// startTierSpan starts the span of one run of an exec in tier b, a
// child of the exec's span in ctx; nil when tracing is off.
func (c *Controller) startTierSpan(ctx context.Context, b rung.Backend) (context.Context, Span) {
	if c.cfg.Tracer == nil {
		return ctx, nil
	}
	return c.cfg.Tracer.Start(ctx, SpanTierRun, time.Time{}, slog.String(AttrTier, string(b)))
}

// endTierSpan ends a tier run's span (nil: tracing off) with how the run
// ended.
func endTierSpan(sp Span, o outcome, err error) {
	if sp == nil {
		return
	}
	if err == nil {
		sp.Set(slog.Int(AttrExitCode, o.Code), slog.String(AttrExitReason, string(o.Reason)))
	}
	sp.End(err)
}

// ContainerStart is how a sandbox's container started, as the tier
// reports it to [ContainerEvents].Started.
type ContainerStart struct {
	Image   string        // the pinned reference, name@sha256:…
	Digest  string        // the image's digest, sha256:…
	Runtime string        // the OCI runtime: runc, crun or runsc
	Took    time.Duration // from the start's beginning until the container served
}

// traceStart records a container start that ended now, after took, as
// a span under ctx's (the tier run that needed the container, or the
// create that claimed a spare).
func (c *Controller) traceStart(ctx context.Context, sb rung.SandboxID, warm bool, s ContainerStart) {
	if c.cfg.Tracer == nil {
		return
	}
	_, sp := c.cfg.Tracer.Start(ctx, SpanContainerStart, time.Now().Add(-s.Took),
		slog.String(AttrSandbox, string(sb)), slog.Bool(AttrWarm, warm), slog.String(AttrImage, s.Image))
	if s.Digest != "" {
		sp.Set(slog.String(AttrImageDigest, s.Digest))
	}
	if s.Runtime != "" {
		sp.Set(slog.String(AttrRuntime, s.Runtime))
	}
	sp.End(nil)
}
