package main

import (
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/image"
	"rung.dev/rung/internal/testenv"
)

// startBaseDaemon runs the daemon in-process with base as its default
// image, as `rung serve` does. base comes from the image cache tests
// share (testenv.ImageCache): the first run anywhere on the machine
// builds it with debootstrap (minutes, once; a concurrent test binary
// waits for that build), later runs find it there.
func startBaseDaemon(t *testing.T) (*client.Client, *Daemon) {
	t.Helper()
	ensureBase(t)
	c, d, _ := startContainerDaemonWith(t, DaemonConfig{DefaultImage: "base", ImageDir: testenv.ImageCache})
	return c, d
}

// ensureBase makes sure the shared test image cache holds base, building
// it there if no run has yet (minutes, once per machine).
func ensureBase(t testing.TB) {
	t.Helper()
	testenv.Require(t, "root", "mkfs.btrfs", "runc", "debootstrap")
	if testing.Short() {
		t.Skip("needs the base image, which a first run builds with debootstrap")
	}
	images, err := image.Open(testenv.ImageCache, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer images.Close()
	im, built, err := images.Ensure(t.Context(), "base", func(string) {})
	if err != nil {
		t.Fatalf("build base: %v", err)
	}
	if built {
		t.Logf("built %s (%d MB) into the test image cache", im.Ref(), im.SizeBytes/1e6)
	}
}

// TestBaseImage creates a sandbox as a new user of `make run` would (no
// image, no size, no user: base, the default size, the user "user") and
// runs what agents run first in it, then the user checks: sudo without a
// password, files shared with the API and the isolate tier, root on
// request, unknown users refused.
func TestBaseImage(t *testing.T) {
	c, _ := startBaseDaemon(t)
	sb, err := c.Create(t.Context(), client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sb.Image, "base@sha256:") || sb.User != "user" || sb.Size.Preset != rung.DefaultPreset {
		t.Fatalf("default sandbox: image %q, user %q, size %+v", sb.Image, sb.User, sb.Size)
	}
	id := string(sb.ID)
	tools := []struct {
		cmd  string
		want string // prefix of stdout
	}{
		{`python3 -c 'print(1)'`, "1\n"},
		{`python3 -m venv /tmp/venv && /tmp/venv/bin/pip --version`, "pip "},
		{`node -e 'console.log(6 * 7)'`, "42\n"},
		{`npm --version`, ""},
		{`curl --version`, "curl "},
		{`wget --version`, "GNU Wget"},
		{`git --version`, "git version"},
		{`jq --version`, "jq-"},
		{`rg --version`, "ripgrep "},
		{`zstd --version`, "*** Zstandard"},
		{`xz --version`, "xz (XZ Utils)"},
		{`unzip -v`, "UnZip"},
		{`zip -v`, "Copyright"},
		{`gcc --version && make --version`, "gcc"},
		{`gawk --version`, "GNU Awk"},
		{`tree --version`, "tree v"},
		{`file --version`, "file-"},
		{`less --version`, "less "},
		{`ssh -V 2>&1`, "OpenSSH_"},
		{`ps -o comm= -p 1`, "rung\n"},
		{`echo "$LANG" && python3 -c 'import sys; print(sys.getfilesystemencoding())'`, "C.UTF-8\nutf-8\n"},
		{`sudo -n id -u`, "0\n"},
		{`sudo -n apt-get --version`, "apt "},
	}
	for _, tc := range tools {
		t.Run(strings.Fields(tc.cmd)[0], func(t *testing.T) {
			got := execIn(t, c, id, client.ExecRequest{Command: tc.cmd, Backend: rung.BackendContainer})
			if !strings.HasPrefix(got, tc.want) || got == "" {
				t.Errorf("%s: stdout %q, want it to start with %q", tc.cmd, got, tc.want)
			}
		})
	}
	// sudo says nothing on stderr (no hostname or audit warnings).
	res, err := c.Exec(t.Context(), id, client.ExecRequest{Command: "sudo -n true"})
	if err != nil || res.ExitCode != 0 || res.Stderr != "" {
		t.Errorf("sudo -n true: %+v, %v", res, err)
	}
	checkSandboxUser(t, c, id)
}
