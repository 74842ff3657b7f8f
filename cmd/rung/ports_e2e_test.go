package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// echoUpgrade is a server in the container that records each request's
// headers in /tmp/hdrs, answers an Upgrade with 101 and then echoes the
// connection's bytes back (what a WebSocket server does at the byte
// level, without the framing).
const echoUpgrade = `nc -ll -p 9000 -e sh -c '
while IFS= read -r l; do l=${l%$(printf "\r")}; echo "$l" >> /tmp/hdrs; [ -z "$l" ] && break; done
printf "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
exec cat'`

// The ports API: path-based and host-based access to a server in the
// container with the tenant's token; a share URL that needs none, moves
// its token into a cookie, and stops working when revoked; an Upgrade
// carried both ways; rung's credentials never reach the sandbox; another
// tenant, no token, a closed port and a forged share are refused.
func TestPorts(t *testing.T) {
	c, d, addr := startContainerDaemonWith(t, DaemonConfig{PreviewDomain: "preview.test"})
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := string(sb.ID)
	if _, err := c.WriteFile(ctx, id, "/workspace/a.txt", strings.NewReader("hello port\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"exec httpd -f -p 8080 -h /workspace", echoUpgrade} {
		if _, err := c.StartProcess(ctx, id, client.ProcessRequest{Command: cmd}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []int{8080, 9000} {
		if err := c.WaitPort(ctx, id, p, 20*time.Second); err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(url, token string, cookies ...*http.Cookie) (int, string, *http.Response) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for _, ck := range cookies {
			req.AddCookie(ck)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp
	}

	url := c.PortURL(id, 8080) + "a.txt"
	if code, body, _ := get(url, d.Token); code != 200 || body != "hello port\n" {
		t.Errorf("GET through the ports API = %d %q", code, body)
	}
	if code, _, _ := get(url, ""); code != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", code)
	}
	if _, err := c.CreateTenant(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	other, err := c.CreateToken(ctx, "other", false)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, _ := get(url, other.Token); code != http.StatusNotFound {
		t.Errorf("another tenant's token: %d, want 404", code)
	}
	if code, body, _ := get(c.PortURL(id, 8099), d.Token); code != http.StatusBadGateway || !strings.Contains(body, "8099") {
		t.Errorf("a closed port: %d %s, want 502 naming it", code, body)
	}

	// Host-based, as a browser on a preview domain reaches it.
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/a.txt", nil)
	req.Host = fmt.Sprintf("8080-%s.preview.test", strings.TrimPrefix(id, "sbx_"))
	req.Header.Set("Authorization", "Bearer "+d.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "hello port\n" {
		t.Errorf("GET on the preview host = %d %q", resp.StatusCode, b)
	}

	// A share: no token needed; the first request trades the URL's token
	// for a cookie.
	sh, err := c.SharePort(ctx, id, 8080, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sh.URL, req.Host) || !strings.Contains(sh.URL, "rung_share=") {
		t.Errorf("share URL %q: want the preview host and a token", sh.URL)
	}
	shareTok := sh.URL[strings.Index(sh.URL, "rung_share=")+len("rung_share="):]
	pathShare := c.PortURL(id, 8080) + "a.txt?rung_share=" + shareTok
	code, _, resp := get(pathShare, "")
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "rung_share" {
			cookie = ck
		}
	}
	if code != http.StatusFound || cookie == nil || strings.Contains(resp.Header.Get("Location"), "rung_share") {
		t.Fatalf("share URL: %d, cookie %v, location %q; want 302 to a URL without the token, with a cookie", code, cookie, resp.Header.Get("Location"))
	}
	if code, body, _ := get(c.PortURL(id, 8080)+"a.txt", "", cookie); code != 200 || body != "hello port\n" {
		t.Errorf("with the share's cookie: %d %q", code, body)
	}
	if code, _, _ := get(c.PortURL(id, 9000), "", cookie); code != http.StatusUnauthorized {
		t.Errorf("the share's cookie on another port: %d, want 401", code)
	}
	forged := shareTok[:len(shareTok)-2] + "xx"
	if code, _, _ := get(c.PortURL(id, 8080)+"a.txt?rung_share="+forged, ""); code != http.StatusUnauthorized {
		t.Errorf("a forged share token: %d, want 401", code)
	}
	if err := c.RevokeShare(ctx, sh.ID); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := get(c.PortURL(id, 8080)+"a.txt", "", cookie); code != http.StatusUnauthorized {
		t.Errorf("a revoked share: %d, want 401", code)
	}
	shs, err := c.Shares(ctx, id)
	if err != nil || len(shs) != 1 || shs[0].RevokedAt == nil || shs[0].URL != "" {
		t.Errorf("Shares = %+v, %v: want one, revoked, without its URL", shs, err)
	}
	if err := c.RevokeShare(ctx, "shr_aaaaaaaaaaaaaaaaaaaaaaaaaa"); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("revoke an unknown share: %v", err)
	}

	// An Upgrade through the proxy carries bytes both ways, and the
	// server saw neither rung's token nor its cookie.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "GET /v1/sandboxes/%s/ports/9000/ws?x=1 HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nCookie: rung_share=abc; app=1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", id, addr, d.Token)
	br := bufio.NewReader(conn)
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade through the proxy: %d", resp.StatusCode)
	}
	io.WriteString(conn, "ping over the tunnel\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "ping over the tunnel\n" {
		t.Errorf("echo after the upgrade: %q, %v", line, err)
	}
	conn.Close()
	rc, err := c.ReadFile(ctx, id, "/tmp/hdrs")
	if err != nil {
		t.Fatal(err)
	}
	hdrs, _ := io.ReadAll(rc)
	rc.Close()
	h := strings.ToLower(string(hdrs))
	if !strings.Contains(h, "get /ws?x=1 http/1.1") || !strings.Contains(h, "host: localhost:9000") || !strings.Contains(h, "app=1") {
		t.Errorf("the server saw:\n%s\nwant the path, query, Host localhost:9000 and the app's own cookie", hdrs)
	}
	if strings.Contains(h, "authorization") || strings.Contains(h, "rung_share") || strings.Contains(h, strings.ToLower(d.Token)) {
		t.Errorf("rung's credentials reached the sandbox:\n%s", hdrs)
	}
}
