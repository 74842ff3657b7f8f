package container_test

import (
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
	"rung.dev/rung/image"
	"rung.dev/rung/internal/testenv"
)

// TestDebianImageTools runs what the built-in debian image is for, in it:
// a venv with pip, node and npm, a C compile with build-essential, git,
// curl's TLS roots and procps. The image is the one `rung image build
// debian` makes (minbase plus image.DebianPackages), built once into the
// test cache (the first build downloads a few hundred packages: 70 s
// here).
func TestDebianImageTools(t *testing.T) {
	testenv.Require(t, "root", "runc", "debootstrap")
	if testing.Short() {
		t.Skip("builds a Debian image with debootstrap")
	}
	images, err := image.Open(debianCache, nil)
	if err != nil {
		t.Fatal(err)
	}
	im, err := images.Get("debian-full")
	if err != nil {
		im, err = images.BuildDebian(t.Context(), image.DebianConfig{Name: "debian-full"}, func(line string) { t.Log(line) })
		if err != nil {
			t.Fatal(err)
		}
	}
	m := newManager(t, images, container.Runtime{Name: "runc", Binary: "runc"}, agentBinary(t))
	c, err := m.Start(t.Context(), container.StartRequest{Sandbox: rung.NewSandboxID(), Subvolume: subvolume(t), Image: im, Size: rung.Presets["standard-1"]})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, cmd, want string }{
		{"python venv and pip", "python3 -m venv v && v/bin/pip --version | cut -d' ' -f1", "pip\n"},
		{"node", `node -e 'console.log(6*7)'`, "42\n"},
		{"npm", "npm --version >/dev/null && echo ok", "ok\n"},
		{"cc", `printf '#include <stdio.h>\nint main(void){puts("compiled");return 0;}\n' > h.c && cc -o h h.c && ./h`, "compiled\n"},
		{"make", `printf 'all:\n\t@echo made\n' > Makefile && make`, "made\n"},
		{"git", "git init -q r && cd r && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m x && git log --format=%s", "x\n"},
		{"ca-certificates", "test -s /etc/ssl/certs/ca-certificates.crt && echo ok", "ok\n"},
		{"curl", "curl --version | head -c 4", "curl"},
		{"procps", "ps -o comm= -p 1", "rung\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := run(t, c, agent.ExecRequest{Command: tc.cmd, TimeoutMS: 120000})
			if o.stdout != tc.want || o.exit.Code != 0 {
				t.Errorf("%s: stdout %q (want %q), exit %+v, stderr %s", tc.cmd, o.stdout, tc.want, o.exit, strings.TrimSpace(o.stderr))
			}
		})
	}
}
