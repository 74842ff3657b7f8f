package dashboard_test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"rung.dev/rung/dashboard"
)

func TestHandler(t *testing.T) {
	t.Parallel()
	h := dashboard.Handler()
	tests := []struct {
		name, method, path string
		status             int
		ctype, contains    string
	}{
		{"page", "GET", "/", 200, "text/html; charset=utf-8", `<script type="module" src="/ui/app.js">`},
		{"page by name", "GET", "/index.html", 200, "text/html; charset=utf-8", "<title>rung</title>"},
		{"module", "GET", "/ui/app.js", 200, "text/javascript; charset=utf-8", "export function showError"},
		{"stylesheet", "GET", "/ui/style.css", 200, "text/css; charset=utf-8", ".term"},
		{"head", "HEAD", "/ui/term.js", 200, "text/javascript; charset=utf-8", ""},
		{"unknown file", "GET", "/ui/nope.js", 404, "", ""},
		{"directory", "GET", "/ui/", 404, "", ""},
		{"escape", "GET", "/ui/../dashboard.go", 404, "", ""},
		{"post", "POST", "/", 405, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.status {
				t.Fatalf("%s %s = %d, want %d", tc.method, tc.path, rec.Code, tc.status)
			}
			// Every answer, errors included, carries the security headers.
			for k, want := range map[string]string{"Content-Security-Policy": dashboard.CSP, "X-Frame-Options": "DENY",
				"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
				if got := rec.Header().Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if tc.ctype != "" && rec.Header().Get("Content-Type") != tc.ctype {
				t.Errorf("Content-Type = %q, want %q", rec.Header().Get("Content-Type"), tc.ctype)
			}
			if !strings.Contains(rec.Body.String(), tc.contains) {
				t.Errorf("body does not contain %q", tc.contains)
			}
		})
	}
}

func TestNotModified(t *testing.T) {
	t.Parallel()
	h := dashboard.Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/app.js", nil))
	etag := rec.Header().Get("ETag")
	if etag == "" || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q", etag, rec.Header().Get("Cache-Control"))
	}
	req := httptest.NewRequest("GET", "/ui/app.js", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Errorf("conditional GET = %d with %d bytes, want 304 and none", rec.Code, rec.Body.Len())
	}
}

// TestNoMarkupFromStrings holds the dashboard's files to the rules that
// keep untrusted text out of markup, beside the CSP that would block what
// slipped through: no inline script, style or event handler in the HTML,
// and no script that turns a string into markup or code.
var scriptTag = regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`)

func TestNoMarkupFromStrings(t *testing.T) {
	t.Parallel()
	banned := map[string]*regexp.Regexp{
		".html": regexp.MustCompile(`<style|\sstyle=|\son[a-z]+=|javascript:`),
		".js":   regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|\.setHTML|srcdoc`),
		".css":  regexp.MustCompile(`@import|url\(\s*["']?(?:https?:|//)`),
	}
	n := 0
	err := filepath.WalkDir("ui", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		re, ok := banned[filepath.Ext(p)]
		if !ok {
			t.Errorf("%s: an asset of an unexpected kind", p)
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		if m := re.Find(b); m != nil {
			t.Errorf("%s holds %q", p, m)
		}
		if filepath.Ext(p) == ".html" {
			for _, m := range scriptTag.FindAllSubmatch(b, -1) {
				if !strings.Contains(string(m[1]), " src=") || strings.TrimSpace(string(m[2])) != "" {
					t.Errorf("%s: inline script %q", p, m[0])
				}
			}
		}
		return nil
	})
	if err != nil || n < 5 {
		t.Fatalf("walked %d files: %v", n, err)
	}
}
