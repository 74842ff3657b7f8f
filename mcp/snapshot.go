package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// Snapshots, forks, previews and the journal.

type snapshotIn struct {
	Sandbox string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	Name    string `json:"name,omitempty" jsonschema:"a name for the snapshot, unique among yours (same rules as a sandbox's)"`
	Freeze  bool   `json:"freeze,omitempty" jsonschema:"pause the container's processes for the instant of the snapshot, so files being written are consistent (default: crash-consistent, like pulling the plug)"`
}

type snapshotListIn struct {
	Sandbox string `json:"sandbox,omitempty" jsonschema:"only this sandbox's snapshots (default: all of yours)"`
}

type snapshotList struct {
	Snapshots []client.Snapshot `json:"snapshots"`
	More      bool              `json:"more,omitempty"`
}

type rollbackIn struct {
	Sandbox  string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	Snapshot string `json:"snapshot" jsonschema:"the snapshot (id snp_... or name) to put back: one of this sandbox's"`
}

type forkIn struct {
	Sandbox  string   `json:"sandbox,omitempty" jsonschema:"fork this live sandbox, as of now"`
	Snapshot string   `json:"snapshot,omitempty" jsonschema:"or: fork this snapshot (id or name)"`
	Count    int      `json:"count,omitempty" jsonschema:"how many copies (default 1, or as many as names)"`
	Names    []string `json:"names,omitempty" jsonschema:"names of the new sandboxes, one each"`
}

type forkOut struct {
	Forks []forkResult `json:"forks"`
}

type forkResult struct {
	Sandbox *client.Sandbox `json:"sandbox,omitempty"`
	Error   string          `json:"error,omitempty" jsonschema:"why this fork could not be made: code, then message"`
}

type previewIn struct {
	Sandbox string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	Port    int    `json:"port" jsonschema:"TCP port a server in the sandbox's container listens on (on localhost is enough)"`
	Share   bool   `json:"share,omitempty" jsonschema:"make a signed URL that works without a token, for a browser or another person, until it expires (default: a URL that needs your API token)"`
	TTLMS   int64  `json:"ttl_ms,omitempty" jsonschema:"with share: how long the URL works, in milliseconds (default one day, at most 30 days)"`
}

type previewOut struct {
	URL        string    `json:"url"`
	NeedsToken bool      `json:"needs_token" jsonschema:"the URL needs an Authorization: Bearer header with your API token"`
	ShareID    string    `json:"share_id,omitempty"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
}

type journalIn struct {
	Sandbox string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
	After   int64  `json:"after,omitempty" jsonschema:"entries after this sequence number (default 0: from the first); pass next_after to read on"`
	Limit   int    `json:"limit,omitempty" jsonschema:"at most this many entries (default 200)"`
	Type    string `json:"type,omitempty" jsonschema:"only entries whose type starts with this, such as exec. or file. or egress.denied"`
}

type journalOut struct {
	Entries   []journalEntry `json:"entries"`
	NextAfter int64          `json:"next_after" jsonschema:"pass as after to read the entries that follow"`
	More      bool           `json:"more,omitempty"`
}

type journalEntry struct {
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"`
	Type string    `json:"type"`
	Data any       `json:"data,omitempty"`
}

const defaultJournal = 200

