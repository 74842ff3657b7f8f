package api

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/wire"
)

// Container lifecycle and background processes. The container itself is
// started on the first exec that needs it; these endpoints start it
// early, stop it, and run long-lived processes (dev servers, watchers)
// whose output a client can re-attach to from a sequence number.

func (s *Server) startContainer(w http.ResponseWriter, r *http.Request, c caller) error {
	sb, err := s.ctrl.StartContainer(r.Context(), c.tenant, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sandboxOut(sb))
	return nil
}

func (s *Server) stopContainer(w http.ResponseWriter, r *http.Request, c caller) error {
	if err := s.ctrl.StopContainer(r.Context(), c.tenant, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) startProcess(w http.ResponseWriter, r *http.Request, c caller) error {
	var req ProcessRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	preq := controller.ProcessRequest{Command: req.Command, Argv: req.Argv, Dir: req.Cwd, Env: req.Env, User: req.User, PTY: req.PTY}
	info, err := s.ctrl.StartProcess(r.Context(), c.tenant, r.PathValue("id"), preq)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, processOut(info))
	return nil
}

func (s *Server) listProcesses(w http.ResponseWriter, r *http.Request, c caller) error {
	list, err := s.ctrl.Processes(r.Context(), c.tenant, r.PathValue("id"))
	if err != nil {
		return err
	}
	out := make([]wire.Process, len(list))
	for i, p := range list {
		out[i] = processOut(p)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// processOutput streams a process's output as NDJSON frames
// {"seq","stream","data"} after ?after=N, and with ?follow=true until the
// process exits, ending with {"seq","exit":{...}}.
func (s *Server) processOutput(w http.ResponseWriter, r *http.Request, c caller) error {
	after, _, err := afterParam(r)
	if err != nil {
		return err
	}
	follow, err := boolParam(r, "follow")
	if err != nil {
		return err
	}
	nd := newNDJSON(w)
	started := false
	last := after
	ctx := r.Context()
	if follow {
		var done context.CancelFunc
		ctx, done = s.following(ctx) // a stopping daemon ends the stream
		defer done()
	}
	exit, err := s.ctrl.ProcessOutput(ctx, c.tenant, r.PathValue("id"), r.PathValue("pid"), after, follow, func(f controller.OutputFrame) {
		if !started {
			w.WriteHeader(http.StatusOK)
			started = true
		}
		last = f.Seq
		nd.send(outputFrameOut(f))
	})
	if err != nil && !started {
		if s.stopping.Err() != nil {
			return rung.Errorf(rung.ErrUnavailable, "rung is stopping")
		}
		return err
	}
	if !started {
		w.WriteHeader(http.StatusOK)
	}
	if exit != nil {
		nd.send(wire.OutputFrame{Seq: last + 1, Exit: exitOut(exit)})
	}
	return nil
}

func (s *Server) signalProcess(w http.ResponseWriter, r *http.Request, c caller) error {
	sig := r.URL.Query().Get("signal")
	if sig == "" {
		sig = "SIGTERM"
	}
	if err := s.ctrl.SignalProcess(r.Context(), c.tenant, r.PathValue("id"), r.PathValue("pid"), sig); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// resizeProcess sets a PTY process's terminal size from a [rung.TermSize]
// body.
func (s *Server) resizeProcess(w http.ResponseWriter, r *http.Request, c caller) error {
	var size rung.TermSize
	if err := s.decode(w, r, &size); err != nil {
		return err
	}
	if err := s.ctrl.ResizeProcess(r.Context(), c.tenant, r.PathValue("id"), r.PathValue("pid"), size); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) processStdin(w http.ResponseWriter, r *http.Request, c caller) error {
	closeAfter, err := boolParam(r, "close")
	if err != nil {
		return err
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxJSONBytes))
	if err != nil {
		return rung.Errorf(rung.ErrTooLarge, "stdin chunk larger than %d bytes", s.cfg.MaxJSONBytes)
	}
	if err := s.ctrl.WriteProcessStdin(r.Context(), c.tenant, r.PathValue("id"), r.PathValue("pid"), data, closeAfter); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// waitReady answers 204 once the sandbox's container is ready, or 504
// after ?timeout_ms (default 30 s). Ready is either ?port accepting TCP
// connections inside it, or ?command exiting 0 there (run every
// ?interval_ms, default 250; each run is a journaled exec).
func (s *Server) waitReady(w http.ResponseWriter, r *http.Request, c caller) error {
	q := r.URL.Query()
	timeout, err := queryMS(q.Get("timeout_ms"), "timeout_ms", 30*time.Second)
	if err != nil {
		return err
	}
	switch port, command := q.Get("port"), q.Get("command"); {
	case (port == "") == (command == ""):
		return rung.Errorf(rung.ErrInvalid, "ready needs exactly one of port and command")
	case command != "":
		interval, err := queryMS(q.Get("interval_ms"), "interval_ms", 250*time.Millisecond)
		if err != nil {
			return err
		}
		err = s.ctrl.WaitCommand(r.Context(), c.tenant, r.PathValue("id"), command, interval, timeout)
		if err != nil {
			return err
		}
	default:
		n, err := strconv.Atoi(port)
		if err != nil {
			return rung.Errorf(rung.ErrInvalid, "port must be a number")
		}
		if err := s.ctrl.WaitPort(r.Context(), c.tenant, r.PathValue("id"), n, timeout); err != nil {
			return err
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// queryMS parses a query parameter of milliseconds, def when absent.
func queryMS(v, name string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, rung.Errorf(rung.ErrInvalid, "%s must be a number", name)
	}
	return msDuration(ms, name)
}
