package e2b

import (
	"bytes"
	"compress/gzip"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

// fileError writes an error of envd's /files routes: the status alone
// matters to the SDK (404 is FileNotFoundError), with a JSON message.
func (s *Server) fileError(w http.ResponseWriter, r *http.Request, err error) {
	code := rung.Code(err)
	if code == rung.CodeInternal {
		s.log.ErrorContext(r.Context(), "e2b files request failed", "method", r.Method, "err", err)
	}
	status := statusOf[code]
	if code == rung.CodeLimit || code == rung.CodeTooLarge {
		status = http.StatusInsufficientStorage // what envd answers when the disk is full
	}
	writeJSON(w, status, apiError{Code: status, Message: message(err)})
}

// readFile is GET /files?path=: the file's bytes, gzip-encoded when the
// client accepts it (files.read with gzip: true; Node's fetch always
// does) and the file is at least compressMinBytes long.
func (s *Server) readFile(w http.ResponseWriter, r *http.Request) {
	c, err := s.filesCaller(r, "read")
	if err != nil {
		s.fileError(w, r, err)
		return
	}
	var f io.ReadCloser
	var size int64
	if p := userPath(r.URL.Query().Get("path"), r.URL.Query().Get("username")); inView(p) {
		var fi controller.FileInfo
		f, fi, err = s.ctrl.ReadFile(r.Context(), c.tenant, c.sandbox, p)
		size = fi.Size
	} else {
		var data []byte
		data, err = s.readOutside(r.Context(), c, p) // outside.go
		f, size = io.NopCloser(bytes.NewReader(data)), int64(len(data))
	}
	if err != nil {
		s.fileError(w, r, err)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Vary", "Accept-Encoding")
	if size >= compressMinBytes && acceptsGzip(r.Header) {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzipWriters.Get().(*gzip.Writer)
		zw.Reset(w)
		io.Copy(zw, f)
		zw.Close()
		zw.Reset(io.Discard) // drop w
		gzipWriters.Put(zw)
		return
	}
	io.Copy(w, f)
}

// compressMinBytes is the smallest body envd compresses: a file readFile
// sends, a Connect message (server.go). A smaller one fits in one TCP
// segment either way, so gzip saves no round trip and costs both ends
// CPU: through Node's fetch a gzipped 1 KiB read took 0.8-0.9 ms where
// the plain one took 0.4, and compressing a Start's three small events
// took 15% of the daemon's CPU for a Go client (docs/BENCHMARKS.md).
const compressMinBytes = 1400

// gzipWriters keeps readFile's compressors: each holds about a
// megabyte of deflate state, too much to make per request.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(io.Discard) }}

// acceptsGzip reports whether h's Accept-Encoding lists gzip without
// refusing it (q=0).
func acceptsGzip(h http.Header) bool {
	for _, v := range h.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
				continue
			}
			q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
			if !ok {
				return true
			}
			w, err := strconv.ParseFloat(q, 64)
			return err != nil || w > 0 // a weight we cannot read does not refuse it
		}
	}
	return false
}

// writtenEntry is one entry of POST /files's answer.
type writtenEntry struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
	// Metadata is what the file's metadata is after the upload, read
	// back (metadata.go); left out when it has none, as envd does.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// writeFiles is POST /files in two of envd's body formats: multipart
// (each part's filename its path unless ?path= names the one file) and
// application/octet-stream (?path= required; Content-Encoding gzip
// allowed). Files are written 0644, directories made 0755, both the
// sandbox user's. X-Metadata-* headers replace each written file's
// metadata (metadata.go); bad metadata is refused before anything is
// written.
func (s *Server) writeFiles(w http.ResponseWriter, r *http.Request) {
	c, err := s.filesCaller(r, "write")
	if err != nil {
		s.fileError(w, r, err)
		return
	}
	md, err := uploadMetadata(r.Header)
	if err != nil {
		s.fileError(w, r, err)
		return
	}
	body := io.Reader(r.Body)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			s.fileError(w, r, rung.Errorf(rung.ErrInvalid, "malformed gzip body"))
			return
		}
		defer zr.Close()
		body = zr
	}
	qpath, user := r.URL.Query().Get("path"), r.URL.Query().Get("username")
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	out := []writtenEntry{}
	write := func(p string, src io.Reader) error {
		if p = userPath(p, user); !inView(p) {
			return s.writeOutsideFrom(r.Context(), c, p, user, md, src, &out)
		}
		req := controller.WriteRequest{Path: p, MaxBytes: s.cfg.MaxFileBytes,
			Attrs: &controller.Attrs{Prefix: metadataPrefix, Values: md}}
		fi, err := s.ctrl.WriteFile(r.Context(), c.tenant, c.sandbox, req, src)
		if err != nil {
			return err
		}
		out = append(out, writtenEntry{Name: path.Base(fi.Path), Type: "file", Path: e2bPath(fi.Path), Metadata: fileMetadata(fi.Attrs)})
		return nil
	}
	switch mt {
	case "multipart/form-data":
		mr := multipart.NewReader(body, params["boundary"])
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				s.fileError(w, r, rung.Errorf(rung.ErrInvalid, "malformed multipart body"))
				return
			}
			p := partPath(part)
			if qpath != "" {
				p = qpath
			}
			if p == "" {
				s.fileError(w, r, rung.Errorf(rung.ErrInvalid, "a part without a filename and no path parameter"))
				return
			}
			if err := write(p, part); err != nil {
				s.fileError(w, r, err)
				return
			}
		}
	default:
		if qpath == "" {
			s.fileError(w, r, rung.Errorf(rung.ErrInvalid, "path parameter required"))
			return
		}
		if err := write(qpath, body); err != nil {
			s.fileError(w, r, err)
			return
		}
	}
	if len(out) == 0 {
		s.fileError(w, r, rung.Errorf(rung.ErrInvalid, "no file in the request"))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// partPath is a multipart part's filename as the client sent it: the
// SDK's writeFiles sends each file's path there ("dir/a.txt",
// "/tmp/b.txt"), which mime/multipart's FileName cuts to its base name.
func partPath(part *multipart.Part) string {
	_, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
	if err != nil {
		return ""
	}
	return params["filename"]
}
