package shell_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"rung.dev/rung/shell"
	"rung.dev/rung/shell/tools"
	"rung.dev/rung/storage"
)

// hostLogin is a Login over this machine's own /etc (Debian 12, as the
// base image), with the home /home/user a link to /workspace.
func hostLogin(t testing.TB) *shell.Login {
	t.Helper()
	l := &shell.Login{Home: "/home/user", HomeView: "/workspace", Path: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		UID: 1000, GID: 1000, Key: "host"}
	add := func(p string) {
		fi, err := os.Stat(p)
		if err != nil {
			return
		}
		st := fi.Sys().(*syscall.Stat_t)
		f := shell.SystemFile{Path: p, Mode: fi.Mode(), UID: st.Uid, GID: st.Gid, ModTime: fi.ModTime()}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			f.Data = b
		}
		l.Files = append(l.Files, f)
	}
	add("/etc/profile")
	add("/etc/profile.d")
	ents, _ := os.ReadDir("/etc/profile.d")
	for _, e := range ents {
		add("/etc/profile.d/" + e.Name())
	}
	add("/etc/bash.bash_logout")
	sort.Slice(l.Files, func(i, j int) bool { return l.Files[i].Path < l.Files[j].Path })
	return l
}

// hostLookPath finds names as this machine's root would, with a slash
// (the image's LookPath for a path).
func hostLookPath(name string) string {
	if !strings.Contains(name, "/") {
		for _, d := range strings.Split("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", ":") {
			if p := hostLookPath(path.Join(d, name)); p != "" {
				return p
			}
		}
		return ""
	}
	fi, err := os.Stat(name)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return ""
	}
	return name
}

// loginCase is one login shell exec: home files to write first, the
// command, and whether the isolate tier runs it.
type loginCase struct {
	name  string
	home  map[string]string // relative to the home; "" content makes a directory
	cmd   string
	runs  bool        // the tier runs it, else it refuses before any effect
	why   string      // part of the refusal
	skelt bool        // start the home from /etc/skel
	mode  os.FileMode // the home files' mode, when not 0755
}

