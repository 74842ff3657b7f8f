package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// TestContainerLimitsThroughDaemon drives the container tier's limits the
// way a user meets them, through the API: a disk fill stops at the
// sandbox's quota (in /workspace and in the root filesystem's writable
// layer alike) and frees up after rm; an output flood is cut at the
// limit and said so; processes outside the container cannot be seen or
// signalled; and a second sandbox works throughout.
func TestContainerLimitsThroughDaemon(t *testing.T) {
	c, _ := startContainerDaemon(t)
	ctx := t.Context()
	size := rung.Size{MilliCPU: 500, MemoryBytes: 128 << 20, DiskBytes: 64e6}
	sb, err := c.Create(ctx, client.CreateRequest{Name: "limits", Size: size})
	if err != nil {
		t.Fatal(err)
	}
	id := string(sb.ID)
	inContainer := func(cmd string) client.ExecResult {
		t.Helper()
		res, err := c.Exec(ctx, id, client.ExecRequest{Command: cmd, Backend: rung.BackendContainer})
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return res
	}

	for _, target := range []string{"/workspace/fill", "/var/fill"} {
		res := inContainer(fmt.Sprintf("dd if=/dev/zero of=%s bs=1M count=200", target))
		if res.ExitCode == 0 {
			t.Errorf("writing 200 MB to %s under a 64 MB disk: succeeded", target)
		}
		if !strings.Contains(res.Stderr, "No space left") && !strings.Contains(res.Stderr, "quota exceeded") {
			t.Errorf("disk fill of %s: stderr %q, want ENOSPC or EDQUOT", target, res.Stderr)
		}
		if res := inContainer("rm -f " + target + " && echo freed > /workspace/after"); res.ExitCode != 0 {
			t.Errorf("after rm of %s: %q", target, res.Stderr)
		}
	}
	if res, err := c.Exec(ctx, id, client.ExecRequest{Command: "cat after", Backend: rung.BackendIsolate}); err != nil || res.Stdout != "freed\n" {
		t.Errorf("workspace after the fills: %+v, %v", res, err)
	}

	res := inContainer("yes flood")
	if !res.Truncated || res.ExitCode == 0 {
		t.Errorf("output flood: truncated %v, exit %d", res.Truncated, res.ExitCode)
	}
	if n := len(res.Stdout) + len(res.Stderr); n > 17<<20 {
		t.Errorf("output flood returned %d bytes", n)
	}

	// The test process is invisible and unreachable from inside.
	me := os.Getpid()
	res = inContainer(fmt.Sprintf("test ! -e /proc/%d && ! kill -0 %d 2>/dev/null && echo hidden", me, me))
	if strings.TrimSpace(res.Stdout) != "hidden" {
		t.Errorf("host pid %d visible from the container: %q %q", me, res.Stdout, res.Stderr)
	}

	other, err := c.Create(ctx, client.CreateRequest{Name: "bystander"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Exec(ctx, string(other.ID), client.ExecRequest{Command: "echo fine", Backend: rung.BackendContainer}); err != nil || res.Stdout != "fine\n" {
		t.Errorf("bystander sandbox: %+v, %v", res, err)
	}
}