func (t *tools) addSnapshotTools(s *sdk.Server) {
	add(t, s, spec{name: "snapshot_create", title: "Snapshot a sandbox",
		desc: "Save a sandbox's state now, in milliseconds: its files (/workspace, /tmp) and its container's system changes " +
			"(installed packages). Returns the snapshot; snapshot_rollback returns to it, fork copies it, sandbox_create's " +
			"from_snapshot starts a new sandbox from it. Take one before a risky change.",
		schema: []schemaRule{matching("name", namePattern)}},
		func(ctx context.Context, c *client.Client, in snapshotIn) (any, error) {
			return c.Snapshot(ctx, in.Sandbox, client.SnapshotRequest{Name: in.Name, Freeze: in.Freeze})
		})
	add(t, s, spec{name: "snapshot_list", title: "List snapshots", readOnly: true,
		desc: "List your snapshots (or one sandbox's), oldest first, with id, name, sandbox, size and expiry."},
		func(ctx context.Context, c *client.Client, in snapshotListIn) (snapshotList, error) {
			snaps, next, err := c.ListSnapshots(ctx, client.SnapshotListOptions{Sandbox: in.Sandbox})
			return snapshotList{Snapshots: snaps, More: next != ""}, err
		})
	add(t, s, spec{name: "snapshot_rollback", title: "Roll a sandbox back", destructive: true,
		desc: "Put a sandbox back to one of its snapshots, in place: same id, name and journal; every file change since the " +
			"snapshot is undone and its container is restarted (running processes end)."},
		func(ctx context.Context, c *client.Client, in rollbackIn) (any, error) {
			return c.Rollback(ctx, in.Sandbox, in.Snapshot)
		})
	add(t, s, spec{name: "fork", title: "Fork a sandbox",
		desc: "Make independent copies of a sandbox (as of now) or of a snapshot: each fork is a new sandbox with the same " +
			"files, image, size and network, to try different approaches side by side. Give sandbox or snapshot.",
		schema: []schemaRule{between("count", 1, 100)}},
		func(ctx context.Context, c *client.Client, in forkIn) (forkOut, error) {
			req := client.ForkRequest{Count: in.Count, Names: in.Names}
			var forks []client.Fork
			var err error
			switch {
			case (in.Sandbox == "") == (in.Snapshot == ""):
				return forkOut{}, rung.Errorf(rung.ErrInvalid, "give either sandbox or snapshot")
			case in.Sandbox != "":
				forks, err = c.Fork(ctx, in.Sandbox, req)
			default:
				forks, err = c.ForkSnapshot(ctx, in.Snapshot, req)
			}
			if err != nil {
				return forkOut{}, err
			}
			out := forkOut{Forks: make([]forkResult, len(forks))}
			for i, f := range forks {
				if f.Err != nil {
					out.Forks[i].Error = asToolError(f.Err).Error()
				} else {
					out.Forks[i].Sandbox = &f.Sandbox
				}
			}
			return out, nil
		})
	add(t, s, spec{name: "preview_url", title: "URL of a sandbox's port",
		desc: "Get a URL for a server in the sandbox (HTTP and WebSocket), such as one started with process_start. With share, " +
			"a signed URL anyone can open in a browser until it expires; without, one that needs your API token.",
		schema: []schemaRule{between("port", 1, 65535), between("ttl_ms", 1, float64(30*24*time.Hour/time.Millisecond))}},
		func(ctx context.Context, c *client.Client, in previewIn) (previewOut, error) {
			if !in.Share {
				if _, err := c.Get(ctx, in.Sandbox); err != nil {
					return previewOut{}, err
				}
				return previewOut{URL: c.PortURL(in.Sandbox, in.Port), NeedsToken: true}, nil
			}
			sh, err := c.SharePort(ctx, in.Sandbox, in.Port, time.Duration(in.TTLMS)*time.Millisecond)
			if err != nil {
				return previewOut{}, err
			}
			return previewOut{URL: sh.URL, ShareID: sh.ID, ExpiresAt: sh.ExpiresAt}, nil
		})
	add(t, s, spec{name: "journal", title: "Read a sandbox's journal", readOnly: true,
		desc: "Read what happened in a sandbox, in order: its creation, every exec (command, backend, exit), file change, " +
			"container start and stop, process, snapshot, network change and egress denial, each with its data.",
		schema: []schemaRule{atLeast("after", 0), between("limit", 1, 1000)}},
		func(ctx context.Context, c *client.Client, in journalIn) (journalOut, error) {
			limit := in.Limit
			if limit <= 0 {
				limit = defaultJournal
			}
			return readJournal(ctx, c, in.Sandbox, in.After, limit, in.Type)
		})
}

// readJournal returns up to limit entries after seq after whose type
// starts with prefix, paging through the API (1000 entries a call).
func readJournal(ctx context.Context, c *client.Client, sandbox string, after int64, limit int, prefix string) (journalOut, error) {
	out := journalOut{Entries: []journalEntry{}, NextAfter: after}
	for {
		page, err := c.Journal(ctx, sandbox, out.NextAfter)
		if err != nil {
			return journalOut{}, err
		}
		for _, e := range page {
			if len(out.Entries) == limit {
				out.More = true
				return out, nil
			}
			out.NextAfter = e.Seq
			if !strings.HasPrefix(e.Type, prefix) {
				continue
			}
			je := journalEntry{Seq: e.Seq, Time: e.Time, Type: e.Type}
			if len(e.Data) > 0 {
				if err := json.Unmarshal(e.Data, &je.Data); err != nil {
					return journalOut{}, fmt.Errorf("journal entry %d: %w", e.Seq, err)
				}
			}
			out.Entries = append(out.Entries, je)
		}
		if len(page) == 0 {
			return out, nil
		}
	}
}
