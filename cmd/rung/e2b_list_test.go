package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"rung.dev/rung/client"
)

// TestE2BListPages pages through the E2B list as the SDK's paginator
// does (limit, then nextToken from the x-next-token header): every
// sandbox once, in creation order, with the metadata filter applied
// before the page is cut; killing the sandbox a token points at between
// pages skips nothing; a malformed token is a 400.
func TestE2BListPages(t *testing.T) {
	d, addr := startDaemonWith(t, DaemonConfig{Data: t.TempDir(), NoContainers: true})
	c := client.New(addr, client.WithToken(d.Token))
	if _, err := c.CreateTenant(t.Context(), "acme"); err != nil {
		t.Fatal(err)
	}
	key, err := c.CreateE2BKey(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	e := e2bWire{t: t, base: "http://" + addr, key: key.Token}
	var ids []string // the "even" ones, in creation order
	for i := range 7 {
		status, b := e.api("POST", "/v2/sandboxes", map[string]any{"templateID": "lite", "allow_internet_access": false,
			"metadata": map[string]string{"kind": []string{"even", "odd"}[i%2]}})
		if status != http.StatusCreated {
			t.Fatalf("create: %d %s", status, b)
		}
		var sb struct{ SandboxID string }
		json.Unmarshal(b, &sb)
		if i%2 == 0 {
			ids = append(ids, sb.SandboxID)
		}
	}
	page := func(token string) ([]string, string) {
		t.Helper()
		q := url.Values{"limit": {"2"}, "metadata": {"kind=even"}}
		if token != "" {
			q.Set("nextToken", token)
		}
		req, _ := http.NewRequestWithContext(t.Context(), "GET", e.base+"/e2b/api/v2/sandboxes?"+q.Encode(), nil)
		req.Header.Set("X-API-KEY", e.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("list: %d %s", resp.StatusCode, b)
		}
		var list []struct{ SandboxID string }
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatalf("list: %s: %v", b, err)
		}
		var got []string
		for _, sb := range list {
			got = append(got, sb.SandboxID)
		}
		return got, resp.Header.Get("x-next-token")
	}
	first, next := page("")
	if !slices.Equal(first, ids[:2]) || next == "" {
		t.Fatalf("first page %v, token %q; want %v and a token", first, next, ids[:2])
	}
	// The sandbox the token follows is killed: the next page still
	// starts right after it.
	if status, b := e.api("DELETE", "/sandboxes/"+ids[1], nil); status != http.StatusNoContent {
		t.Fatalf("kill: %d %s", status, b)
	}
	second, next := page(next)
	if !slices.Equal(second, ids[2:4]) || next != "" {
		t.Fatalf("second page %v, token %q; want %v and no token (the end)", second, next, ids[2:4])
	}
	status, b := e.api("GET", "/v2/sandboxes?limit=2&nextToken="+url.QueryEscape(fmt.Sprint("x", ids[0])), nil)
	if status != http.StatusBadRequest {
		t.Errorf("a malformed nextToken: %d %s, want 400", status, b)
	}
}
