package e2b

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

func (s *Server) routeAPI() {
	for _, rt := range []struct {
		pattern string
		h       func(http.ResponseWriter, *http.Request, caller) error
	}{
		{"POST /sandboxes", s.create},
		{"POST /v2/sandboxes", s.create},
		{"GET /sandboxes", s.list},
		{"GET /v2/sandboxes", s.list},
		{"GET /sandboxes/{id}", s.get},
		{"DELETE /sandboxes/{id}", s.kill},
		{"POST /sandboxes/{id}/timeout", s.setTimeout},
		{"POST /sandboxes/{id}/pause", s.pause},
		{"POST /sandboxes/{id}/resume", s.resume},
		{"POST /sandboxes/{id}/connect", s.connect},
		{"POST /v2/sandboxes/{id}/connect", s.connect},
		{"POST /sandboxes/{id}/snapshots", s.createSnapshot},
		{"GET /snapshots", s.listSnapshots},
		{"DELETE /templates/{id}", s.deleteTemplate},
		{"POST /sandboxes/{id}/fork", s.fork},
		{"PUT /sandboxes/{id}/network", s.updateNetwork},
		{"GET /sandboxes/{id}/metrics", s.metrics},
	} {
		s.api.Handle(rt.pattern, s.observe(rt.pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := s.apiCaller(r)
			if err == nil {
				err = rt.h(w, r, c)
			}
			if err != nil {
				s.writeAPIError(w, r, err)
			}
		})))
	}
	s.api.Handle("/", s.observe("unmatched", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, apiError{Code: http.StatusNotFound, Message: "rung does not serve " + r.Method + " " + clip(r.URL.Path) + " of the E2B API"})
	})))
}

// apiCaller reads X-API-KEY: any rung token of the tenant, E2B-form
// ("e2b_" + hex) for the SDK's format check.
func (s *Server) apiCaller(r *http.Request) (caller, error) {
	key := r.Header.Get("X-API-KEY")
	if key == "" {
		return caller{}, rung.Errorf(rung.ErrUnauthenticated, "missing X-API-KEY")
	}
	tenant, _, err := s.ctrl.Authenticate(r.Context(), key)
	if err != nil {
		return caller{}, rung.Errorf(rung.ErrUnauthenticated, "invalid API key")
	}
	return caller{tenant: tenant}, nil
}

// sandboxOut is E2B's Sandbox (create, connect, resume).
type sandboxOut struct {
	SandboxID          string  `json:"sandboxID"`
	TemplateID         string  `json:"templateID"`
	ClientID           string  `json:"clientID"`
	Alias              string  `json:"alias,omitempty"`
	EnvdVersion        string  `json:"envdVersion"`
	EnvdAccessToken    string  `json:"envdAccessToken"`
	TrafficAccessToken *string `json:"trafficAccessToken"`
	Domain             *string `json:"domain"`
}

// detailOut is E2B's SandboxDetail and ListedSandbox.
type detailOut struct {
	SandboxID   string            `json:"sandboxID"`
	TemplateID  string            `json:"templateID"`
	ClientID    string            `json:"clientID"`
	Alias       string            `json:"alias,omitempty"`
	Metadata    map[string]string `json:"metadata"`
	StartedAt   time.Time         `json:"startedAt"`
	EndAt       time.Time         `json:"endAt"`
	State       string            `json:"state"`
	CPUCount    int               `json:"cpuCount"`
	MemoryMB    int64             `json:"memoryMB"`
	DiskSizeMB  int64             `json:"diskSizeMB"`
	EnvdVersion string            `json:"envdVersion"`
	Lifecycle   lifecycleOut      `json:"lifecycle"`
}

// lifecycleOut is E2B's SandboxLifecycle: what the timeout does ("kill"
// or "pause") and whether traffic resumes a paused sandbox (never here).
type lifecycleOut struct {
	OnTimeout  string `json:"onTimeout"`
	AutoResume bool   `json:"autoResume"`
}

func templateOf(sb rung.Sandbox) string {
	if t := sb.Labels[templateLabel]; t != "" {
		return t
	}
	name, _, _ := strings.Cut(sb.Image, "@")
	return name
}

// sandboxOutOf answers create, connect and fork. The envd access token
// opens this sandbox's envd only (secure.go); the sandbox joins the ones
// signed /files URLs are checked against.
func (s *Server) sandboxOutOf(sb rung.Sandbox) sandboxOut {
	s.signers.add(sb.Tenant, sb.ID)
	out := sandboxOut{SandboxID: string(sb.ID), TemplateID: templateOf(sb), ClientID: "rung", EnvdVersion: EnvdVersion, EnvdAccessToken: s.accessToken(sb.Tenant, sb.ID)}
	if d := s.cfg.PreviewDomain; d != "" {
		out.Domain = &d
	}
	if sb.Labels[privateTrafficLabel] != "" {
		tok := s.trafficToken(sb.Tenant, sb.ID)
		out.TrafficAccessToken = &tok
	}
	return out
}