func TestLoginShell(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	// Texts kept at once, so that each case's second exec starts from
	// what the first one's startup files left (TestLoginStartupTextChanges
	// covers the settling time).
	shell.SetSettledAfter(t, 0)
	cases := []loginCase{
		{name: "login_shell", cmd: "shopt -q login_shell && echo yes || echo no", runs: true, skelt: true},
		{name: "a function of profile.d", cmd: "type gawkpath_append", why: "gawkpath_append", skelt: true},
		{name: "tainted function called", cmd: "gawkpath_default; echo done", why: "gawkpath_default", skelt: true},
		{name: "tainted function called before redefined", cmd: "gawkpath_default; gawkpath_default() { echo mine; }; gawkpath_default", why: "gawkpath_default", skelt: true},
		{name: "function redefined first", cmd: "gawkpath_default() { echo mine; }; gawkpath_default", why: "gawkpath_default", skelt: true},
		{name: "a startup function the check admits", home: map[string]string{".profile": "greet() { echo \"hello $1\"; }\n"}, cmd: "greet() { echo mine; }; greet you", runs: true},
		{name: "status after startup", cmd: "echo $?", runs: true, skelt: true},
		{name: "exported by profile", home: map[string]string{".profile": "export GREETING=hello\nx=unexported\n"}, cmd: "printenv GREETING; echo \"[$x]\"", runs: true},
		{name: "profile output", home: map[string]string{".profile": "echo from profile\n"}, cmd: "echo cmd", runs: true},
		{name: "bash_profile first", home: map[string]string{".bash_profile": "echo bp\n", ".profile": "echo p\n"}, cmd: "echo cmd", runs: true},
		{name: "bash_login second", home: map[string]string{".bash_login": "echo bl\n", ".profile": "echo p\n"}, cmd: "echo cmd", runs: true},
		{name: "no profile", cmd: "shopt -q login_shell && echo yes", runs: true},
		{name: "local bin in PATH", home: map[string]string{".local/bin": "", ".local/bin/hello": "#!/bin/sh\necho hi\n"}, cmd: "hello", why: "hello", skelt: true},
		{name: "local bin shadows ls", home: map[string]string{".local/bin": "", ".local/bin/ls": "#!/bin/sh\necho mine\n"}, cmd: "ls", why: "ls", skelt: true},
		{name: "ls unshadowed", home: map[string]string{".local/bin": ""}, cmd: "ls -d /workspace", runs: true, skelt: true},
		{name: "exit runs the logout file", cmd: "echo a; exit 3", why: "exit", skelt: true},
		{name: "exit without logout file", home: map[string]string{".profile": ""}, cmd: "echo a; exit 3", runs: true},
		{name: "logout", home: map[string]string{".profile": ""}, cmd: "logout", why: "logout"},
		{name: "profile cds", home: map[string]string{".profile": "cd /tmp\n"}, cmd: "echo x", why: "cd"},
		{name: "profile writes", home: map[string]string{".profile": "echo x > /workspace/marker\n"}, cmd: "echo x", why: "redirection"},
		{name: "profile runs a program", home: map[string]string{".profile": "mkdir -p /workspace/d\n"}, cmd: "echo x", why: "mkdir"},
		{name: "profile sets LANG", home: map[string]string{".profile": "export LANG=C\n"}, cmd: "echo x", why: "LANG"},
		{name: "profile sources a file", home: map[string]string{".profile": ". \"$HOME/.env\"\n", ".env": "export FROM_ENV=1\n"}, cmd: "printenv FROM_ENV", runs: true},
		{name: "profile sources an unsupported file", home: map[string]string{".profile": ". \"$HOME/.env\"\n", ".env": "python3 -c 1\n"}, cmd: "echo x", why: "python3"},
		{name: "profile only its owner reads", home: map[string]string{".profile": "export OWN=1\n"}, mode: 0o600, cmd: "printenv OWN", runs: true},
		{name: "pipe status after startup", home: map[string]string{".profile": "true | false\n"}, cmd: `echo "${PIPESTATUS[@]}" $?`, runs: true},
		{name: "profile's variables and functions", home: map[string]string{".profile": "declare -i n=2+3\nexport X=\"$n\"\ngreet() { echo \"hi $1\"; }\nunset -v n\n"}, cmd: `echo "[$n]"; printenv X; greet() { echo mine; }; greet`, runs: true},
		{name: "profile defines a function", home: map[string]string{".profile": "greet() { echo hello \"$1\"; }\n"}, cmd: "greet you", why: "greet"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The oracle: bash -l -c on this machine, with the home a
			// directory of its own (the command's output never names it).
			hostHome := filepath.Join(t.TempDir(), "home")
			dir := t.TempDir()
			for _, d := range []string{"workspace", "tmp"} {
				if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, home := range []string{hostHome, filepath.Join(dir, "workspace")} {
				if err := os.MkdirAll(home, 0o755); err != nil {
					t.Fatal(err)
				}
				if tc.skelt {
					for _, f := range []string{".profile", ".bashrc", ".bash_logout"} {
						b, err := os.ReadFile("/etc/skel/" + f)
						if err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(filepath.Join(home, f), b, 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
				names := make([]string, 0, len(tc.home))
				for name := range tc.home {
					names = append(names, name)
				}
				sort.Strings(names)
				for _, name := range names {
					content := tc.home[name]
					p := filepath.Join(home, name)
					if content == "" && !strings.HasPrefix(path.Base(name), ".") || strings.HasSuffix(name, "bin") {
						if err := os.MkdirAll(p, 0o755); err != nil {
							t.Fatal(err)
						}
						continue
					}
					mode := tc.mode
					if mode == 0 {
						mode = 0o755
					}
					if err := os.WriteFile(p, []byte(content), mode); err != nil {
						t.Fatal(err)
					}
					if tc.mode != 0 {
						// The login's user's own (Login.UID).
						if err := os.Chown(p, 1000, 1000); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			want := exec.Command("bash", "-l", "-c", tc.cmd)
			want.Dir = hostHome
			want.Env = []string{"HOME=" + hostHome, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "USER=user", "LOGNAME=user", "LANG=C.UTF-8"}
			var wout, werr bytes.Buffer
			want.Stdout, want.Stderr = &wout, &werr
			wcode := 0
			if err := want.Run(); err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatal(err)
				}
				wcode = ee.ExitCode()
			}

			root, err := storage.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			sh := shell.New(shell.Config{FS: root, Tools: tools.All(), User: "user"})
			env := map[string]string{"PWD": "/home/user"}
			prog, err := sh.CheckProgram(shell.CheckRequest{Script: tc.cmd, Env: env, LookPath: hostLookPath, Login: true})
			if err != nil {
				if tc.runs || !strings.Contains(err.Error(), tc.why) {
					t.Fatalf("check: %v", err)
				}
				return
			}
			// Three times: the first reads the home's texts, the second
			// (from the texts kept) keeps what the startup files left, and
			// the third starts from it.
			for run := range 3 {
				var out, errb bytes.Buffer
				res := sh.Run(context.Background(), shell.Request{Program: prog, Env: env, Stdout: &out, Stderr: &errb,
					StopUnsupported: true, Login: hostLogin(t)})
				if !tc.runs {
					if !res.Stopped || !strings.Contains(res.Unsupported.Error(), tc.why) {
						t.Fatalf("run %d: want a refusal naming %q, got stopped=%v unsupported=%v (out %q)", run, tc.why, res.Stopped, res.Unsupported, out.String())
					}
					if res.Changed {
						t.Fatalf("run %d: refused after changing files", run)
					}
					continue
				}
				if res.Stopped {
					t.Fatalf("run %d: refused: %v", run, res.Unsupported)
				}
				if out.String() != wout.String() || errb.String() != werr.String() || res.ExitCode != wcode {
					t.Fatalf("run %d: isolate: %d %q %q\nbash:    %d %q %q", run, res.ExitCode, out.String(), errb.String(), wcode, wout.String(), werr.String())
				}
			}
		})
	}
}

// loginSandbox makes a sandbox directory (its /workspace the login's
// home, with /etc/skel's dotfiles when skel is set) and a Shell over it,
// and returns the shell and the home's path on the host.
func loginSandbox(t testing.TB, skel bool) (*shell.Shell, string) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"workspace", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(dir, "workspace")
	for _, f := range []string{".profile", ".bashrc", ".bash_logout"} {
		if !skel {
			break
		}
		b, err := os.ReadFile("/etc/skel/" + f)
		if err != nil {
			t.Skip(err)
		}
		if err := os.WriteFile(filepath.Join(home, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := storage.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return shell.New(shell.Config{FS: root, Tools: tools.All(), User: "user"}), home
}

// loginRun checks script as a login shell's command and runs it as
// auto does (stopping at a refusal), returning its result and stdout.
func loginRun(t testing.TB, sh *shell.Shell, login *shell.Login, script string) (shell.Result, string) {
	t.Helper()
	prog, err := sh.CheckProgram(shell.CheckRequest{Script: script, LookPath: hostLookPath, Login: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res := sh.Run(context.Background(), shell.Request{Program: prog, Stdout: &out, StopUnsupported: true, Login: login})
	return res, out.String()
}

// BenchmarkLoginShell compares a login shell's exec of echo hi (the
// startup files of this machine's /etc and /etc/skel first) with a plain
// one, side by side.
func BenchmarkLoginShell(b *testing.B) {
	sh, _ := loginSandbox(b, true)
	login := hostLogin(b)
	for _, mode := range []string{"plain", "login"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				var l *shell.Login
				if mode == "login" {
					l = login
				}
				prog, err := sh.CheckProgram(shell.CheckRequest{Script: "echo hi", LookPath: hostLookPath, Login: l != nil})
				if err != nil {
					b.Fatal(err)
				}
				var out bytes.Buffer
				res := sh.Run(context.Background(), shell.Request{Program: prog, Stdout: &out, StopUnsupported: true, Login: l})
				if res.Stopped || out.String() != "hi\n" {
					b.Fatalf("%v %q", res.Unsupported, out.String())
				}
			}
		})
	}
}

// A startup file read before is served again only while it is the same
// file, unchanged: rewritten in place with the same size, or replaced,
// the next login exec reads the new text.
func TestLoginStartupTextChanges(t *testing.T) {
	// Texts kept at once; each write below moves the file's modification
	// time by an hour, so that its change is seen whatever the clock's
	// tick (the settling time covers that in the daemon: TestLoginSettled).
	shell.SetSettledAfter(t, 0)
	sh, home := loginSandbox(t, false)
	profile := filepath.Join(home, ".profile")
	if err := os.WriteFile(profile, []byte("export A=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	login := hostLogin(t)
	run := func() string {
		t.Helper()
		res, out := loginRun(t, sh, login, "printenv A")
		if res.Stopped {
			t.Fatalf("refused: %v", res.Unsupported)
		}
		return out
	}
	later := func() {
		t.Helper()
		fi, err := os.Stat(profile)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(profile, fi.ModTime(), fi.ModTime().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if got := run(); got != "1\n" {
		t.Fatalf("first: %q", got)
	}
	if got := run(); got != "1\n" {
		t.Fatalf("again: %q", got)
	}
	f, err := os.OpenFile(profile, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("2"), int64(len("export A="))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	later()
	if got := run(); got != "2\n" {
		t.Fatalf("after an in-place write of the same size: %q, want 2", got)
	}
	run()
	tmp := profile + ".new"
	if err := os.WriteFile(tmp, []byte("export A=3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, profile); err != nil {
		t.Fatal(err)
	}
	if got := run(); got != "3\n" {
		t.Fatalf("after a replace: %q, want 3", got)
	}
}

// A text is kept only once its change time is settledAfter old.
func TestLoginSettled(t *testing.T) {
	shell.SetSettledAfter(t, 50*time.Millisecond)
	now := time.Now()
	for _, tc := range []struct {
		age  time.Duration
		want bool
	}{{0, false}, {49 * time.Millisecond, false}, {50 * time.Millisecond, true}, {time.Hour, true}, {-time.Second, false}} {
		if got := shell.Settled(now.Add(-tc.age), now); got != tc.want {
			t.Errorf("changed %v ago: settled %v, want %v", tc.age, got, tc.want)
		}
	}
}

// backend isolate asked for: the script is not checked, the startup files
// still are, and exit (which would run the logout file) is refused when
// it is reached.
func TestLoginShellUnchecked(t *testing.T) {
	sh, _ := loginSandbox(t, true)
	var out bytes.Buffer
	res := sh.Run(context.Background(), shell.Request{Script: "shopt -q login_shell && echo login; type -t gawkpath_append", Stdout: &out, Login: hostLogin(t)})
	if res.Unsupported != nil || out.String() != "login\nfunction\n" {
		t.Fatalf("unchecked login script: %v %q", res.Unsupported, out.String())
	}
	out.Reset()
	res = sh.Run(context.Background(), shell.Request{Script: "echo a; exit 3; echo b", Stdout: &out, Login: hostLogin(t)})
	if res.Unsupported == nil || !strings.Contains(res.Unsupported.Error(), "exit") || out.String() != "a\n" {
		t.Fatalf("exit with a logout file: %v %q, want a refusal at exit", res.Unsupported, out.String())
	}
	// Unchecked, a call of a startup file's function whose body the
	// check refused is refused when it is reached.
	out.Reset()
	res = sh.Run(context.Background(), shell.Request{Script: "echo a; gawkpath_default; echo b", Stdout: &out, StopUnsupported: true, Login: hostLogin(t)})
	if !res.Stopped || !strings.Contains(res.Unsupported.Error(), "gawkpath_default") || out.String() != "a\n" {
		t.Fatalf("a tainted function, unchecked: stopped=%v %v %q, want a refusal at the call", res.Stopped, res.Unsupported, out.String())
	}
}

// What the startup files left is kept only while what they looked at is
// unchanged: a directory they test for (~/.local/bin) appearing puts it
// in PATH for the next exec, so ls found there is the container's.
func TestLoginOutcomeKept(t *testing.T) {
	shell.SetSettledAfter(t, 0)
	sh, home := loginSandbox(t, true)
	for range 3 {
		if res, _ := loginRun(t, sh, hostLogin(t), "ls /workspace"); res.Stopped {
			t.Fatalf("ls: %v", res.Unsupported)
		}
	}
	bin := filepath.Join(home, ".local", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "ls"), []byte("#!/bin/sh\necho mine\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, _ := loginRun(t, sh, hostLogin(t), "ls /workspace")
	if !res.Stopped || !strings.Contains(res.Unsupported.Error(), "ls") {
		t.Fatalf("ls after ~/.local/bin/ls appeared: stopped=%v %v, want it refused", res.Stopped, res.Unsupported)
	}
}
