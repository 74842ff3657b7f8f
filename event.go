package rung

import (
	"encoding/json"
	"time"
)

// Event is one entry of a sandbox's sequence. Journal entries are the
// durable record of what happened and stay as long as the sandbox; other
// events (exec output chunks) are kept for a retention period only. The
// store keeps events as this type and the controller returns them as they
// are; the API converts them once, into its own body.
type Event struct {
	Seq     int64           `json:"seq"` // 1, 2, ... per sandbox; 0 until stored
	Time    time.Time       `json:"time"`
	Type    string          `json:"type"` // an EntryType's value: "exec.started", "exec.output", ...
	Journal bool            `json:"journal"`
	Data    json.RawMessage `json:"data,omitempty"` // the entry's payload, a JSON object
}

// Effect is a declared external side effect of a sandbox (a payment, an
// email), keyed for idempotency: a second declaration with the same key
// returns the first.
type Effect struct {
	Sandbox   SandboxID       `json:"sandbox"`
	Key       EffectKey       `json:"key"`
	Kind      string          `json:"kind,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Seq       int64           `json:"seq"` // its journal entry
	CreatedAt time.Time       `json:"created_at"`
}