func detailOf(sb rung.Sandbox) detailOut {
	state := "running"
	if paused(sb) {
		state = "paused"
	}
	end := sb.CreatedAt.Add(sb.TTL)
	if sb.TTL == 0 {
		end = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	}
	d := detailOut{
		SandboxID: string(sb.ID), TemplateID: templateOf(sb), ClientID: "rung", Metadata: metadataOf(sb.Labels),
		StartedAt: sb.CreatedAt, EndAt: end, State: state,
		CPUCount: max(1, int(sb.Size.MilliCPU/1000)), MemoryMB: sb.Size.MemoryBytes >> 20, DiskSizeMB: sb.Size.DiskBytes >> 20,
		EnvdVersion: EnvdVersion, Lifecycle: lifecycleOut{OnTimeout: "kill"},
	}
	if sb.OnExpiry.Stop {
		d.Lifecycle.OnTimeout = "pause"
	}
	return d
}

// createIn is the part of E2B's NewSandbox rung reads. Volume and MCP
// fields are accepted and not applied.
type createIn struct {
	TemplateID string            `json:"templateID"`
	Metadata   map[string]string `json:"metadata"`
	EnvVars    map[string]string `json:"envVars"`
	Timeout    *int64            `json:"timeout"` // seconds
	// AllowInternetAccess and Network become the sandbox's network policy
	// (network.go); left out, rung's default (none) holds.
	AllowInternetAccess *bool      `json:"allow_internet_access"`
	Network             *networkIn `json:"network"`
	// AutoPause makes the timeout pause the sandbox instead of killing
	// it (lifecycle.go); AutoPauseMemory (default true) asks that pause to
	// keep memory, AutoResume that traffic resume it.
	AutoPause       *bool `json:"autoPause"`
	AutoPauseMemory *bool `json:"autoPauseMemory"`
	AutoResume      *struct {
		Enabled bool `json:"enabled"`
	} `json:"autoResume"`
}

// defaultTimeout is E2B's server-side default sandbox lifetime.
const defaultTimeout = 300 * time.Second

func decodeBody(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return rung.Errorf(rung.ErrInvalid, "read body: %v", err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return rung.Errorf(rung.ErrInvalid, "malformed JSON body: %v", err)
	}
	return nil
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, c caller) error {
	var in createIn
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	if in.TemplateID == "" {
		in.TemplateID = "base"
	}
	labels, err := labelsOf(in.Metadata)
	if err != nil {
		return rung.Errorf(rung.ErrInvalid, "%v", err)
	}
	labels[templateLabel] = in.TemplateID
	if in.Network != nil && in.Network.AllowPublicTraffic != nil && !*in.Network.AllowPublicTraffic {
		labels[privateTrafficLabel] = "true"
	}
	ttl := defaultTimeout
	if in.Timeout != nil {
		if *in.Timeout <= 0 {
			return rung.Errorf(rung.ErrInvalid, "timeout must be positive")
		}
		ttl = time.Duration(*in.Timeout) * time.Second
	}
	onExpiry, err := onTimeoutOf(in)
	if err != nil {
		return err
	}
	req := controller.CreateRequest{Labels: labels, Env: in.EnvVars, TTL: ttl, OnExpiry: onExpiry}
	if in.Network != nil && in.Network.AllowInternetAccess != nil {
		return rung.Errorf(rung.ErrInvalid, "allow_internet_access belongs at the top level of the body")
	}
	pol, err := policyOf(in.AllowInternetAccess, in.Network)
	if err != nil {
		return err
	}
	if pol != nil {
		req.Network = *pol
	}
	// A template is a snapshot of the tenant's (E2B's createSnapshot
	// returns its id to create from) or an image.
	if _, err := s.ctrl.GetSnapshot(r.Context(), c.tenant, in.TemplateID); err == nil {
		req.FromSnapshot = in.TemplateID
	} else if rung.Code(err) == rung.CodeNotFound && strings.HasPrefix(in.TemplateID, snapshotIDPrefix) {
		// A snapshot id that is not the tenant's (deleted, or another
		// tenant's) is no image name either.
		return rung.Errorf(rung.ErrNotFound, "template %q not found", clip(in.TemplateID))
	} else if rung.Code(err) == rung.CodeNotFound || rung.Code(err) == rung.CodeInvalid {
		req.Image = in.TemplateID
	} else {
		return err
	}
	if req.FromSnapshot == "" {
		// E2B's home is the workspace (see the package doc); a snapshot
		// already has it so.
		req.LinkWorkspace = home
	}
	sb, err := s.ctrl.Create(r.Context(), c.tenant, req)
	if err != nil {
		if req.Image != "" && rung.Code(err) == rung.CodeNotFound {
			return rung.Errorf(rung.ErrNotFound, "template %q not found", clip(in.TemplateID))
		}
		return err
	}
	writeJSON(w, http.StatusCreated, s.sandboxOutOf(sb))
	return nil
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, c caller) error {
	sb, err := s.ctrl.Get(r.Context(), c.tenant, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, detailOf(sb))
	return nil
}

