package shell_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/shell"
)

// TestMemoryBudget runs memory bombs, each of which must end with its
// limit, and scripts that hold or churn a lot in total but little at once,
// which must not.
func TestMemoryBudget(t *testing.T) {
	const budget = 8 << 20
	loose := shell.Limits{MemoryBytes: budget, LoopIterations: 1 << 40, Commands: 1 << 40, ArrayElems: 1 << 40, StringBytes: 64 << 20}
	tests := []struct {
		name   string
		script string
		limit  string
	}{
		{"doubling string", "x=a; while :; do x=$x$x; done", "memory_bytes"},
		{"array of substitutions", "a=(); while :; do a+=(\"$(printf '%0100000d' 0)\"); done", "memory_bytes"},
		{"appended string", "s=; while :; do s+=$(printf '%01000d' 0); done", "memory_bytes"},
		{"assoc", "declare -A m; i=0; while :; do m[k$((i++))]=$(printf '%01000d' 0); done", "memory_bytes"},
		{"array in pipeline stage", "printf '%0100000d\\n' {1..200} | { a=(); while read l; do a+=(\"$l\"); done; }", "memory_bytes"},
		{"array in a job", "{ a=(); while :; do a+=(\"$(printf '%0100000d' 0)\"); done; } & wait", "memory_bytes"},
		{"mapfile", "printf '%0100000d\\n' {1..200} > /tmp/big; mapfile a < /tmp/big", "memory_bytes"},
		{"command substitution", "x=$(printf '%01000000d' {1..20})", "memory_bytes"},
		{"here-document", "x=$(printf '%07000000d' 0); cat <<EOF | cat\n$x$x\nEOF", "memory_bytes"},
		// Much in total, little at once.
		{"overwrite", "for i in {1..300}; do x=$(printf '%0100000d' $i); done; echo ${#x}", ""},
		{"unset", "for i in {1..300}; do a+=(\"$(printf '%0100000d' $i)\"); unset a; done", ""},
		{"subshells", "a=(); for i in {1..40}; do a[i%10]=$(printf '%0100000d' $i); echo | { b=(\"${a[@]}\"); b+=(x); }; (c=(\"${a[@]}\")); done", ""},
		{"local", "f() { local v=$(printf '%0100000d' 0); }; for i in {1..300}; do f; done", ""},
		{"stage per line", "for i in {1..200}; do printf '%0100000d\\n' 0 | while read l; do x=$l; done; done", ""},
		{"child shell", "for i in {1..100}; do bash -c 'x=$(printf \"%0100000d\" 0)'; done", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sh := newShell(t, shell.Config{Limits: loose, Tools: map[string]shell.Tool{"cat": catTool}})
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // catches a hang only
			defer cancel()
			res, _, stderr := run(t, sh, ctx, tc.script)
			if res.Limit != tc.limit {
				t.Fatalf("Run(%q) = %+v, stderr %q; want limit %q", tc.script, res, stderr, tc.limit)
			}
			if tc.limit != "" && (res.ExitCode != 126 || !strings.Contains(stderr, "limit exceeded: "+tc.limit)) {
				t.Errorf("Run(%q) = exit %d, stderr %q; want 126 naming %s", tc.script, res.ExitCode, stderr, tc.limit)
			}
		})
	}
}

// catTool copies stdin to stdout (the tool set lives above this package).
var catTool = shell.Tool{Run: func(ctx context.Context, c *shell.Call) int {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Stdin.Read(buf)
		if n > 0 {
			if _, err := c.Stdout.Write(buf[:n]); err != nil {
				return 1
			}
		}
		if err != nil {
			return 0
		}
	}
}}

