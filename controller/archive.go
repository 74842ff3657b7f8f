package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/storage"
	"rung.dev/rung/store"
)

// archiveMeta is what an exported snapshot archive says about the
// snapshot, in its header: the handle, and the sandbox it was taken of
// (what a restore starts from).
type archiveMeta struct {
	Snapshot rung.Snapshot `json:"snapshot"`
	Source   rung.Sandbox  `json:"source"`
}

// Export writes tenant's snapshot ref to w as one archive (see
// storage.Export): its metadata, the btrfs send stream zstd-compressed in
// chunks, and a manifest of digests. With parentRef (another of the
// tenant's snapshots) the stream holds only the changes since it, and
// the importing server must have that parent. Errors: ErrNotFound,
// ErrInvalid, w's.
func (c *Controller) Export(ctx context.Context, tenant rung.TenantID, ref, parentRef string, w io.Writer) error {
	s, err := c.findSnapshot(ctx, tenant, ref)
	if err != nil {
		return err
	}
	defer c.snaps.hold(s.ID)()
	var parent rung.SnapshotID
	if parentRef != "" {
		p, err := c.findSnapshot(ctx, tenant, parentRef)
		if err != nil {
			return err
		}
		if p.ID == s.ID {
			return rung.Errorf(rung.ErrInvalid, "a snapshot cannot be exported against itself")
		}
		defer c.snaps.hold(p.ID)()
		parent = p.ID
	}
	meta, err := json.Marshal(archiveMeta{Snapshot: s.Snapshot, Source: s.Source})
	if err != nil {
		return err
	}
	_, err = c.pool.Export(ctx, w, storage.ExportRequest{Name: string(s.ID), Parent: string(parent), Meta: meta})
	if err != nil {
		return fmt.Errorf("export snapshot %s: %w", s.ID, err)
	}
	return nil
}

// ImportRequest is what a caller may set on an imported snapshot. Zero
// fields take the archive's name and labels and the tenant's retention.
type ImportRequest struct {
	Name   string
	Labels map[string]string
	TTL    time.Duration
}

// Import receives an archive Export wrote (on this server or another)
// as a new snapshot of tenant: it belongs to the importing tenant, has no
// sandbox here, and restores like any other. An incremental archive needs
// its parent among the tenant's snapshots (ErrConflict otherwise). The
// snapshot becomes visible only once every digest checked out: a
// damaged archive is ErrInvalid and leaves nothing. Errors: ErrInvalid,
// ErrConflict, ErrExists (name taken), ErrLimit (the tenant's snapshot
// count or bytes).
func (c *Controller) Import(ctx context.Context, tenant rung.TenantID, r io.Reader, req ImportRequest) (rung.Snapshot, error) {
	if err := checkSnapshotRequest(req.Name, req.Labels, req.TTL); err != nil {
		return rung.Snapshot{}, err
	}
	pol := c.cfg.Snapshots.For(tenant)
	row := store.Snapshot{Snapshot: rung.Snapshot{ID: rung.NewSnapshotID(), Tenant: tenant}, State: store.SnapshotCreating}
	created := false
	var release func()
	defer func() {
		if release != nil {
			release()
		}
	}()
	accept := func(h storage.ArchiveHeader) (string, int64, error) {
		if err := c.importRow(&row, h, req, pol); err != nil {
			return "", 0, err
		}
		parent := ""
		if h.ParentUUID != "" {
			p, err := c.snapshotBySendUUID(ctx, tenant, h.ParentUUID)
			if err != nil {
				return "", 0, err
			}
			release = c.snaps.hold(p.ID)
			parent, row.Parent = string(p.ID), p.ID
		}
		if err := c.st.CreateSnapshot(ctx, row, pol.MaxSnapshots); err != nil {
			return "", 0, err
		}
		created = true
		c.fault("import.row")
		// No more than the largest disk the tenant's sandboxes may have (a
		// snapshot of one holds no more), nor than its byte cap leaves.
		maxBytes := c.cfg.Sizes.For(tenant).MaxDiskBytes
		if pol.MaxBytes > 0 {
			_, used, err := c.st.SnapshotUsage(ctx, tenant)
			if err != nil {
				return "", 0, err
			}
			left := pol.MaxBytes - used
			if left <= 0 {
				return "", 0, &rung.LimitError{Limit: rung.LimitSnapshotBytes, Max: pol.MaxBytes}
			}
			if maxBytes <= 0 || left < maxBytes {
				maxBytes = left
			}
		}
		return parent, maxBytes, nil
	}
	if c.cfg.Fault != nil {
		r = &faultReader{r: r, after: 1 << 20, fire: func() { c.fault("import.receiving") }}
	}
	_, err := c.pool.Import(ctx, r, storage.ImportRequest{Name: string(row.ID), Accept: accept})
	if err == nil {
		c.fault("import.received")
		if u, uerr := c.pool.Usage(ctx, string(row.ID)); uerr == nil {
			row.SizeBytes, row.ExclusiveBytes = u.Bytes, u.Bytes // a received snapshot wrote all of its data itself
		}
		err = c.markReady(context.WithoutCancel(ctx), &row, pol)
	}
	if err != nil {
		if created {
			c.dropSnapshot(ctx, row.ID)
		}
		return rung.Snapshot{}, fmt.Errorf("import snapshot: %w", err)
	}
	c.log.InfoContext(ctx, "snapshot imported", "snapshot", row.ID, "tenant", tenant, "bytes", row.SizeBytes)
	c.poke()
	return row.Snapshot, nil
}

