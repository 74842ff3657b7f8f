package container

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	"rung.dev/rung/internal/testenv"
)

// The boot id's hook reads the container's state from its standard input
// to the end before it mounts, as crun needs: crun writes the state after
// starting the hook and fails the container's start when the hook has
// already exited. Run as crun runs it, with more state than a pipe holds,
// so a hook that does not read fails the write whatever the timing.
func TestBootIDHookReadsState(t *testing.T) {
	testenv.Require(t, "root")
	tools, err := lookHookTools()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "boot_id")
	if err := os.WriteFile(src, []byte("0f3c8f0e-hook-test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rootfs := filepath.Join(dir, "rootfs")
	target := rootfs + BootIDPath
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := &specs.Spec{}
	bootIDMount(spec, specInput{BootID: src, Rootfs: rootfs, HookTools: tools})
	if spec.Hooks == nil || len(spec.Hooks.CreateContainer) != 1 {
		t.Fatalf("hooks %+v, want one createContainer hook", spec.Hooks)
	}
	h := spec.Hooks.CreateContainer[0]
	cmd := &exec.Cmd{Path: h.Path, Args: h.Args, Env: h.Env}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	state := bytes.Repeat([]byte(`{"ociVersion":"1.2.0","id":"sbx","status":"creating"}`), 80_000) // 4 MB
	_, werr := stdin.Write(state)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("hook: %v: %s", err, stderr.Bytes())
	}
	defer unix.Unmount(target, unix.MNT_DETACH)
	if werr != nil {
		t.Errorf("writing the state to the hook: %v (it did not read it)", werr)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "0f3c8f0e-hook-test\n" {
		t.Errorf("after the hook the target reads %q, %v; want the boot id", b, err)
	}
	if err := os.WriteFile(target, []byte("x"), 0o644); err == nil {
		t.Error("the boot id's mount is writable")
	}
}
