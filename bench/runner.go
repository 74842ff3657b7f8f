package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"rung.dev/rung/shell"
	"rung.dev/rung/shell/tools"
	"rung.dev/rung/storage"
)

// Runner names, as they appear in the report.
const (
	Isolate  = "isolate"
	Bash     = "bash"
	JustBash = "just-bash"
)

// Budget bounds how often one runner runs one script: at most Runs timed
// runs, stopping early once Time has passed (but never before MinRuns).
type Budget struct {
	Runs    int
	MinRuns int
	Time    time.Duration
}

func (b Budget) more(done int, start time.Time) bool {
	if done < b.MinRuns {
		return true
	}
	return done < b.Runs && time.Since(start) < b.Time
}

// Sample is what one runner did with one script: the outcome of a first,
// untimed run on fresh files, then the latency of each timed run.
type Sample struct {
	Stdout string
	Stderr string
	Exit   int
	Times  []time.Duration // wall time per timed run
	// CPU is the CPU time (user+system) per timed run: of this process
	// for the isolate tier, of bash and the children it waited for, of
	// the Node process for just-bash. It inflates much less than wall
	// time on a loaded machine.
	CPU []time.Duration
}

// env is the environment the scripts see (on top of each runner's
// defaults): a fixed locale and time zone, so outputs compare.
var env = map[string]string{"LC_ALL": "C.UTF-8", "TZ": "UTC"}

// RunIsolate runs script in the isolate tier with every tool, over the
// sandbox root dir (see [Materialize]), with /workspace as the working
// directory. Stdout goes to a buffer that is reset per run.
func RunIsolate(ctx context.Context, dir, script string, b Budget) (Sample, error) {
	r, err := newIsolateRun(dir, script)
	if err != nil {
		return Sample{}, err
	}
	defer r.close()
	res := r.run(ctx)
	s := Sample{Stdout: r.out.String(), Stderr: r.errb.String(), Exit: res.ExitCode}
	if res.Unsupported != nil {
		s.Stderr += fmt.Sprintf("[unsupported: %v]\n", res.Unsupported)
	}
	start := time.Now()
	for b.more(len(s.Times), start) {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		t0, c0 := time.Now(), selfCPU()
		r.run(ctx)
		s.Times = append(s.Times, time.Since(t0))
		s.CPU = append(s.CPU, selfCPU()-c0)
	}
	return s, nil
}

// isolateRun is one script bound to one sandbox root in the isolate tier.
type isolateRun struct {
	root      *storage.Root
	sh        *shell.Shell
	req       shell.Request
	out, errb bytes.Buffer // the last run's output
}

func newIsolateRun(dir, script string) (*isolateRun, error) {
	root, err := storage.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("isolate: %w", err)
	}
	r := &isolateRun{root: root, sh: shell.New(shell.Config{FS: root, Tools: tools.All()})}
	r.req = shell.Request{Script: script, Dir: "/workspace", Env: env, Stdout: &r.out, Stderr: &r.errb}
	return r, nil
}

func (r *isolateRun) run(ctx context.Context) shell.Result {
	r.out.Reset()
	r.errb.Reset()
	return r.sh.Run(ctx, r.req)
}

func (r *isolateRun) close() { r.root.Close() }

// RunBash runs script with real bash: fork+exec of `bash -c script` in
// dir/workspace, stdout and stderr captured through pipes, as a daemon
// running a command on the host would.
func RunBash(ctx context.Context, dir, script string, b Budget) (Sample, error) {
	r, err := newBashRun(dir, script)
	if err != nil {
		return Sample{}, err
	}
	code, err := r.run(ctx)
	if err != nil {
		return Sample{}, err
	}
	s := Sample{Stdout: r.out.String(), Stderr: r.errb.String(), Exit: code}
	start := time.Now()
	for b.more(len(s.Times), start) {
		t0 := time.Now()
		if _, err := r.run(ctx); err != nil {
			return s, err
		}
		s.Times = append(s.Times, time.Since(t0))
		s.CPU = append(s.CPU, r.cpu)
	}
	return s, nil
}

// bashRun is one script bound to one working directory for real bash.
type bashRun struct {
	bash, dir, script string
	environ           []string
	out, errb         bytes.Buffer  // the last run's output
	cpu               time.Duration // the last run's CPU time (bash and its children)
}

func newBashRun(dir, script string) (*bashRun, error) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		return nil, fmt.Errorf("bash: %w", err)
	}
	ws := filepath.Join(dir, "workspace")
	r := &bashRun{bash: bash, dir: ws, script: script,
		environ: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ws}}
	for k, v := range env {
		r.environ = append(r.environ, k+"="+v)
	}
	return r, nil
}

// run forks and execs bash once and returns its exit status; the error
// is for a bash that could not be run at all.
func (r *bashRun) run(ctx context.Context) (int, error) {
	r.out.Reset()
	r.errb.Reset()
	cmd := exec.CommandContext(ctx, r.bash, "-c", r.script)
	cmd.Dir = r.dir
	cmd.Env = r.environ
	cmd.Stdout = &r.out
	cmd.Stderr = &r.errb
	err := cmd.Run()
	r.cpu = 0
	if cmd.ProcessState != nil {
		r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.Exited() {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("bash: %w", err)
	}
	return 0, nil
}

// selfCPU is this process's CPU time so far (user+system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
