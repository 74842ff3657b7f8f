package shell_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// newShell returns a shell over a fresh sandbox root.
func newShell(t testing.TB, cfg shell.Config) *shell.Shell {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"workspace", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root, err := storage.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	cfg.FS = root
	return shell.New(cfg)
}

func run(t testing.TB, sh *shell.Shell, ctx context.Context, script string) (shell.Result, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	res := sh.Run(ctx, shell.Request{Script: script, Stdout: &out, Stderr: &errb})
	return res, out.String(), errb.String()
}

func TestLimits(t *testing.T) {
	tests := []struct {
		name   string
		limits shell.Limits
		script string
		limit  string
	}{
		{"commands", shell.Limits{Commands: 100}, "while :; do :; done", "commands"},
		{"loop iterations", shell.Limits{LoopIterations: 50}, "for ((i=0;;i++)); do x=1; done", "loop_iterations"},
		{"loop in subshell", shell.Limits{LoopIterations: 50}, "(while true; do x=1; done)", "loop_iterations"},
		{"loop in pipeline", shell.Limits{LoopIterations: 50}, "while true; do echo y; done | while read l; do :; done", "loop_iterations"},
		{"output", shell.Limits{OutputBytes: 1000}, "while :; do echo 0123456789; done", "output_bytes"},
		{"string", shell.Limits{StringBytes: 1000}, "x=a; while :; do x=$x$x; done", "string_bytes"},
		{"array", shell.Limits{ArrayElems: 100}, "a=(); while :; do a+=(x); done", "array_elems"},
		{"depth", shell.Limits{Depth: 50}, "f() { f; }; f", "depth"},
		{"eval depth", shell.Limits{Depth: 50}, "e='eval \"$e\"'; eval \"$e\"", "depth"},
		{"write", shell.Limits{WriteBytes: 1000}, "while :; do echo 0123456789; done > /workspace/big", "write_bytes"},
		{"cmdsubst output", shell.Limits{StringBytes: 1000}, "x=$(while :; do echo 0123456789; done)", "string_bytes"},
		{"background", shell.Limits{LoopIterations: 50}, "while :; do :; done & wait", "loop_iterations"},
		{"brace", shell.Limits{ArrayElems: 1000}, "echo {1..100}{1..100}", "array_elems"},
		{"no limit", shell.Limits{}, "for i in 1 2 3; do echo $i; done", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sh := newShell(t, shell.Config{Limits: tc.limits})
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			res, _, stderr := run(t, sh, ctx, tc.script)
			if res.Limit != tc.limit {
				t.Fatalf("Run(%q).Limit = %q, want %q (exit %d, stderr %q)", tc.script, res.Limit, tc.limit, res.ExitCode, stderr)
			}
			if tc.limit == "" {
				return
			}
			if res.ExitCode != 126 {
				t.Errorf("exit = %d, want 126", res.ExitCode)
			}
			if !strings.Contains(stderr, tc.limit) {
				t.Errorf("stderr %q does not name the limit %s", stderr, tc.limit)
			}
		})
	}
}

func TestWallTime(t *testing.T) {
	sh := newShell(t, shell.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	res, _, stderr := run(t, sh, ctx, "while :; do :; done")
	if res.Limit != "wall_time" || res.ExitCode != 126 {
		t.Fatalf("Run = %+v, want wall_time/126", res)
	}
	if !strings.Contains(stderr, "wall_time") {
		t.Errorf("stderr %q does not name wall_time", stderr)
	}
	// A blocked pipeline must also end.
	ctx2, cancel2 := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel2()
	res, _, _ = run(t, sh, ctx2, "while :; do echo y; done | { read a; while :; do :; done; }")
	if res.Limit != "wall_time" {
		t.Fatalf("pipeline Run = %+v, want wall_time", res)
	}
}

// A cancelled context is not the wall-time limit.
func TestCanceledIsNotWallTime(t *testing.T) {
	sh := newShell(t, shell.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	res, _, stderr := run(t, sh, ctx, "while :; do :; done")
	if res.Limit != "canceled" || res.ExitCode != 126 || strings.Contains(stderr, "wall_time") {
		t.Errorf("Run = %+v, stderr %q; want canceled/126 without wall_time", res, stderr)
	}
}

func TestPanicRecovered(t *testing.T) {
	boom := shell.Tool{Run: func(ctx context.Context, c *shell.Call) int { panic("boom") }}
	sh := newShell(t, shell.Config{Tools: map[string]shell.Tool{"boom": boom}})
	for _, script := range []string{"boom", "echo x | boom", "x=$(boom)", "boom & wait", "boom | boom | boom"} {
		res, _, stderr := run(t, sh, t.Context(), script)
		if res.ExitCode != 126 && !strings.Contains(stderr, "internal error") {
			t.Errorf("Run(%q) = %+v, stderr %q: want a reported panic", script, res, stderr)
		}
	}
}

func TestUnsupported(t *testing.T) {
	sh := newShell(t, shell.Config{Tools: map[string]shell.Tool{"upper": upperTool}})
	tests := []struct {
		script      string
		unsupported bool
		exit        int
	}{
		{"python3 -c 'print(1)'", true, 127},
		{"echo hi | upper", false, 0},
		{"upper -z", true, shell.ExitUnsupported},
		{"command -v python3 || echo none", false, 0},
		{"./missing.sh", true, 127},
		{"echo ok", false, 0},
	}
	for _, tc := range tests {
		res, _, _ := run(t, sh, t.Context(), tc.script)
		if (res.Unsupported != nil) != tc.unsupported || res.ExitCode != tc.exit {
			t.Errorf("Run(%q) = %+v, want unsupported=%v exit=%d", tc.script, res, tc.unsupported, tc.exit)
		}
		if res.Unsupported != nil && !errors.Is(res.Unsupported, shell.ErrUnsupported) {
			t.Errorf("Run(%q).Unsupported = %v, does not wrap ErrUnsupported", tc.script, res.Unsupported)
		}
	}
}

func TestStreaming(t *testing.T) {
	sh := newShell(t, shell.Config{})
	pr, pw := io.Pipe()
	done := make(chan shell.Result, 1)
	go func() {
		done <- sh.Run(t.Context(), shell.Request{Script: "echo first; read x; echo second", Stdin: strings.NewReader("go\n"), Stdout: pw})
		pw.Close()
	}()
	buf := make([]byte, 6)
	if _, err := io.ReadFull(pr, buf); err != nil || string(buf) != "first\n" {
		t.Fatalf("first write = %q, %v", buf, err)
	}
	rest, _ := io.ReadAll(pr)
	if string(rest) != "second\n" {
		t.Errorf("rest = %q", rest)
	}
	<-done
}

// A stdin stream its client never closes does not keep an exec alive past
// its context: cat waiting on it ends when the exec is canceled.
func TestStreamedStdinCanceled(t *testing.T) {
	sh := newShell(t, shell.Config{})
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan shell.Result, 1)
	go func() {
		done <- sh.Run(ctx, shell.Request{Script: "read x; echo got $x; cat", Stdin: inR, Stdout: outW})
		outW.Close()
	}()
	if _, err := inW.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, len("got hello\n"))
	if _, err := io.ReadFull(outR, line); err != nil || string(line) != "got hello\n" {
		t.Fatalf("first line = %q, %v", line, err)
	}
	go io.Copy(io.Discard, outR) // ends when the run closes outW
	cancel()                     // cat is now waiting on a stream nobody closes
	if res := <-done; res.ExitCode == 0 {
		t.Errorf("a canceled exec exited 0: %+v", res)
	}
}
