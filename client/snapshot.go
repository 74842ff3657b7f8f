package client

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strconv"

	"rung.dev/rung/wire"
)

// Snapshots' bodies (package wire).
type (
	// Snapshot is a snapshot of a sandbox's files.
	Snapshot = wire.Snapshot
	// SnapshotRequest describes a new snapshot; zero fields take the
	// server's defaults (no name, the tenant's retention,
	// crash-consistent).
	SnapshotRequest = wire.SnapshotRequest
	// ForkRequest says how many forks to make, their names and labels.
	ForkRequest = wire.ForkRequest
)

// Snapshot takes a snapshot of sandbox id.
func (c *Client) Snapshot(ctx context.Context, id string, req SnapshotRequest) (Snapshot, error) {
	var s Snapshot
	return s, c.do(ctx, "POST", sbPath(id, "/snapshots"), nil, req, &s)
}

func snapPath(id string, rest ...string) string {
	p := "/v1/snapshots/" + url.PathEscape(id)
	for _, r := range rest {
		p += r
	}
	return p
}

// SnapshotListOptions filter [Client.ListSnapshots].
type SnapshotListOptions struct {
	Sandbox string
	Name    string
	Labels  map[string]string
	Limit   int    // page size; 0: the server's (1000)
	After   string // the previous page's next
}

// ListSnapshots returns one page of the caller's snapshots, oldest first,
// and the cursor of the next page ("" on the last).
func (c *Client) ListSnapshots(ctx context.Context, o SnapshotListOptions) ([]Snapshot, string, error) {
	q := url.Values{}
	for k, v := range o.Labels {
		q.Add("label", k+"="+v)
	}
	for k, v := range map[string]string{"sandbox": o.Sandbox, "name": o.Name, "after": o.After} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var out struct {
		Snapshots []Snapshot `json:"snapshots"`
		Next      string     `json:"next"`
	}
	err := c.do(ctx, "GET", "/v1/snapshots", q, nil, &out)
	return out.Snapshots, out.Next, err
}

// GetSnapshot returns a snapshot by id or name.
func (c *Client) GetSnapshot(ctx context.Context, id string) (Snapshot, error) {
	var s Snapshot
	return s, c.do(ctx, "GET", snapPath(id), nil, nil, &s)
}

// DeleteSnapshot deletes a snapshot; sandboxes made from it stay.
func (c *Client) DeleteSnapshot(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", snapPath(id), nil, nil, nil)
}

// PinSnapshot pins a snapshot (it never expires) or unpins it (it
// expires its TTL from now).
func (c *Client) PinSnapshot(ctx context.Context, id string, pinned bool) (Snapshot, error) {
	var s Snapshot
	return s, c.do(ctx, "POST", snapPath(id, "/pin"), nil, map[string]bool{"pinned": pinned}, &s)
}

// Rollback puts snapshot snap's files back in place of sandbox id's,
// keeping its id, name and journal. Its container is stopped first.
func (c *Client) Rollback(ctx context.Context, id, snap string) (Sandbox, error) {
	var sb Sandbox
	return sb, c.do(ctx, "POST", sbPath(id, "/restore"), nil, map[string]string{"snapshot": snap}, &sb)
}

// Checkpoint is a snapshot of sandbox id, now, with the defaults.
func (c *Client) Checkpoint(ctx context.Context, id string) (Snapshot, error) {
	return c.Snapshot(ctx, id, SnapshotRequest{})
}

// Fork is one fork's outcome: its sandbox, or Err (a *Error).
type Fork struct {
	Sandbox Sandbox
	Err     error
}

type forkResults struct {
	Forks []struct {
		Sandbox *Sandbox `json:"sandbox"`
		Error   *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"forks"`
}

func (r forkResults) out() []Fork {
	out := make([]Fork, len(r.Forks))
	for i, f := range r.Forks {
		switch {
		case f.Error != nil:
			out[i].Err = &Error{Code: f.Error.Code, Message: f.Error.Message}
		case f.Sandbox != nil:
			out[i].Sandbox = *f.Sandbox
		default:
			out[i].Err = errors.New("fork: empty result")
		}
	}
	return out
}

// Fork makes independent sandboxes from live sandbox id, all with its
// files as of one instant. One fork's failure is reported in its Fork.
func (c *Client) Fork(ctx context.Context, id string, req ForkRequest) ([]Fork, error) {
	var r forkResults
	err := c.do(ctx, "POST", sbPath(id, "/fork"), nil, req, &r)
	return r.out(), err
}

// ForkSnapshot makes independent sandboxes from snapshot id.
func (c *Client) ForkSnapshot(ctx context.Context, id string, req ForkRequest) ([]Fork, error) {
	var r forkResults
	err := c.do(ctx, "POST", snapPath(id, "/fork"), nil, req, &r)
	return r.out(), err
}

// ExportSnapshot streams snapshot id's archive (see docs/API.md); with
// parent, only the changes since that snapshot. The caller closes the
// reader. An archive cut off midway is refused by the import.
func (c *Client) ExportSnapshot(ctx context.Context, id, parent string) (io.ReadCloser, error) {
	q := url.Values{}
	if parent != "" {
		q.Set("parent", parent)
	}
	return c.download(ctx, snapPath(id, "/export"), q)
}

// ImportOptions name and label an imported snapshot; zero fields take
// the archive's.
type ImportOptions struct {
	Name   string
	Labels map[string]string
	TTLMS  int64
}

// ImportSnapshot uploads an archive ExportSnapshot made; the snapshot is
// the caller's tenant's. A damaged archive is rung.ErrInvalid and leaves
// nothing.
func (c *Client) ImportSnapshot(ctx context.Context, r io.Reader, o ImportOptions) (Snapshot, error) {
	q := url.Values{}
	if o.Name != "" {
		q.Set("name", o.Name)
	}
	for k, v := range o.Labels {
		q.Add("label", k+"="+v)
	}
	if o.TTLMS > 0 {
		q.Set("ttl_ms", strconv.FormatInt(o.TTLMS, 10))
	}
	req, err := c.newRequest(ctx, "POST", "/v1/snapshots/import", q, r, "application/octet-stream")
	if err != nil {
		return Snapshot{}, err
	}
	resp, err := c.send(req)
	if err != nil {
		return Snapshot{}, err
	}
	defer resp.Body.Close()
	var s Snapshot
	return s, decodeJSON(resp.Body, &s)
}

// Pause stops sandbox id's container and keeps its files (E2B's pause;
// memory and processes are not kept). memory asks to keep them too,
// which answers rung.ErrUnavailable on servers without memory
// checkpoints.
func (c *Client) Pause(ctx context.Context, id string, memory bool) error {
	var body any
	if memory {
		body = map[string]bool{"memory": true}
	}
	return c.do(ctx, "POST", sbPath(id, "/pause"), nil, body, nil)
}

// Resume starts a paused sandbox's container again.
func (c *Client) Resume(ctx context.Context, id string) (Sandbox, error) {
	var sb Sandbox
	return sb, c.do(ctx, "POST", sbPath(id, "/resume"), nil, nil, &sb)
}
