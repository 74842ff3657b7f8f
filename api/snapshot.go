package api

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/wire"
)

// Snapshots: take, list, get, delete, pin, restore (a create with
// from_snapshot), roll back, fork, export and import; pause and resume.

func snapshotOut(s rung.Snapshot) Snapshot {
	return Snapshot{ID: s.ID, Name: s.Name, Labels: s.Labels, Sandbox: s.Sandbox, Image: s.Image, SizeBytes: s.SizeBytes,
		ExclusiveBytes: s.ExclusiveBytes, Parent: s.Parent, Consistency: s.Consistency, CreatedAt: s.CreatedAt,
		ExpiresAt: s.ExpiresAt, Pinned: s.Pinned, TTLMS: s.TTL.Milliseconds()}
}

func (s *Server) takeSnapshot(w http.ResponseWriter, r *http.Request, c caller) error {
	var req SnapshotRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	ttl, err := msDuration(req.TTLMS, "ttl_ms")
	if err != nil {
		return err
	}
	snap, err := s.ctrl.Snapshot(r.Context(), c.tenant, r.PathValue("id"), controller.SnapshotRequest{
		Name: req.Name, Labels: req.Labels, TTL: ttl, Freeze: req.Freeze})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, snapshotOut(snap))
	return nil
}

func (s *Server) listSnapshots(w http.ResponseWriter, r *http.Request, c caller) error {
	q := r.URL.Query()
	labels, err := parseLabels(q["label"])
	if err != nil {
		return err
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 0 {
			return rung.Errorf(rung.ErrInvalid, "limit %q: want a non-negative integer", clip(v))
		}
	}
	page, err := s.ctrl.ListSnapshots(r.Context(), c.tenant, controller.SnapshotFilter{
		Sandbox: q.Get("sandbox"), Name: q.Get("name"), Labels: labels, After: q.Get("after"), Limit: limit})
	if err != nil {
		return err
	}
	out := SnapshotList{Snapshots: make([]Snapshot, len(page.Snapshots)), Next: page.Next}
	for i, snap := range page.Snapshots {
		out.Snapshots[i] = snapshotOut(snap)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getSnapshot(w http.ResponseWriter, r *http.Request, c caller) error {
	snap, err := s.ctrl.GetSnapshot(r.Context(), c.tenant, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, snapshotOut(snap))
	return nil
}

func (s *Server) deleteSnapshot(w http.ResponseWriter, r *http.Request, c caller) error {
	if err := s.ctrl.DeleteSnapshot(r.Context(), c.tenant, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) pinSnapshot(w http.ResponseWriter, r *http.Request, c caller) error {
	var req PinRequest
	if r.ContentLength != 0 {
		if err := s.decode(w, r, &req); err != nil {
			return err
		}
	}
	pinned := req.Pinned == nil || *req.Pinned
	snap, err := s.ctrl.PinSnapshot(r.Context(), c.tenant, r.PathValue("id"), pinned)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, snapshotOut(snap))
	return nil
}

func (s *Server) rollback(w http.ResponseWriter, r *http.Request, c caller) error {
	var req RestoreRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if req.Snapshot == "" {
		return rung.Errorf(rung.ErrInvalid, "snapshot is required")
	}
	sb, err := s.ctrl.Rollback(r.Context(), c.tenant, r.PathValue("id"), req.Snapshot)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sandboxOut(sb))
	return nil
}

func (s *Server) forkSandbox(w http.ResponseWriter, r *http.Request, c caller) error {
	return s.fork(w, r, c, s.ctrl.Fork)
}

func (s *Server) forkSnapshot(w http.ResponseWriter, r *http.Request, c caller) error {
	return s.fork(w, r, c, s.ctrl.ForkSnapshot)
}

type forkFunc = func(ctx context.Context, tenant rung.TenantID, ref string, req controller.ForkRequest) ([]controller.ForkOutcome, error)

// fork answers 200 with one result per fork, in order, each a sandbox or
// an error: one fork's failure does not fail the others.
func (s *Server) fork(w http.ResponseWriter, r *http.Request, c caller, fn forkFunc) error {
	var req ForkRequest
	if r.ContentLength != 0 {
		if err := s.decode(w, r, &req); err != nil {
			return err
		}
	}
	outs, err := fn(r.Context(), c.tenant, r.PathValue("id"), controller.ForkRequest{Count: req.Count, Names: req.Names, Labels: req.Labels})
	if err != nil {
		return err
	}
	res := make([]ForkResult, len(outs))
	for i, o := range outs {
		if o.Err != nil {
			d := s.errorDetail(r.Context(), o.Err)
			res[i].Error = &d
			continue
		}
		sb := sandboxOut(o.Sandbox)
		res[i].Sandbox = &sb
	}
	writeJSON(w, http.StatusOK, wire.ForkResults{Forks: res})
	return nil
}

// exportSnapshot streams the snapshot's archive. An error before the first
// byte is an ordinary error response; after it, the connection is cut, so
// the client sees a truncated archive (which an import refuses).
func (s *Server) exportSnapshot(w http.ResponseWriter, r *http.Request, c caller) error {
	id := r.PathValue("id")
	cw := &countingWriter{w: w, start: func() {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": clip(id) + ".rungsnap"}))
		w.WriteHeader(http.StatusOK)
	}}
	err := s.ctrl.Export(r.Context(), c.tenant, id, r.URL.Query().Get("parent"), cw)
	if err != nil && cw.n > 0 {
		s.log.WarnContext(r.Context(), "snapshot export cut off", "snapshot", id, "err", err)
		panic(http.ErrAbortHandler)
	}
	return err
}

type countingWriter struct {
	w     io.Writer
	n     int64
	start func()
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	if cw.n == 0 && cw.start != nil {
		cw.start()
		cw.start = nil
	}
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	return n, err
}

// importSnapshot receives an archive as the request body; ?name, ?label
// and ?ttl_ms name and label the new snapshot.
func (s *Server) importSnapshot(w http.ResponseWriter, r *http.Request, c caller) error {
	q := r.URL.Query()
	labels, err := parseLabels(q["label"])
	if err != nil {
		return err
	}
	var ttl time.Duration
	if v := q.Get("ttl_ms"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return rung.Errorf(rung.ErrInvalid, "ttl_ms %q: want an integer", clip(v))
		}
		if ttl, err = msDuration(ms, "ttl_ms"); err != nil {
			return err
		}
	}
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxImportBytes)
	snap, err := s.ctrl.Import(r.Context(), c.tenant, body, controller.ImportRequest{Name: q.Get("name"), Labels: labels, TTL: ttl})
	if err != nil {
		return jsonErrOr(err, s.cfg.MaxImportBytes)
	}
	writeJSON(w, http.StatusCreated, snapshotOut(snap))
	return nil
}

// jsonErrOr turns a body that went past its limit into too_large.
func jsonErrOr(err error, max int64) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return &rung.LimitError{Limit: "request_bytes", Max: max, TooLarge: true}
	}
	return err
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request, c caller) error {
	var req PauseRequest
	if r.ContentLength != 0 {
		if err := s.decode(w, r, &req); err != nil {
			return err
		}
	}
	if err := s.ctrl.Pause(r.Context(), c.tenant, r.PathValue("id"), req.Memory); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request, c caller) error {
	sb, err := s.ctrl.Resume(r.Context(), c.tenant, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sandboxOut(sb))
	return nil
}
