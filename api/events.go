package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/wire"
)

func afterParam(r *http.Request) (int64, int, error) {
	q := r.URL.Query()
	var after int64
	var limit int
	var err error
	if v := q.Get("after"); v != "" {
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			return 0, 0, rung.Errorf(rung.ErrInvalid, "after=%q: want a non-negative integer", clip(v))
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 0 || limit > 10000 {
			return 0, 0, rung.Errorf(rung.ErrInvalid, "limit=%q: want 0 to 10000", clip(v))
		}
	}
	return after, limit, nil
}

// journal returns the sandbox's journal entries after ?after= as JSON.
func (s *Server) journal(w http.ResponseWriter, r *http.Request, c caller) error {
	after, limit, err := afterParam(r)
	if err != nil {
		return err
	}
	evs, _, err := s.ctrl.Events(r.Context(), c.tenant, r.PathValue("id"), controller.EventQuery{After: after, Limit: limit, JournalOnly: true})
	if err != nil {
		return err
	}
	out := make([]Event, len(evs))
	for i, e := range evs {
		out[i] = eventOut(e)
	}
	writeJSON(w, http.StatusOK, wire.Journal{Entries: out})
	return nil
}

// heartbeat is how often a quiet followed stream sends an empty line, so
// proxies and clients can tell it is alive.
const heartbeat = 15 * time.Second

// events streams the sandbox's events after ?after= as NDJSON; with
// ?follow=true it keeps the stream open and sends new events as they
// come, until the client goes or the sandbox is deleted.
func (s *Server) events(w http.ResponseWriter, r *http.Request, c caller) error {
	after, limit, err := afterParam(r)
	if err != nil {
		return err
	}
	follow, err := boolParam(r, "follow")
	if err != nil {
		return err
	}
	journalOnly, err := boolParam(r, "journal")
	if err != nil {
		return err
	}
	ctx, ref := r.Context(), r.PathValue("id")
	if follow {
		var done context.CancelFunc
		ctx, done = s.following(ctx) // a stopping daemon ends the stream
		defer done()
	}
	q := controller.EventQuery{After: after, Limit: limit, JournalOnly: journalOnly}
	evs, id, err := s.ctrl.Events(ctx, c.tenant, ref, q)
	if err != nil {
		return err
	}
	nd := newNDJSON(w)
	w.WriteHeader(http.StatusOK)
	nd.rc.Flush()
	for {
		for _, e := range evs {
			if nd.send(eventOut(e)) != nil {
				return nil
			}
			q.After = e.Seq
		}
		if !follow {
			return nil
		}
		if len(evs) == 0 {
			// Take the signal before reading, so an event appended in
			// between wakes us.
			changed := s.ctrl.Changed(id)
			if evs, _, err = s.ctrl.Events(ctx, c.tenant, ref, q); err != nil {
				return nil // deleted: the stream ends
			}
			if len(evs) > 0 {
				continue
			}
			t := time.NewTimer(heartbeat)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-changed:
				t.Stop()
			case <-t.C:
				nd.mu.Lock()
				_, err := nd.w.Write([]byte("\n"))
				if err == nil {
					err = nd.rc.Flush()
				}
				nd.mu.Unlock()
				if err != nil {
					return nil
				}
			}
		}
		if evs, _, err = s.ctrl.Events(ctx, c.tenant, ref, q); err != nil {
			return nil
		}
	}
}

func (s *Server) declareEffect(w http.ResponseWriter, r *http.Request, c caller) error {
	var req wire.EffectRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	e, created, err := s.ctrl.DeclareEffect(r.Context(), c.tenant, r.PathValue("id"),
		controller.EffectRequest{Key: req.Key, Kind: req.Kind, Result: req.Result})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, EffectResponse{Effect: effectOut(e), Created: created})
	return nil
}

func (s *Server) listEffects(w http.ResponseWriter, r *http.Request, c caller) error {
	list, err := s.ctrl.Effects(r.Context(), c.tenant, r.PathValue("id"))
	if err != nil {
		return err
	}
	out := wire.EffectList{Effects: make([]wire.Effect, len(list))}
	for i, e := range list {
		out.Effects[i] = effectOut(e)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
