package client

import (
	"context"
	"net/url"
	"time"

	"rung.dev/rung/wire"
)

// The usage API's bodies (package wire).
type (
	// UsageSample is one sample of a sandbox's resource use: CPU
	// seconds (cumulative) and percent (since the previous sample),
	// memory now and at its peak, disk bytes (-1: unknown).
	UsageSample = wire.UsageSample
	// SandboxMetrics is a sandbox's samples, oldest first.
	SandboxMetrics = wire.SandboxMetrics
	// UsageList is the newest sample of each sandbox whose container
	// runs, busiest CPU first.
	UsageList = wire.UsageList
	// SandboxUsage is one sandbox's line of a [UsageList].
	SandboxUsage = wire.SandboxUsage
)

// SandboxMetrics returns sandbox id's usage samples taken from start to
// end (a zero time is unbounded). The server samples a sandbox every few
// seconds while its container runs and keeps an hour of samples; a
// sandbox whose container has not run has none.
func (c *Client) SandboxMetrics(ctx context.Context, id string, start, end time.Time) (SandboxMetrics, error) {
	q := url.Values{}
	if !start.IsZero() {
		q.Set("start", start.UTC().Format(time.RFC3339Nano))
	}
	if !end.IsZero() {
		q.Set("end", end.UTC().Format(time.RFC3339Nano))
	}
	var out SandboxMetrics
	return out, c.do(ctx, "GET", sbPath(id, "/metrics"), q, nil, &out)
}

// Usage returns the newest usage sample of each of the caller's
// sandboxes whose container runs, busiest CPU first (what `rung top`
// shows).
func (c *Client) Usage(ctx context.Context) (UsageList, error) {
	var out UsageList
	return out, c.do(ctx, "GET", "/v1/usage", nil, nil, &out)
}
