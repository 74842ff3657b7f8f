package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/wire"
)

// Ports: HTTP and WebSocket traffic from an authenticated client to a TCP
// port inside a sandbox's container, path-based
// (/v1/sandboxes/{id}/ports/{port}/...) and, with a preview domain,
// host-based ({port}-{id}.{domain}). The daemon reaches the port through
// the sandbox's agent (controller.DialPort), so it works in every network
// mode and under every runtime. A caller is a bearer token of the
// sandbox's tenant or a share token (a signed, expiring, revocable URL);
// neither ever reaches the sandbox: the proxy removes rung's
// Authorization header, its cookie and its query parameter.

// trafficTokenHeader carries an E2B sandbox's traffic access token
// (Config.TrafficToken).
const trafficTokenHeader = "E2b-Traffic-Access-Token"

// shareCookie carries a share token after the first request.
const shareCookie = "rung_share"

// portMethods are the methods the path-based route proxies.
var portMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// portTarget is where one proxied request goes.
type portTarget struct {
	tenant rung.TenantID
	id     rung.SandboxID
	port   int
}

type portTargetKey struct{}

// newPortProxy returns the reverse proxy of the ports API: one transport
// whose connections are tunnels to sandboxes' ports, pooled per sandbox
// and port (the URL's host names both).
func (s *Server) newPortProxy() *httputil.ReverseProxy {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			t, _ := ctx.Value(portTargetKey{}).(portTarget)
			if t.id == "" {
				return nil, errors.New("port proxy: no target")
			}
			return s.ctrl.DialPort(ctx, t.tenant, string(t.id), t.port)
		},
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	return &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			t := pr.In.Context().Value(portTargetKey{}).(portTarget)
			pr.SetXForwarded()
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = fmt.Sprintf("p%d.%s", t.port, t.id)
			// Dev servers answer "localhost" (Vite, webpack refuse
			// other hosts by default).
			pr.Out.Host = "localhost:" + strconv.Itoa(t.port)
			scrubRungCredentials(pr.Out)
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			d := s.errorDetail(r.Context(), err)
			status := statusOf[d.Code]
			if errors.Is(err, rung.ErrUnavailable) {
				status = http.StatusBadGateway
			}
			writeJSON(w, status, wire.ErrorBody{Error: d})
		},
	}
}

// scrubRungCredentials removes what authenticated the caller to rung
// from a request on its way into a sandbox.
func scrubRungCredentials(r *http.Request) {
	if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer rung_") || strings.HasPrefix(a, "Bearer e2b_") {
		r.Header.Del("Authorization") // a rung token or an E2B key: the tenant's
	}
	r.Header.Del(trafficTokenHeader)
	if cs := r.Cookies(); len(cs) > 0 {
		r.Header.Del("Cookie")
		for _, c := range cs {
			if c.Name != shareCookie {
				r.AddCookie(c)
			}
		}
	}
	if q := r.URL.Query(); q.Has(controller.ShareTokenParam) {
		q.Del(controller.ShareTokenParam)
		r.URL.RawQuery = q.Encode()
	}
}

// proxyPort serves the path-based route.
func (s *Server) proxyPort(w http.ResponseWriter, r *http.Request, _ caller) error {
	port, err := parsePort(r.PathValue("port"))
	if err != nil {
		return err
	}
	ref := r.PathValue("id")
	prefix := "/v1/sandboxes/" + ref + "/ports/" + strconv.Itoa(port) + "/"
	return s.servePort(w, r, ref, port, "/"+r.PathValue("path"), prefix)
}

func parsePort(v string) (int, error) {
	port, err := strconv.Atoi(v)
	if err != nil || port <= 0 || port > 65535 {
		return 0, rung.Errorf(rung.ErrInvalid, "port %q: want 1 to 65535", clip(v))
	}
	return port, nil
}

