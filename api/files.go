package api

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"strconv"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/wire"
)

// pathParam returns the required ?path= parameter.
func pathParam(r *http.Request) (string, error) {
	p := r.URL.Query().Get("path")
	if p == "" {
		return "", rung.Errorf(rung.ErrInvalid, "missing ?path=")
	}
	return p, nil
}

func boolParam(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, rung.Errorf(rung.ErrInvalid, "%s=%q: want true or false", name, clip(v))
	}
	return b, nil
}

func (s *Server) readFile(w http.ResponseWriter, r *http.Request, c caller) error {
	p, err := pathParam(r)
	if err != nil {
		return err
	}
	rc, info, err := s.ctrl.ReadFile(r.Context(), c.tenant, r.PathValue("id"), p)
	if err != nil {
		return err
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(info.Size, 10))
	w.Header().Set("X-Rung-Mode", info.Mode)
	w.WriteHeader(http.StatusOK)
	io.Copy(w, rc) // a failure midway can only cut the body short now
	return nil
}

// writeFile stores the raw request body (streamed, never buffered whole)
// at ?path=, with ?mode= (octal, default 0644).
func (s *Server) writeFile(w http.ResponseWriter, r *http.Request, c caller) error {
	p, err := pathParam(r)
	if err != nil {
		return err
	}
	var mode uint64 = 0o644
	if v := r.URL.Query().Get("mode"); v != "" {
		if mode, err = strconv.ParseUint(v, 8, 32); err != nil || mode > 0o777 {
			return rung.Errorf(rung.ErrInvalid, "mode=%q: want octal permission bits such as 0644", clip(v))
		}
	}
	if r.ContentLength > s.cfg.MaxFileBytes {
		return &rung.LimitError{Limit: rung.LimitFileBytes, Max: s.cfg.MaxFileBytes, TooLarge: true}
	}
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxFileBytes)
	info, err := s.ctrl.WriteFile(r.Context(), c.tenant, r.PathValue("id"), controller.WriteRequest{Path: p, Mode: fs.FileMode(mode), MaxBytes: s.cfg.MaxFileBytes}, body)
	if err != nil {
		return tooLarge(err, s.cfg.MaxFileBytes)
	}
	writeJSON(w, http.StatusOK, fileOut(info))
	return nil
}

func tooLarge(err error, max int64) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &rung.LimitError{Limit: rung.LimitFileBytes, Max: max, TooLarge: true}
	}
	return err
}

func (s *Server) removeFile(w http.ResponseWriter, r *http.Request, c caller) error {
	p, err := pathParam(r)
	if err != nil {
		return err
	}
	rec, err := boolParam(r, "recursive")
	if err != nil {
		return err
	}
	if err := s.ctrl.RemoveFile(r.Context(), c.tenant, r.PathValue("id"), p, rec); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) statFile(w http.ResponseWriter, r *http.Request, c caller) error {
	p, err := pathParam(r)
	if err != nil {
		return err
	}
	info, err := s.ctrl.Stat(r.Context(), c.tenant, r.PathValue("id"), p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, fileOut(info))
	return nil
}

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request, c caller) error {
	p := r.URL.Query().Get("path")
	if p == "" {
		p = "/workspace"
	}
	rec, err := boolParam(r, "recursive")
	if err != nil {
		return err
	}
	list, err := s.ctrl.ListFiles(r.Context(), c.tenant, r.PathValue("id"), p, rec)
	if err != nil {
		return err
	}
	out := wire.FileList{Files: make([]wire.FileInfo, len(list))}
	for i, f := range list {
		out.Files[i] = fileOut(f)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) mkdir(w http.ResponseWriter, r *http.Request, c caller) error {
	var req MkdirRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if err := s.ctrl.Mkdir(r.Context(), c.tenant, r.PathValue("id"), req.Path, req.Parents); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) move(w http.ResponseWriter, r *http.Request, c caller) error {
	var req MoveRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if err := s.ctrl.Move(r.Context(), c.tenant, r.PathValue("id"), req.From, req.To); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) downloadTar(w http.ResponseWriter, r *http.Request, c caller) error {
	p := r.URL.Query().Get("path")
	if p == "" {
		p = "/workspace"
	}
	// Check first, so that an error is a proper response, not a cut stream.
	info, err := s.ctrl.Stat(r.Context(), c.tenant, r.PathValue("id"), p)
	if err != nil {
		return err
	}
	if info.Type != "dir" {
		return rung.Errorf(rung.ErrInvalid, "tar %s: not a directory", info.Path)
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(http.StatusOK)
	if err := s.ctrl.ExportTar(r.Context(), c.tenant, r.PathValue("id"), p, w); err != nil {
		s.log.WarnContext(r.Context(), "tar download cut short", "err", err)
	}
	return nil
}

func (s *Server) uploadTar(w http.ResponseWriter, r *http.Request, c caller) error {
	p, err := pathParam(r)
	if err != nil {
		return err
	}
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxFileBytes)
	n, err := s.ctrl.ImportTar(r.Context(), c.tenant, r.PathValue("id"), p, body, s.cfg.MaxFileBytes)
	if err != nil {
		return tooLarge(err, s.cfg.MaxFileBytes)
	}
	writeJSON(w, http.StatusOK, wire.UntarResult{Entries: n})
	return nil
}
