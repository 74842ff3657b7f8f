package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/controller"
)

// execIn runs command in sandbox id and fails t unless it exits 0; it
// returns stdout.
func execIn(t *testing.T, c *client.Client, id string, req client.ExecRequest) string {
	t.Helper()
	res, err := c.Exec(t.Context(), id, req)
	if err != nil {
		t.Fatalf("exec %q: %v", req.Command, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exec %q (%s, %s): exit %d, stdout %q, stderr %q", req.Command, res.Backend, res.Reason, res.ExitCode, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

// readAPI reads a sandbox file through the file API.
func readAPI(t *testing.T, c *client.Client, id, path string) string {
	t.Helper()
	r, err := c.ReadFile(t.Context(), id, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkSandboxUser is what every sandbox running as the unprivileged
// user (uid 1000, group 1000) must do, whatever its image: commands run
// as it in /workspace with its HOME; what the file API (PUT, mkdir, tar
// upload) and the isolate tier write is its own, so the container can
// change it, and what the container writes the API and the isolate tier
// read and change; user "root" is there on request (exec and process),
// an unknown user is invalid_argument naming it.
func checkSandboxUser(t *testing.T, c *client.Client, id string) {
	ctx := t.Context()
	inCtr := func(cmd string) string {
		return execIn(t, c, id, client.ExecRequest{Command: cmd, Backend: rung.BackendContainer})
	}
	if got := inCtr(`id -u; id -g; id -un; echo "$HOME $USER $LOGNAME"; pwd`); got != "1000\n1000\nuser\n/home/user user user\n/workspace\n" {
		t.Errorf("who and where commands run:\n%s", got)
	}

	// The file API's files are the user's.
	if _, err := c.WriteFile(ctx, id, "/workspace/api.txt", strings.NewReader("from the API\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Mkdir(ctx, id, "/workspace/made/deeper", true); err != nil {
		t.Fatal(err)
	}
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "up/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "up/t.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 4})
	tw.Write([]byte("tar\n"))
	tw.Close()
	if err := c.UploadTar(ctx, id, "/workspace", &tb); err != nil {
		t.Fatal(err)
	}
	if got := inCtr(`echo more >> api.txt && touch made/deeper/f up/new && echo edit >> up/t.txt && stat -c '%u:%g %n' api.txt made made/deeper up up/t.txt`); got != "1000:1000 api.txt\n1000:1000 made\n1000:1000 made/deeper\n1000:1000 up\n1000:1000 up/t.txt\n" {
		t.Errorf("owners of what the API wrote:\n%s", got)
	}
	if got := readAPI(t, c, id, "/workspace/api.txt"); got != "from the API\nmore\n" {
		t.Errorf("api.txt after the container's edit: %q", got)
	}

	// The container's files, through the API and the isolate tier.
	inCtr(`echo from the container > ctr.txt`)
	if got := readAPI(t, c, id, "/workspace/ctr.txt"); got != "from the container\n" {
		t.Errorf("ctr.txt through the API: %q", got)
	}
	if _, err := c.WriteFile(ctx, id, "/workspace/ctr.txt", strings.NewReader("rewritten by the API\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	execIn(t, c, id, client.ExecRequest{Command: `echo isolate >> ctr.txt; echo new > iso.txt; mkdir -p isodir/sub; echo x > /tmp/iso-tmp`, Backend: rung.BackendIsolate})
	if got := inCtr(`echo ctr >> iso.txt && touch isodir/sub/f && stat -c '%u:%g %n' ctr.txt iso.txt isodir isodir/sub /tmp/iso-tmp && cat ctr.txt`); got != "1000:1000 ctr.txt\n1000:1000 iso.txt\n1000:1000 isodir\n1000:1000 isodir/sub\n1000:1000 /tmp/iso-tmp\nrewritten by the API\nisolate\n" {
		t.Errorf("owners of what the isolate tier wrote:\n%s", got)
	}

	// root on request, in the container; not in the isolate tier.
	res, err := c.Exec(ctx, id, client.ExecRequest{Command: "id -u; echo $HOME", User: "root"})
	if err != nil || res.Stdout != "0\n/root\n" || res.Backend != rung.BackendContainer || !strings.Contains(res.Reason, "user root") {
		t.Errorf("exec as root: %+v, %v", res, err)
	}
	if _, err := c.Exec(ctx, id, client.ExecRequest{Command: "echo hi", User: "root", Backend: rung.BackendIsolate}); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("isolate exec as root: %v, want invalid_argument", err)
	}
	// The sandbox's own user, named, is the default.
	if got := execIn(t, c, id, client.ExecRequest{Command: "echo hi", User: "user"}); got != "hi\n" {
		t.Errorf("exec as the sandbox's user: %q", got)
	}
	for _, user := range []string{"mallory", "bad name", strings.Repeat("u", 100)} {
		_, err := c.Exec(ctx, id, client.ExecRequest{Command: "true", User: user})
		if !errors.Is(err, rung.ErrInvalid) || !strings.Contains(err.Error(), user[:min(len(user), 60)]) {
			t.Errorf("exec as %q: %v, want invalid_argument naming the user", user, err)
		}
	}

	// A background process as root, and one as the sandbox's user.
	for user, want := range map[string]string{"root": "0", "": "1000"} {
		p, err := c.StartProcess(ctx, id, client.ProcessRequest{Command: "id -u > /tmp/who-" + want, User: user})
		if err != nil {
			t.Fatal(err)
		}
		if exit, err := c.ProcessOutput(ctx, id, p.ID, 0, true, func(client.OutputFrame) error { return nil }); err != nil || exit == nil || exit.Code != 0 {
			t.Fatalf("process as %q: %+v, %v", user, exit, err)
		}
		if got := readAPI(t, c, id, "/tmp/who-"+want); got != want+"\n" {
			t.Errorf("process as %q ran as %q", user, got)
		}
	}
	if _, err := c.StartProcess(ctx, id, client.ProcessRequest{Command: "true", User: "mallory"}); !errors.Is(err, rung.ErrInvalid) || !strings.Contains(err.Error(), "mallory") {
		t.Errorf("process as an unknown user: %v", err)
	}
}

// TestSandboxUser runs the user checks on lite (root by default, but
// listing the user "user"), with a sandbox created as that user, and
// checks root stays the default there and an unknown user is refused at
// create.
func TestSandboxUser(t *testing.T) {
	c, _ := startContainerDaemon(t)
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{User: "user"})
	if err != nil {
		t.Fatal(err)
	}
	if sb.User != "user" {
		t.Errorf("created with user %q", sb.User)
	}
	checkSandboxUser(t, c, string(sb.ID))

	def, err := c.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if def.User != "root" {
		t.Errorf("lite's default user %q, want root", def.User)
	}
	if got := execIn(t, c, string(def.ID), client.ExecRequest{Command: "id -u; stat -c %u /workspace", Backend: rung.BackendContainer}); got != "0\n0\n" {
		t.Errorf("lite's default: %q", got)
	}
	for _, user := range []string{"mallory", "user:nogroup-here", "-x"} {
		if _, err := c.Create(ctx, client.CreateRequest{User: user}); !errors.Is(err, rung.ErrInvalid) || !strings.Contains(err.Error(), user) {
			t.Errorf("create with user %q: %v, want invalid_argument naming it", user, err)
		}
	}
}

// A warm spare's sandbox belongs to its user too: the spare was made
// before anyone asked, as root.
func TestWarmSpareUser(t *testing.T) {
	c, d, _ := startContainerDaemonWith(t, DaemonConfig{Warm: []controller.WarmSpec{{Image: "lite", Count: 1}}})
	waitWarm(t, d)
	sb, err := c.Create(t.Context(), client.CreateRequest{User: "user"})
	if err != nil {
		t.Fatal(err)
	}
	if sb.State != rung.StateRunning {
		t.Fatalf("create did not claim the spare: %+v", sb)
	}
	res, err := c.Exec(t.Context(), string(sb.ID), client.ExecRequest{Command: "id -u && touch /workspace/f && stat -c %u /workspace /workspace/f", Backend: rung.BackendContainer})
	if err != nil || res.Stdout != "1000\n1000\n1000\n" {
		t.Errorf("claimed spare: %+v, %v", res, err)
	}

	// A create refused after its claim (the name is taken) gives the
	// spare back (or destroys it: the refiller may have filled the pool
	// meanwhile); whichever spare the next create, as root, claims, its
	// workspace is root's.
	waitWarm(t, d)
	if _, err := c.Create(t.Context(), client.CreateRequest{Name: "taken"}); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, d)
	if _, err := c.Create(t.Context(), client.CreateRequest{Name: "taken", User: "user"}); !errors.Is(err, rung.ErrExists) {
		t.Fatalf("create with a taken name: %v, want already_exists", err)
	}
	waitWarm(t, d)
	root, err := c.Create(t.Context(), client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if root.State != rung.StateRunning {
		t.Fatalf("create after the give-back did not claim the spare: %+v", root)
	}
	if got := execIn(t, c, string(root.ID), client.ExecRequest{Command: "id -u; stat -c %u /workspace", Backend: rung.BackendContainer}); got != "0\n0\n" {
		t.Errorf("the spare given back, claimed as root: %q, want 0 and a root-owned workspace", got)
	}
}
