package e2b

import (
	"net/http"
	"slices"
	"strings"
)

// corsMethods are the methods a browser may use on envd, as envd allows.
var corsMethods = []string{http.MethodHead, http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// corsExposed are the response headers a browser's script may read:
// Connect's (its gRPC-compatible error headers) and envd's own extras.
const corsExposed = "Grpc-Status, Grpc-Message, Grpc-Status-Details-Bin, Location, Cache-Control, X-Content-Type-Options"

// withCORS serves envd to browsers as envd does: any origin, the methods
// above, whatever request headers the preflight asks for (the SDK sends
// X-Access-Token, E2b-Sandbox-Id, Connect-Protocol-Version, ...); a
// preflight (OPTIONS with Access-Control-Request-Method) is answered
// here, 204, and never reaches a handler. Credentials (cookies) are not
// allowed: envd's auth is in headers.
func withCORS(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Origin") == "" {
			h.ServeHTTP(w, r)
			return
		}
		hd := w.Header()
		hd.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			hd.Add("Vary", "Access-Control-Request-Method")
			hd.Add("Vary", "Access-Control-Request-Headers")
			m := strings.ToUpper(r.Header.Get("Access-Control-Request-Method"))
			if slices.Contains(corsMethods, m) {
				hd.Set("Access-Control-Allow-Origin", "*")
				hd.Set("Access-Control-Allow-Methods", m)
				if rh := requestedHeaders(r.Header.Values("Access-Control-Request-Headers")); rh != "" {
					hd.Set("Access-Control-Allow-Headers", rh)
				}
				hd.Set("Access-Control-Max-Age", "7200")
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		hd.Set("Access-Control-Allow-Origin", "*")
		hd.Set("Access-Control-Expose-Headers", corsExposed)
		h.ServeHTTP(w, r)
	})
}

// requestedHeaders echoes a preflight's header names, keeping only
// well-formed names (tokens), at most 64 of them.
func requestedHeaders(vals []string) string {
	var out []string
	for _, v := range vals {
		for f := range strings.SplitSeq(v, ",") {
			f = strings.ToLower(strings.TrimSpace(f))
			if f == "" || len(out) == 64 || strings.ContainsFunc(f, func(c rune) bool { return !isTokenChar(c) }) {
				continue
			}
			out = append(out, f)
		}
	}
	return strings.Join(out, ", ")
}

func isTokenChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}
