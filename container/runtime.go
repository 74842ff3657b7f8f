package container

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Runtime is an OCI runtime binary: runc, crun or runsc. All three take
// the same command line for what rung uses (run --detach, kill, delete,
// state, list), which is the seam between rung and the runtime.
type Runtime struct {
	Name   string   // "runc", "crun" or "runsc"
	Binary string   // path of the executable
	Root   string   // state directory passed as --root
	Flags  []string // extra global flags (runsc: --network=none, --platform=...)
	// Wrapper, when set, is a command line the runtime is run under
	// (crun's private mount namespace, see [Crun]).
	Wrapper []string
	// SeccompBPF says the runtime takes rung's compiled seccomp program
	// in the run.oci.seccomp_bpf_data annotation (crun) instead of
	// compiling the spec's profile with libseccomp at every start, which
	// costs crun 25-35 ms here. [Probe] checks that the filter is really
	// installed and turns this off for a runtime that ignores it.
	SeccompBPF bool
}

func (r *Runtime) command(ctx context.Context, args ...string) *exec.Cmd {
	all := append([]string{"--root", r.Root}, r.Flags...)
	argv := append(append(append([]string(nil), r.Wrapper...), r.Binary), append(all, args...)...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// The runtime must not die with a request's context half-way through
	// creating a container; callers bound it with their own timeout.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	return cmd
}

func (r *Runtime) runCmd(ctx context.Context, args ...string) ([]byte, error) {
	cmd := r.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", r.Name, args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// passesFDs says whether the runtime hands descriptors beyond stdio to the
// container's init (--preserve-fds): runc and crun do; runsc's sandbox
// cannot take a host listening socket, so its agent makes its own.
func (r *Runtime) passesFDs() bool { return r.Name != "runsc" }

// run creates and starts container id from bundle, detached. With
// --detach the runtime hands its own stdio to the container's init, so
// they must be files, not pipes: a pipe would stay open for the
// container's lifetime and Wait would never return. Both go to logPath,
// which also explains a failure. A non-nil extra is passed to the init as
// descriptor 3.
func (r *Runtime) run(ctx context.Context, id, bundle, pidFile, logPath string, extra *os.File) error {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := []string{"run", "--detach", "--bundle", bundle, "--pid-file", pidFile}
	if extra != nil {
		args = append(args, "--preserve-fds", "1")
	}
	cmd := r.command(ctx, append(args, id)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if extra != nil {
		cmd.ExtraFiles = []*os.File{extra}
	}
	if err := cmd.Run(); err != nil {
		msg, _ := os.ReadFile(logPath)
		return fmt.Errorf("%s run: %w: %s", r.Name, err, lastLine(msg))
	}
	return nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

func (r *Runtime) kill(ctx context.Context, id string, sig string) error {
	_, err := r.runCmd(ctx, "kill", id, sig)
	return err
}

func (r *Runtime) delete(ctx context.Context, id string) error {
	_, err := r.runCmd(ctx, "delete", "--force", id)
	return err
}

// containerState is the part of `runtime state` rung reads.
type containerState struct {
	ID      string    `json:"id"`
	Status  string    `json:"status"`
	Pid     int       `json:"pid"`
	Created time.Time `json:"created"`
}

func (r *Runtime) list(ctx context.Context) ([]containerState, error) {
	out, err := r.runCmd(ctx, "list", "--format", "json")
	if err != nil {
		return nil, err
	}
	var states []containerState
	if len(bytes.TrimSpace(out)) == 0 || bytes.Equal(bytes.TrimSpace(out), []byte("null")) {
		return nil, nil
	}
	if err := json.Unmarshal(out, &states); err != nil {
		return nil, fmt.Errorf("%s list: %w", r.Name, err)
	}
	return states, nil
}

// GVisor returns the runsc runtime at binary, configured for rung: no
// network stack beyond loopback (a container that joins a prepared
// namespace gets gVisor's own stack: see networked), and the ptrace
// platform, since this host has no /dev/kvm. --host-uds=create lets the
// agent's listening socket appear on the host side of its bind mount.
func GVisor(binary string) Runtime {
	return Runtime{Name: "runsc", Binary: binary, Flags: []string{"--network=none", "--platform=ptrace", "--host-uds=create"}}
}

// networked returns r as it runs a container that joins a network
// namespace the caller prepared. runc and crun join the namespace the
// spec names. runsc needs --network=sandbox to run its own network stack
// over the namespace's interfaces, which it takes over as it boots
// (addresses, routes, and eth0's traffic through a packet socket); and
// the runsc packaged here (release 20221219) then refuses every
// namespace, "cannot run with network enabled in root network
// namespace", because it tells the host's namespace from others by
// /proc/sys/net/core/rmem_default, a file that kernels since 5.x (6.18
// here) have in every network namespace. So runsc runs in a private
// mount namespace where an empty tmpfs hides /proc/sys/net; the runsc
// process reads nothing else there (TestNetworkEgress runs it).
func (r Runtime) networked() Runtime {
	if r.Name != "runsc" {
		return r
	}
	flags := make([]string, 0, len(r.Flags)+1)
	for _, f := range r.Flags {
		if !strings.HasPrefix(f, "--network=") {
			flags = append(flags, f)
		}
	}
	r.Flags = append(flags, "--network=sandbox")
	r.Wrapper = append([]string{
		"unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs -o size=4k,mode=555 rung-hide /proc/sys/net && exec "$0" "$@"`,
	}, r.Wrapper...)
	return r
}

// Crun returns the crun runtime at binary. crun refuses this kind of host's
// hybrid cgroup layout when the cgroup2 "unified" mount owns a
// controller, so every crun command runs in a private mount namespace
// with that mount hidden; cgroup v1 limits are unaffected. The wrapper
// costs about 4 ms per command (three extra execs). A long-lived
// namespace on one locked thread would cost nothing, but it stops seeing
// mounts the daemon makes later (overlays, pools) on hosts whose root
// mount is private, as this one's is.
func Crun(binary string) Runtime {
	return Runtime{Name: "crun", Binary: binary, SeccompBPF: true, Wrapper: []string{
		"unshare", "--mount", "--propagation", "private", "sh", "-c",
		`umount -l /sys/fs/cgroup/unified 2>/dev/null; exec "$0" "$@"`,
	}}
}