// importRow fills the row of an imported snapshot from the archive's
// metadata (hostile input, held to the rules a new snapshot follows) and
// the request.
func (c *Controller) importRow(row *store.Snapshot, h storage.ArchiveHeader, req ImportRequest, pol SnapshotPolicy) error {
	var meta archiveMeta
	if len(h.Meta) > 0 {
		if err := json.Unmarshal(h.Meta, &meta); err != nil {
			return rung.Errorf(rung.ErrInvalid, "snapshot archive: metadata: %v", clip(err.Error()))
		}
	}
	name, labels, ttl := req.Name, req.Labels, req.TTL
	if name == "" {
		name = meta.Snapshot.Name
	}
	if labels == nil {
		labels = meta.Snapshot.Labels
	}
	if ttl == 0 {
		ttl = pol.Retention
	}
	if err := checkSnapshotRequest(name, labels, ttl); err != nil {
		return fmt.Errorf("snapshot archive: %w", err)
	}
	if im := meta.Snapshot.Image; im != "" && (len(im) > 255 || !validImageRef(im)) {
		return rung.Errorf(rung.ErrInvalid, "snapshot archive: invalid image %q", clip(im))
	}
	now := time.Now().UTC()
	row.Name, row.Labels, row.TTL, row.Image = name, labels, ttl, meta.Snapshot.Image
	row.Consistency, row.CreatedAt, row.ExpiresAt = meta.Snapshot.Consistency, now, now.Add(ttl)
	// The config a restore starts from; who owned it is not imported.
	src := meta.Source
	src.ID, src.Name, src.Tenant, src.Origin, src.ForkedFrom, src.State = "", "", row.Tenant, "", "", ""
	row.Source = src
	return nil
}

// snapshotBySendUUID finds tenant's snapshot whose send identity (see
// storage.SubvolInfo.SendUUID) is uuid: the parent an incremental archive
// names. Another tenant's never matches.
func (c *Controller) snapshotBySendUUID(ctx context.Context, tenant rung.TenantID, uuid string) (store.Snapshot, error) {
	f := store.SnapshotFilter{Tenant: tenant, Limit: maxSnapshotPage}
	for {
		page, err := c.st.ListSnapshots(ctx, f)
		if err != nil {
			return store.Snapshot{}, err
		}
		for _, s := range page {
			if s.State != store.SnapshotReady {
				continue
			}
			info, err := c.pool.Info(ctx, string(s.ID))
			if errors.Is(err, rung.ErrNotFound) {
				continue
			}
			if err != nil {
				return store.Snapshot{}, err
			}
			if id, _ := info.SendUUID(); id == uuid {
				return s, nil
			}
		}
		if len(page) < f.Limit {
			return store.Snapshot{}, rung.Errorf(rung.ErrConflict,
				"snapshot archive: it holds only the changes since a snapshot this tenant does not have here; import that snapshot first, or export without a parent")
		}
		last := page[len(page)-1]
		f.After, f.AfterCreated = last.ID, last.CreatedAt
	}
}

// faultReader calls fire once after more than after bytes were read: a
// fault point in the middle of a receive.
type faultReader struct {
	r     io.Reader
	n     int64
	after int64
	fire  func()
}

func (f *faultReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	f.n += int64(n)
	if f.fire != nil && f.n > f.after {
		fire := f.fire
		f.fire = nil
		fire()
	}
	return n, err
}
