package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"

	"rung.dev/rung"
)

func decodeJSON(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

// Journal returns journal entries with Seq > after (at most 1000 a call).
func (c *Client) Journal(ctx context.Context, id string, after int64) ([]Event, error) {
	var out struct {
		Entries []Event `json:"entries"`
	}
	return out.Entries, c.do(ctx, "GET", sbPath(id, "/journal"), url.Values{"after": {strconv.FormatInt(after, 10)}}, nil, &out)
}

// EventsOptions select an event stream.
type EventsOptions struct {
	After       int64
	Follow      bool // keep streaming until ctx is done or the sandbox goes
	JournalOnly bool
}

// Events calls fn for each event after o.After, in order. With Follow it
// returns only when ctx is done (nil), fn returns an error (that error),
// or the stream breaks. To resume after a reconnect, pass the last Seq
// seen as After: nothing still retained is missed.
func (c *Client) Events(ctx context.Context, id string, o EventsOptions, fn func(Event) error) error {
	q := url.Values{"after": {strconv.FormatInt(o.After, 10)}, "follow": {strconv.FormatBool(o.Follow)}, "journal": {strconv.FormatBool(o.JournalOnly)}}
	req, err := c.newRequest(ctx, "GET", sbPath(id, "/events"), q, nil, "")
	if err != nil {
		return err
	}
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue // heartbeat
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("events: bad line: %w", err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return sc.Err()
}

// DeclareEffect records an external effect under key. created is false
// when key was declared before; then the first declaration is returned.
func (c *Client) DeclareEffect(ctx context.Context, id string, key rung.EffectKey, kind string, result json.RawMessage) (Effect, bool, error) {
	var out struct {
		Effect  Effect `json:"effect"`
		Created bool   `json:"created"`
	}
	err := c.do(ctx, "POST", sbPath(id, "/effects"), nil, map[string]any{"key": key, "kind": kind, "result": result}, &out)
	return out.Effect, out.Created, err
}

// Effects lists the sandbox's declared effects.
func (c *Client) Effects(ctx context.Context, id string) ([]Effect, error) {
	var out struct {
		Effects []Effect `json:"effects"`
	}
	return out.Effects, c.do(ctx, "GET", sbPath(id, "/effects"), nil, nil, &out)
}
