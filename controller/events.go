package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// notify wakes everyone waiting for the sandbox's next event.
func (c *Controller) notify(id rung.SandboxID) {
	c.mu.Lock()
	ch := c.waiters[id]
	delete(c.waiters, id)
	c.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// Changed returns a channel that is closed when sandbox id next gets an
// event (or is deleted). The channel carries no data: read the events
// from the store with after=N. Waiters cost memory only while they wait.
func (c *Controller) Changed(id rung.SandboxID) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.waiters[id]
	if ch == nil {
		ch = make(chan struct{})
		c.waiters[id] = ch
	}
	return ch
}

// EventQuery selects a sandbox's events.
type EventQuery struct {
	After       int64
	Limit       int // <= 0 means 1000; at most 10,000
	JournalOnly bool
}

// Events returns tenant's sandbox ref's events after q.After, oldest
// first, and the sandbox's ID (for [Controller.Changed]). Output events
// are kept for Config.Retention; journal entries for the sandbox's life.
func (c *Controller) Events(ctx context.Context, tenant rung.TenantID, ref string, q EventQuery) ([]rung.Event, rung.SandboxID, error) {
	if q.After < 0 || q.Limit > 10000 {
		return nil, "", rung.Errorf(rung.ErrInvalid, "after must be >= 0 and limit <= 10000")
	}
	sb, err := c.Get(ctx, tenant, ref)
	if err != nil {
		return nil, "", err
	}
	evs, err := c.st.ListEvents(ctx, sb.ID, store.EventQuery{After: q.After, Limit: q.Limit, JournalOnly: q.JournalOnly})
	if err != nil {
		return nil, "", fmt.Errorf("events of sandbox %s: %w", sb.ID, err)
	}
	return evs, sb.ID, nil
}

// EffectRequest declares an external side effect.
type EffectRequest struct {
	Key    rung.EffectKey  `json:"key"`
	Kind   string          `json:"kind,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// DeclareEffect records an external effect under its idempotency key. A
// second declaration with the same key changes nothing and returns the
// first one (created false), so a retried task can tell it already did it.
func (c *Controller) DeclareEffect(ctx context.Context, tenant rung.TenantID, ref string, req EffectRequest) (rung.Effect, bool, error) {
	if req.Key == "" || len(req.Key) > 256 || len(req.Kind) > 256 {
		return rung.Effect{}, false, rung.Errorf(rung.ErrInvalid, "effect key must be 1 to 256 bytes, kind at most 256")
	}
	if len(req.Result) > 64<<10 {
		return rung.Effect{}, false, &rung.LimitError{Limit: "effect_result_bytes", Max: 64 << 10, TooLarge: true}
	}
	if len(req.Result) > 0 && !json.Valid(req.Result) {
		return rung.Effect{}, false, rung.Errorf(rung.ErrInvalid, "effect result is not valid JSON")
	}
	sb, err := c.Get(ctx, tenant, ref)
	if err != nil {
		return rung.Effect{}, false, err
	}
	now := time.Now().UTC()
	data, _ := json.Marshal(EffectDeclared{Key: req.Key, Kind: req.Kind})
	e, created, err := c.st.DeclareEffect(ctx, rung.Effect{Sandbox: sb.ID, Key: req.Key, Kind: req.Kind, Result: req.Result, CreatedAt: now},
		rung.Event{Time: now, Type: string(rung.EntryEffectDeclared), Journal: true, Data: data})
	if err != nil {
		return rung.Effect{}, false, fmt.Errorf("declare effect: %w", err)
	}
	if created {
		c.notify(sb.ID)
	}
	return e, created, nil
}

// Effects lists tenant's sandbox ref's declared effects.
func (c *Controller) Effects(ctx context.Context, tenant rung.TenantID, ref string) ([]rung.Effect, error) {
	sb, err := c.Get(ctx, tenant, ref)
	if err != nil {
		return nil, err
	}
	return c.st.ListEffects(ctx, sb.ID)
}