// TestToolReserve checks the tool side: a reservation past the budget ends
// the exec with memory_bytes, TryReserve fails without ending it, and what
// a tool holds when it returns is given back.
func TestToolReserve(t *testing.T) {
	const budget = 4 << 20
	var free []int64
	tools := map[string]shell.Tool{
		"hold": {Run: func(ctx context.Context, c *shell.Call) int {
			if err := c.Reserve(3 << 20); err != nil {
				return 1
			}
			free = append(free, c.MemoryFree())
			return 0
		}},
		"hog": {Run: func(ctx context.Context, c *shell.Call) int {
			err := c.Reserve(budget + 1)
			if !errors.Is(err, rung.ErrLimit) {
				t.Errorf("Reserve past the budget = %v, want ErrLimit", err)
			}
			return 1
		}},
		// holdw and holdr overlap in a pipeline: holdw writes more than
		// the pipe holds, so it is still running when holdr reserves.
		"holdw": {Run: func(ctx context.Context, c *shell.Call) int {
			if err := c.Reserve(3 << 20); err != nil {
				return 1
			}
			c.Stdout.Write(make([]byte, 256<<10))
			return 0
		}},
		"holdr": {Run: func(ctx context.Context, c *shell.Call) int {
			if err := c.Reserve(3 << 20); err != nil {
				return 1
			}
			io.Copy(io.Discard, c.Stdin)
			return 0
		}},
		"try": {Run: func(ctx context.Context, c *shell.Call) int {
			if c.TryReserve(budget + 1) {
				t.Errorf("TryReserve past the budget succeeded")
			}
			if !c.TryReserve(1 << 20) {
				t.Errorf("TryReserve within the budget failed")
			}
			c.Release(1 << 20)
			return 0
		}},
	}
	sh := newShell(t, shell.Config{Limits: shell.Limits{MemoryBytes: budget}, Tools: tools})
	// Each hold keeps 3 of 4 MiB until it returns: one after another fit.
	res, out, stderr := run(t, sh, t.Context(), "hold; hold; hold; try; echo ok")
	if res.Limit != "" || out != "ok\n" {
		t.Fatalf("sequential holds: %+v %q %q", res, out, stderr)
	}
	if len(free) != 3 || free[0] != free[2] {
		t.Errorf("MemoryFree in each hold = %v, want three equal values", free)
	}
	res, _, stderr = run(t, sh, t.Context(), "hog; echo not reached")
	if res.Limit != "memory_bytes" || res.ExitCode != 126 || strings.Contains(stderr, "not reached") {
		t.Errorf("hog: %+v, stderr %q; want memory_bytes", res, stderr)
	}
	// Two holds at once do not fit.
	res, _, stderr = run(t, sh, t.Context(), "holdw | holdr")
	if res.Limit != "memory_bytes" {
		t.Errorf("holdw | holdr: %+v, stderr %q; want memory_bytes", res, stderr)
	}
}

// TestMemoryPool checks the daemon-wide pool: an exec draws from it as it
// grows and gives everything back at the end; a full pool refuses to admit
// (ErrLimit) and ends an exec that grows with daemon_memory_bytes.
func TestMemoryPool(t *testing.T) {
	pool := shell.NewMemoryPool(4<<20, 0)
	sh := newShell(t, shell.Config{Memory: pool, Limits: shell.Limits{MemoryBytes: 64 << 20}})
	res, out, _ := run(t, sh, t.Context(), "x=$(printf '%01000000d' 0); echo ${#x}")
	if res.Limit != "" || out != "1000000\n" || pool.Used() != 0 {
		t.Fatalf("small exec: %+v %q, pool used %d after; want success and 0", res, out, pool.Used())
	}
	res, _, stderr := run(t, sh, t.Context(), "a=(); while :; do a+=(\"$(printf '%0100000d' 0)\"); done")
	if res.Limit != "daemon_memory_bytes" || res.ExitCode != 126 {
		t.Fatalf("growing exec: %+v, stderr %q; want daemon_memory_bytes", res, stderr)
	}
	if pool.Used() != 0 {
		t.Errorf("pool used %d after the exec, want 0", pool.Used())
	}
	// Fill the pool with leases: the next admission is refused.
	var leases []*shell.Lease
	for {
		l, err := sh.Admit(t.Context())
		if err != nil {
			var le *rung.LimitError
			if !errors.As(err, &le) || le.Limit != "daemon_memory_bytes" || !errors.Is(err, rung.ErrLimit) {
				t.Fatalf("Admit on a full pool = %v, want a daemon_memory_bytes LimitError", err)
			}
			break
		}
		leases = append(leases, l)
	}
	res, _, _ = run(t, sh, t.Context(), "echo hi")
	if res.Limit != "daemon_memory_bytes" {
		t.Errorf("Run on a full pool = %+v, want daemon_memory_bytes", res)
	}
	for _, l := range leases {
		l.Release()
		l.Release() // idempotent
	}
	if pool.Used() != 0 {
		t.Errorf("pool used %d after releasing every lease, want 0", pool.Used())
	}
}
