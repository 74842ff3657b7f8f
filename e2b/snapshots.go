package e2b

import (
	"net/http"
	"strconv"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

// snapshotIDPrefix begins every rung snapshot id ([rung.NewSnapshotID]).
const snapshotIDPrefix = "snp_"

// snapshotOut is E2B's SnapshotInfo. snapshotID is rung's snapshot id,
// which a later create takes as its templateID; names holds the name the
// snapshot was given, if any.
type snapshotOut struct {
	SnapshotID string   `json:"snapshotID"`
	Names      []string `json:"names"`
}

func snapshotOf(s rung.Snapshot) snapshotOut {
	out := snapshotOut{SnapshotID: string(s.ID), Names: []string{}}
	if s.Name != "" {
		out.Names = append(out.Names, s.Name)
	}
	return out
}

// createSnapshot is POST /sandboxes/{id}/snapshots ({"name"} optional):
// rung's snapshot of the sandbox's files (workspace, /tmp and root
// filesystem changes), taken without pausing it; memory is not kept.
func (s *Server) createSnapshot(w http.ResponseWriter, r *http.Request, c caller) error {
	var in struct {
		Name string `json:"name"`
	}
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	snap, err := s.ctrl.Snapshot(r.Context(), c.tenant, r.PathValue("id"), controller.SnapshotRequest{Name: in.Name})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, snapshotOf(snap))
	return nil
}

// listSnapshots is GET /snapshots?sandboxID=&name=&limit=&nextToken=,
// the next page's token in x-next-token.
func (s *Server) listSnapshots(w http.ResponseWriter, r *http.Request, c caller) error {
	q := r.URL.Query()
	f := controller.SnapshotFilter{Sandbox: q.Get("sandboxID"), Name: q.Get("name"), After: q.Get("nextToken"), Limit: 100}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 {
			return rung.Errorf(rung.ErrInvalid, "limit must be a positive integer")
		}
		f.Limit = min(n, 1000)
	}
	page, err := s.ctrl.ListSnapshots(r.Context(), c.tenant, f)
	if err != nil && !(f.Sandbox != "" && rung.Code(err) == rung.CodeNotFound) {
		return err
	}
	// A sandboxID the tenant does not have lists nothing, as on E2B.
	out := []snapshotOut{}
	for _, sn := range page.Snapshots {
		out = append(out, snapshotOf(sn))
	}
	if page.Next != "" {
		w.Header().Set("x-next-token", page.Next)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteTemplate is DELETE /templates/{id}, which the SDK's
// deleteSnapshot calls: rung deletes the tenant's snapshot of that id or
// name. Images are not templates it deletes: anything else is 404.
func (s *Server) deleteTemplate(w http.ResponseWriter, r *http.Request, c caller) error {
	if err := s.ctrl.DeleteSnapshot(r.Context(), c.tenant, r.PathValue("id")); err != nil {
		if rung.Code(err) == rung.CodeInvalid {
			return rung.Errorf(rung.ErrNotFound, "snapshot %s not found", clip(r.PathValue("id")))
		}
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// forkDefaultTimeout is E2B's default lifetime of a fork.
const forkDefaultTimeout = 15 * time.Second

// forkResult is one entry of E2B's fork answer: the sandbox, or why it
// was not made.
type forkResult struct {
	Sandbox *sandboxOut `json:"sandbox,omitempty"`
	Error   *apiError   `json:"error,omitempty"`
}

// fork is POST /sandboxes/{id}/fork ({"count", "timeout"}): rung's fork,
// count sandboxes with the source's files as of one instant and its
// configuration, each with its own id and container (processes and
// memory are not carried over), living timeout seconds (default 15, as
// E2B's).
func (s *Server) fork(w http.ResponseWriter, r *http.Request, c caller) error {
	var in struct {
		Count   *int   `json:"count"`
		Timeout *int64 `json:"timeout"`
	}
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	n := 1
	if in.Count != nil {
		n = *in.Count
		if n < 1 || n > controller.MaxForks {
			return rung.Errorf(rung.ErrInvalid, "count must be between 1 and %d", controller.MaxForks)
		}
	}
	ttl := forkDefaultTimeout
	if in.Timeout != nil {
		if *in.Timeout <= 0 {
			return rung.Errorf(rung.ErrInvalid, "timeout must be positive")
		}
		ttl = time.Duration(*in.Timeout) * time.Second
	}
	outs, err := s.ctrl.Fork(r.Context(), c.tenant, r.PathValue("id"), controller.ForkRequest{Count: n})
	if err != nil {
		return err
	}
	res := make([]forkResult, 0, len(outs))
	for _, o := range outs {
		err := o.Err
		sb := o.Sandbox
		if err == nil {
			sb, err = s.ctrl.Update(r.Context(), c.tenant, string(o.Sandbox.ID), controller.UpdateRequest{ExpiresIn: &ttl})
		}
		if err != nil {
			status := statusOf[rung.Code(err)]
			res = append(res, forkResult{Error: &apiError{Code: status, Message: message(err)}})
			continue
		}
		out := s.sandboxOutOf(sb)
		res = append(res, forkResult{Sandbox: &out})
	}
	writeJSON(w, http.StatusCreated, res)
	return nil
}
