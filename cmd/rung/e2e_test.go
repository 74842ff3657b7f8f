package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/shell/tools"
)

// startDaemon runs the daemon in-process, wired exactly as `rung serve`
// wires it, on a loopback port. It returns its address and admin token.
func startDaemon(t testing.TB, data string) (string, string) {
	t.Helper()
	_, addr, token := startDaemonD(t, data)
	return addr, token
}

// startDaemonD is startDaemon, also returning the daemon.
func startDaemonD(t testing.TB, data string) (*Daemon, string, string) {
	t.Helper()
	d, addr := startDaemonWith(t, DaemonConfig{Data: data})
	return d, addr, d.Token
}

// startDaemonWith is startDaemonD with cfg, whose Tools and
// PoolImageSize it sets; it returns the daemon and its address.
func startDaemonWith(t testing.TB, cfg DaemonConfig) (*Daemon, string) {
	t.Helper()
	testenv.Require(t, "root", "mkfs.btrfs")
	cfg.Tools, cfg.PoolImageSize = tools.All(), 2<<30
	d, err := OpenDaemon(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d, serveDaemon(t, d)
}

// serveDaemon serves d's API on a loopback port until the test ends,
// then closes d. It returns the address.
func serveDaemon(t testing.TB, d *Daemon) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Serve(ln) }() // ends when Close below runs
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close daemon: %v", err)
		}
		<-done
	})
	return ln.Addr().String()
}

// tenantClient makes tenant name through admin and returns a client of
// the daemon at addr with a (non-admin) token of it.
func tenantClient(t *testing.T, admin *client.Client, addr, name string) *client.Client {
	t.Helper()
	if _, err := admin.CreateTenant(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	tok, err := admin.CreateToken(t.Context(), name, false)
	if err != nil {
		t.Fatal(err)
	}
	return client.New(addr, client.WithToken(tok.Token))
}

func TestEndToEndSDK(t *testing.T) {
	addr, token := startDaemon(t, t.TempDir())
	ctx := t.Context()
	c := client.New(addr, client.WithToken(token))
	sb, err := c.Create(ctx, client.CreateRequest{Name: "e2e", Labels: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteFile(ctx, "e2e", "notes/a.txt", strings.NewReader("line1\nline2\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, string(sb.ID), client.ExecRequest{Command: "read l < notes/a.txt; echo \"$l\"; echo oops >&2; exit 5", Backend: rung.BackendIsolate})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "line1\n" || res.Stderr != "oops\n" || res.ExitCode != 5 || res.Backend != rung.BackendIsolate {
		t.Errorf("exec = %+v", res)
	}
	var out, errb bytes.Buffer
	sres, err := c.ExecStream(ctx, "e2e", client.ExecRequest{Command: "echo streamed; echo e >&2", Backend: rung.BackendIsolate}, &out, &errb)
	if err != nil || out.String() != "streamed\n" || errb.String() != "e\n" || sres.ExitCode != 0 {
		t.Errorf("stream exec = %q %q %+v %v", out.String(), errb.String(), sres, err)
	}
	r, err := c.ReadFile(ctx, "e2e", "/workspace/notes/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "line1\nline2\n" {
		t.Errorf("read back %q", b)
	}
	files, err := c.ListFiles(ctx, "e2e", "", true)
	if err != nil || len(files) != 2 || files[1].Path != "/workspace/notes/a.txt" || files[1].Mode != "0640" {
		t.Errorf("files = %+v, %v", files, err)
	}
	j, err := c.Journal(ctx, "e2e", 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range j {
		types = append(types, e.Type)
	}
	if got := strings.Join(types, " "); got != "sandbox.created file.written exec.started exec.ended exec.started exec.ended" {
		t.Errorf("journal = %s", got)
	}
	if _, err := c.Get(ctx, "nope"); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("Get(nope) err = %v, want rung.ErrNotFound through the SDK", err)
	}
	if _, err := c.Create(ctx, client.CreateRequest{Name: "e2e"}); !errors.Is(err, rung.ErrExists) {
		t.Errorf("duplicate create err = %v, want rung.ErrExists", err)
	}
	if _, err := c.Exec(ctx, "e2e", client.ExecRequest{Command: "echo", Backend: rung.BackendContainer}); !errors.Is(err, rung.ErrUnavailable) {
		t.Errorf("container exec err = %v, want rung.ErrUnavailable", err)
	}
	if err := c.Delete(ctx, "e2e"); err != nil {
		t.Fatal(err)
	}
	if list, err := c.List(ctx, client.ListOptions{}); err != nil || len(list) != 0 {
		t.Errorf("list after rm = %v, %v", list, err)
	}
}

// TestCloseBeforeServe checks that a daemon closed before its Serve has
// started is not served afterwards: Serve returns at once. (Serve made its
// server itself, so a Close that came first found nothing to close and
// the test's cleanup waited for ever.)
func TestCloseBeforeServe(t *testing.T) {
	testenv.Require(t, "root", "mkfs.btrfs")
	d, err := OpenDaemon(t.Context(), DaemonConfig{Data: t.TempDir(), Tools: tools.All(), PoolImageSize: 2 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := d.Serve(ln); err != nil {
		t.Errorf("Serve after Close: %v, want nil at once", err)
	}
}
