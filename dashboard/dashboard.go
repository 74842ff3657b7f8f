// Package dashboard is rung's web dashboard: a page of plain HTML, CSS
// and ES modules, embedded in the binary, that runs in the user's browser
// as one more client of the /v1 API, with the bearer token the user logs
// in with. It serves files only: no endpoint of its own reads or changes
// anything, so it needs no authentication and grants nothing.
//
// Every response carries a strict Content-Security-Policy (same origin
// only, no inline script or style, no framing), so text from the API
// (file names, journal entries, command output), which the scripts put
// into the page as text nodes only, cannot run as script even if a bug
// rendered it as markup.
package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"time"
)

//go:embed ui
var files embed.FS

// CSP is the Content-Security-Policy of every dashboard response: scripts,
// styles, images and connections from the page's own origin only (the
// API, its event streams and the exec WebSocket are same-origin), nothing
// inline, no plugins, no framing, no <base> and no form posts elsewhere.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// asset is one embedded file, read once.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

// Handler serves the dashboard: the page at "/" (and "/index.html") and
// its assets under "/ui/". Any other path, and any method but GET and
// HEAD, is 404 or 405. The assets are read from the binary once; each
// carries an ETag (a hash of its bytes), and a request that names it in
// If-None-Match gets 304, so a reload costs one round trip per file.
// It is safe for concurrent use.
func Handler() http.Handler {
	assets := map[string]asset{}
	err := fs.WalkDir(files, "ui", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		assets["/"+p] = asset{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		// The files are compiled in: a failure here is a broken build.
		panic("dashboard: read embedded files: " + err.Error())
	}
	assets["/"] = assets["/ui/index.html"]
	assets["/index.html"] = assets["/ui/index.html"]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		a, ok := assets[r.URL.Path]
		if !ok {
			http.Error(w, "404 not found", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Content-Type", a.ctype)
		h.Set("ETag", a.etag)
		// The page and its modules change with the binary: revalidate
		// each load (a 304 when unchanged) rather than guess a lifetime.
		h.Set("Cache-Control", "no-cache")
		// ServeContent answers If-None-Match against the ETag (304).
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
	})
}
