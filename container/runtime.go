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
)

// Runtime is an OCI runtime binary: runc, crun or runsc. All three take
// the same command line for what rung uses (run --detach, kill, delete,
// state, list), which is the seam between rung and the runtime.
type Runtime struct {
	Name   string   // "runc", "crun" or "runsc"
	Binary string   // path of the executable
	Root   string   // state directory passed as --root
	Flags  []string // extra global flags (runsc: --network=none, --platform=...)
}

func (r *Runtime) command(ctx context.Context, args ...string) *exec.Cmd {
	all := append([]string{"--root", r.Root}, r.Flags...)
	cmd := exec.CommandContext(ctx, r.Binary, append(all, args...)...)
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

// run creates and starts container id from bundle, detached. With
// --detach the runtime hands its own stdio to the container's init, so
// they must be files, not pipes: a pipe would stay open for the
// container's lifetime and Wait would never return. Both go to logPath,
// which also explains a failure.
func (r *Runtime) run(ctx context.Context, id, bundle, pidFile, logPath string) error {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := r.command(ctx, "run", "--detach", "--bundle", bundle, "--pid-file", pidFile, id)
	cmd.Stdout, cmd.Stderr = logf, logf
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
	ID     string `json:"id"`
	Status string `json:"status"`
	Pid    int    `json:"pid"`
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