// servePort authenticates a request for ref's port, then proxies it with
// its path replaced by path. cookiePath scopes the share cookie.
func (s *Server) servePort(w http.ResponseWriter, r *http.Request, ref string, port int, path, cookiePath string) error {
	id := rung.SandboxID(ref)
	var tenant rung.TenantID
	q := r.URL.Query()
	tok := q.Get(controller.ShareTokenParam)
	fromQuery := tok != ""
	if !fromQuery {
		if c, err := r.Cookie(shareCookie); err == nil {
			tok = c.Value
		}
	}
	rungBearer := strings.HasPrefix(r.Header.Get("Authorization"), "Bearer rung_")
	if traffic := r.Header.Get(trafficTokenHeader); traffic != "" {
		// E2B's traffic access token opens every port of the one sandbox
		// it was made for; a wrong one is 403, as E2B answers.
		var t rung.TenantID
		ok := false
		if s.cfg.TrafficToken != nil && id.Valid() {
			t, ok = s.cfg.TrafficToken(traffic, id)
		}
		if !ok {
			return rung.Errorf(rung.ErrPermission, "invalid traffic access token for sandbox %s", clip(ref))
		}
		tenant = t
	} else if tok != "" && id.Valid() && !rungBearer {
		t, err := s.ctrl.CheckShare(r.Context(), tok, id, port)
		if err != nil {
			return err
		}
		tenant = t
		if fromQuery {
			// Keep the token out of the app's logs, its links and the
			// browser's history: a cookie from now on.
			http.SetCookie(w, &http.Cookie{Name: shareCookie, Value: tok, Path: cookiePath, HttpOnly: true,
				SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil})
			q.Del(controller.ShareTokenParam)
			u := *r.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusFound)
			return nil
		}
	} else {
		c, err := s.authenticate(r)
		if err != nil {
			return err
		}
		tenant = c.tenant
		sb, err := s.ctrl.Get(r.Context(), tenant, ref)
		if err != nil {
			return err
		}
		id = sb.ID
	}
	r2 := r.WithContext(context.WithValue(r.Context(), portTargetKey{}, portTarget{tenant: tenant, id: id, port: port}))
	r2.URL = &url.URL{Path: path, RawQuery: r.URL.RawQuery}
	s.ports.ServeHTTP(w, r2)
	return nil
}

// previewTarget parses a preview host, {port}-{id}.{domain} (the id
// without its "sbx_" prefix: host names have no underscores; with it, as
// the E2B SDK's getHost names it, is accepted too).
func (s *Server) previewTarget(host string) (rung.SandboxID, int, bool) {
	if s.cfg.PreviewDomain == "" {
		return "", 0, false
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	label, ok := strings.CutSuffix(strings.ToLower(host), "."+s.cfg.PreviewDomain)
	if !ok {
		return "", 0, false
	}
	p, rest, ok := strings.Cut(label, "-")
	if !ok {
		return "", 0, false
	}
	port, err := strconv.Atoi(p)
	// The E2B SDK's getHost keeps the prefix: {port}-sbx_{rest}.{domain}.
	id := rung.SandboxID("sbx_" + strings.TrimPrefix(rest, "sbx_"))
	if err != nil || port <= 0 || port > 65535 || !id.Valid() {
		return "", 0, false
	}
	return id, port, true
}

// servePreview serves a request to a preview host.
func (s *Server) servePreview(w http.ResponseWriter, r *http.Request, id rung.SandboxID, port int) {
	rid := newRequestID()
	r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, rid))
	w.Header().Set("X-Request-Id", rid)
	if err := s.servePort(w, r, string(id), port, r.URL.Path, "/"); err != nil {
		s.writeError(w, r, err)
	}
}

// shareURL is where a share's token opens port of sandbox id: its
// preview host when the server has a preview domain, else the
// path-based route on the host the request came to.
func (s *Server) shareURL(r *http.Request, id rung.SandboxID, port int, token string) string {
	q := url.Values{controller.ShareTokenParam: {token}}.Encode()
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	if s.cfg.PreviewDomain != "" {
		return fmt.Sprintf("%s://%d-%s.%s/?%s", scheme, port, strings.TrimPrefix(string(id), "sbx_"), s.cfg.PreviewDomain, q)
	}
	base := s.cfg.PublicURL
	if base == "" {
		base = scheme + "://" + r.Host
	}
	return fmt.Sprintf("%s/v1/sandboxes/%s/ports/%d/?%s", strings.TrimSuffix(base, "/"), id, port, q)
}

func shareOut(sh controller.Share) wire.Share {
	out := wire.Share{ID: sh.ID, Sandbox: sh.Sandbox, Port: sh.Port, CreatedAt: sh.CreatedAt, ExpiresAt: sh.ExpiresAt}
	if !sh.RevokedAt.IsZero() {
		at := sh.RevokedAt
		out.RevokedAt = &at
	}
	return out
}

func (s *Server) sharePort(w http.ResponseWriter, r *http.Request, c caller) error {
	var req wire.ShareRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	port := req.Port
	ttl, err := msDuration(req.TTLMS, "ttl_ms")
	if err != nil {
		return err
	}
	sh, err := s.ctrl.SharePort(r.Context(), c.tenant, r.PathValue("id"), port, ttl)
	if err != nil {
		return err
	}
	out := shareOut(sh)
	out.URL = s.shareURL(r, sh.Sandbox, port, sh.Token)
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listShares(w http.ResponseWriter, r *http.Request, c caller) error {
	shs, err := s.ctrl.ListShares(r.Context(), c.tenant, r.PathValue("id"))
	if err != nil {
		return err
	}
	out := wire.ShareList{Shares: make([]wire.Share, len(shs))}
	for i, sh := range shs {
		out.Shares[i] = shareOut(sh)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) revokeShare(w http.ResponseWriter, r *http.Request, c caller) error {
	if err := s.ctrl.RevokeShare(r.Context(), c.tenant, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