// list serves both list endpoints, newest first (?order=asc for oldest):
// ?metadata= one URL-encoded "k=v&..." string, ?state= comma-joined,
// ?template=, ?startedAfter= (RFC 3339, inclusive), ?limit=, ?nextToken= (the x-next-token
// header of the previous page: a cursor after its last sandbox, which
// stays valid if that sandbox is killed).
func (s *Server) list(w http.ResponseWriter, r *http.Request, c caller) error {
	q := r.URL.Query()
	f := controller.ListFilter{}
	if md := q.Get("metadata"); md != "" {
		vals, err := url.ParseQuery(md)
		if err != nil {
			return rung.Errorf(rung.ErrInvalid, "malformed metadata filter")
		}
		want := map[string]string{}
		for k, v := range vals {
			want[k] = v[0]
		}
		if f.Labels, err = labelsOf(want); err != nil {
			return rung.Errorf(rung.ErrInvalid, "%v", err)
		}
	}
	states := map[string]bool{}
	for st := range strings.SplitSeq(q.Get("state"), ",") {
		if st != "" {
			states[st] = true
		}
	}
	// Newest first unless ?order=asc, as E2B lists.
	switch q.Get("order") {
	case "", "desc":
		f.Desc = true
	case "asc":
	default:
		return rung.Errorf(rung.ErrInvalid, "order must be asc or desc")
	}
	if v := q.Get("startedAfter"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return rung.Errorf(rung.ErrInvalid, "startedAfter must be an RFC 3339 time")
		}
		f.CreatedFrom = t
	}
	template := q.Get("template")
	limit := 100
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 {
			return rung.Errorf(rung.ErrInvalid, "limit must be a positive integer")
		}
		limit = min(n, 1000)
	}
	// Pages of the controller's list, by cursor, until this page is
	// full: the state filter (running takes in rung's ready and running)
	// is applied here.
	f.Limit, f.After = limit, q.Get("nextToken")
	out := []detailOut{}
	var last rung.Sandbox // the last one taken
	for {
		page, err := s.ctrl.ListPage(r.Context(), c.tenant, f)
		if err != nil {
			return err
		}
		for _, sb := range page.Sandboxes {
			d := detailOf(sb)
			if len(states) > 0 && !states[d.State] || template != "" && d.TemplateID != template {
				continue
			}
			if len(out) == limit {
				// One more matches: the next page starts after the last
				// one taken.
				w.Header().Set("x-next-token", controller.Cursor(last))
				page.Next = ""
				break
			}
			out, last = append(out, d), sb
		}
		if page.Next == "" {
			break
		}
		f.After = page.Next
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) kill(w http.ResponseWriter, r *http.Request, c caller) error {
	// Only the caller's own sandbox's processes and watchers are dropped.
	if _, err := s.ctrl.Get(r.Context(), c.tenant, r.PathValue("id")); err != nil {
		return err
	}
	s.watches.dropSandbox(r.PathValue("id"))
	s.signers.remove(rung.SandboxID(r.PathValue("id")))
	// The delete ends the sandbox's commands itself, so that they see
	// it begun and their streams are cut (process.go), as envd's go
	// with its VM; the table forgets them after.
	err := s.ctrl.Delete(r.Context(), c.tenant, r.PathValue("id"))
	s.procs.dropSandbox(r.PathValue("id"))
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) setTimeout(w http.ResponseWriter, r *http.Request, c caller) error {
	var in struct {
		Timeout int64 `json:"timeout"` // seconds
	}
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	d := time.Duration(in.Timeout) * time.Second
	if _, err := s.ctrl.Update(r.Context(), c.tenant, r.PathValue("id"), controller.UpdateRequest{ExpiresIn: &d}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// connect answers 200 for a running sandbox and resumes a paused one
// (201); a timeout in the body extends the sandbox's end to that long
// from now, never shortens it (as E2B's connect).
func (s *Server) connect(w http.ResponseWriter, r *http.Request, c caller) error {
	var in struct {
		Timeout *int64 `json:"timeout"`
	}
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	id := r.PathValue("id")
	sb, err := s.ctrl.Get(r.Context(), c.tenant, id)
	if err != nil {
		return err
	}
	if in.Timeout != nil && *in.Timeout > 0 {
		d := time.Duration(*in.Timeout) * time.Second
		if sb.TTL != 0 && time.Now().Add(d).After(sb.CreatedAt.Add(sb.TTL)) {
			if sb, err = s.ctrl.Update(r.Context(), c.tenant, id, controller.UpdateRequest{ExpiresIn: &d}); err != nil {
				return err
			}
		}
	}
	status := http.StatusOK
	if paused(sb) {
		if sb, err = s.rearm(r.Context(), c.tenant, sb, in.Timeout); err != nil {
			return err
		}
		if sb, err = s.resumeSandbox(r.Context(), c.tenant, sb); err != nil {
			return err
		}
		status = http.StatusCreated
	}
	writeJSON(w, status, s.sandboxOutOf(sb))
	return nil
}
