package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Options configures [Run].
type Options struct {
	Sizes  Sizes
	Budget Budget         // per script and runner
	Filter *regexp.Regexp // scripts whose name matches; nil means all
	// JustBash includes just-bash (installed with npm into CacheDir).
	JustBash bool
	CacheDir string
	// Log receives progress lines; nil means none.
	Log func(format string, args ...any)
}

// Report is the JSON document `go run ./bench/cmd/peers` prints.
type Report struct {
	Time            string         `json:"time"`
	Command         string         `json:"command"`
	CPUs            int            `json:"cpus"`
	LoadAvgBefore   string         `json:"loadavg_before"` // /proc/loadavg when the run started
	LoadAvgAfter    string         `json:"loadavg_after"`
	GoVersion       string         `json:"go_version"`
	BashVersion     string         `json:"bash_version"`
	NodeVersion     string         `json:"node_version,omitempty"`
	JustBashVersion string         `json:"just_bash_version,omitempty"`
	JustBashError   string         `json:"just_bash_error,omitempty"`
	FilesOn         string         `json:"files_on"` // directory the isolate and bash fixtures live under
	Budget          BudgetJSON     `json:"budget"`
	Scripts         []ScriptReport `json:"scripts"`
}

// BudgetJSON is [Budget] as reported.
type BudgetJSON struct {
	MaxRuns  int     `json:"max_runs"`
	MinRuns  int     `json:"min_runs"`
	TimeSecs float64 `json:"time_per_script_and_runner_s"`
}

// ScriptReport is one script's results across runners.
type ScriptReport struct {
	Name    string                   `json:"name"`
	Script  string                   `json:"script"`
	Target  string                   `json:"target,omitempty"`
	Files   int                      `json:"files"`
	Runners map[string]*RunnerReport `json:"runners"`
	// Ratios of p50 latencies: below 1 means the isolate tier is faster.
	IsolateOverBash     float64 `json:"ratio_isolate_bash,omitempty"`
	IsolateOverJustBash float64 `json:"ratio_isolate_just_bash,omitempty"`
	// The same ratios for CPU time per run (p50).
	CPUIsolateOverBash     float64    `json:"cpu_ratio_isolate_bash,omitempty"`
	CPUIsolateOverJustBash float64    `json:"cpu_ratio_isolate_just_bash,omitempty"`
	Mismatches             []Mismatch `json:"mismatches,omitempty"`
	Notes                  []string   `json:"notes,omitempty"`
}

// RunnerReport is one runner's latency for one script, in microseconds.
type RunnerReport struct {
	Runs        int     `json:"runs"`
	P50         float64 `json:"p50_us"`
	P90         float64 `json:"p90_us"`
	P99         float64 `json:"p99_us"`
	CPUP50      float64 `json:"cpu_p50_us"` // CPU time per run (see [Sample].CPU)
	CPUP99      float64 `json:"cpu_p99_us"`
	Exit        int     `json:"exit"`
	StdoutBytes int     `json:"stdout_bytes"`
	Stderr      string  `json:"stderr,omitempty"` // first run's, cut to 300 bytes
	Error       string  `json:"error,omitempty"`
}

// Mismatch says how a runner's first-run stdout or exit status differs
// from bash's. SortedEqual is true when the lines are the same in another
// order (directory walk order, for instance).
type Mismatch struct {
	Runner      string `json:"runner"`
	ExitBash    int    `json:"exit_bash"`
	Exit        int    `json:"exit"`
	SortedEqual bool   `json:"sorted_equal"`
	Line        int    `json:"first_diff_line"` // 1-based; 0 when stdout is equal
	Bash        string `json:"bash_line"`
	Got         string `json:"got_line"`
}

// Run measures every selected script in every runner and returns the
// report. A runner that fails on a script is reported in that script's
// entry; Run returns an error only when it cannot run at all.
func Run(ctx context.Context, opt Options) (*Report, error) {
	logf := opt.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	rep := &Report{
		Time:          time.Now().UTC().Format(time.RFC3339),
		CPUs:          runtime.NumCPU(),
		LoadAvgBefore: LoadAvg(),
		GoVersion:     runtime.Version(),
		BashVersion:   firstLine(exec.CommandContext(ctx, "bash", "--version").Output()),
		FilesOn:       TempBase(),
		Budget:        BudgetJSON{opt.Budget.Runs, opt.Budget.MinRuns, opt.Budget.Time.Seconds()},
	}
	tmp, err := os.MkdirTemp(TempBase(), "rung-peers-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(tmp)

	var jb *JustBashProc
	if opt.JustBash {
		jb, err = startJustBash(ctx, opt, rep, logf)
		if err != nil {
			rep.JustBashError = err.Error()
			logf("just-bash unavailable: %v", err)
		} else {
			defer jb.Close()
		}
	}
	for _, s := range Scripts(opt.Sizes) {
		if opt.Filter != nil && !opt.Filter.MatchString(s.Name) {
			continue
		}
		rep.Scripts = append(rep.Scripts, runScript(ctx, tmp, s, opt.Budget, jb, logf))
		if err := ctx.Err(); err != nil {
			return rep, err
		}
	}
	rep.LoadAvgAfter = LoadAvg()
	return rep, nil
}

func startJustBash(ctx context.Context, opt Options, rep *Report, logf func(string, ...any)) (*JustBashProc, error) {
	cache := opt.CacheDir
	if cache == "" {
		var err error
		if cache, err = DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	if !JustBashInstalled(cache, JustBashVersion) {
		logf("installing just-bash@%s with npm into %s (once; ~2 min on a loaded machine)", JustBashVersion, cache)
	}
	dir, node, err := InstallJustBash(ctx, cache, JustBashVersion)
	rep.NodeVersion = node
	if err != nil {
		return nil, err
	}
	rep.JustBashVersion = JustBashVersion
	return StartJustBash(ctx, dir)
}

func runScript(ctx context.Context, tmp string, s Script, b Budget, jb *JustBashProc, logf func(string, ...any)) ScriptReport {
	fx := s.Fixture()
	sr := ScriptReport{Name: s.Name, Script: s.Script, Target: s.Target, Files: len(fx.Files), Runners: map[string]*RunnerReport{}}
	if fx.Git {
		if _, err := exec.LookPath("git"); err != nil {
			sr.Notes = append(sr.Notes, "skipped: the fixture needs the git binary: "+err.Error())
			return sr
		}
	}
	samples := map[string]Sample{}
	for _, name := range []string{Bash, Isolate} {
		logf("%s: %s", s.Name, name)
		sample, err := runGo(ctx, filepath.Join(tmp, s.Name+"-"+name), name, fx, s.Script, b)
		sr.Runners[name] = summarize(sample, err)
		if err == nil {
			samples[name] = sample
		}
	}
	switch {
	case jb == nil:
	case s.NoJustBash != "":
		sr.Notes = append(sr.Notes, "just-bash not run: "+s.NoJustBash)
	default:
		logf("%s: %s", s.Name, JustBash)
		sample, err := jb.Run(fx, s.Script, b)
		sr.Runners[JustBash] = summarize(sample, err)
		if err == nil {
			samples[JustBash] = sample
		}
	}
	sr.IsolateOverBash = ratio(sr.Runners[Isolate], sr.Runners[Bash])
	sr.IsolateOverJustBash = ratio(sr.Runners[Isolate], sr.Runners[JustBash])
	sr.CPUIsolateOverBash = cpuRatio(sr.Runners[Isolate], sr.Runners[Bash])
	sr.CPUIsolateOverJustBash = cpuRatio(sr.Runners[Isolate], sr.Runners[JustBash])
	if want, ok := samples[Bash]; ok {
		for _, name := range []string{Isolate, JustBash} {
			if got, ok := samples[name]; ok {
				if m, differ := Compare(want, got); differ {
					m.Runner = name
					sr.Mismatches = append(sr.Mismatches, m)
				}
			}
		}
	}
	return sr
}

// runGo materializes fx in dir, runs the named Go-driven runner there,
// and removes dir again.
func runGo(ctx context.Context, dir, runner string, fx Fixture, script string, b Budget) (Sample, error) {
	defer os.RemoveAll(dir)
	if err := Materialize(ctx, dir, fx); err != nil {
		return Sample{}, err
	}
	if runner == Isolate {
		return RunIsolate(ctx, dir, script, b)
	}
	return RunBash(ctx, dir, script, b)
}

func summarize(s Sample, err error) *RunnerReport {
	r := &RunnerReport{Runs: len(s.Times), Exit: s.Exit, StdoutBytes: len(s.Stdout), Stderr: cut(s.Stderr, 300)}
	if err != nil {
		r.Error = err.Error()
	}
	if len(s.Times) > 0 {
		r.P50 = Percentile(s.Times, 50)
		r.P90 = Percentile(s.Times, 90)
		r.P99 = Percentile(s.Times, 99)
	}
	if len(s.CPU) > 0 {
		r.CPUP50 = Percentile(s.CPU, 50)
		r.CPUP99 = Percentile(s.CPU, 99)
	}
	return r
}

func ratio(a, b *RunnerReport) float64 {
	if a == nil || b == nil || a.P50 == 0 || b.P50 == 0 {
		return 0
	}
	return round(a.P50/b.P50, 4)
}

func cpuRatio(a, b *RunnerReport) float64 {
	if a == nil || b == nil || a.CPUP50 == 0 || b.CPUP50 == 0 {
		return 0
	}
	return round(a.CPUP50/b.CPUP50, 4)
}

// Percentile returns the p-th percentile (nearest rank) of d, in
// microseconds rounded to 0.1 µs. d is sorted in place.
func Percentile(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := (len(d)*p + 99) / 100 // ceil(n*p/100), the nearest rank
	i = min(max(i, 1), len(d))
	return round(float64(d[i-1].Nanoseconds())/1e3, 1)
}

func round(x float64, digits int) float64 {
	f := 1.0
	for range digits {
		f *= 10
	}
	return float64(int64(x*f+0.5)) / f
}

// Compare reports whether got's exit status or stdout differ from
// want's (bash's), and where.
func Compare(want, got Sample) (Mismatch, bool) {
	m := Mismatch{ExitBash: want.Exit, Exit: got.Exit}
	if want.Stdout == got.Stdout {
		return m, want.Exit != got.Exit
	}
	wl, gl := strings.Split(want.Stdout, "\n"), strings.Split(got.Stdout, "\n")
	for i := range max(len(wl), len(gl)) {
		w, g := at(wl, i), at(gl, i)
		if w != g || i >= len(wl) || i >= len(gl) {
			m.Line, m.Bash, m.Got = i+1, cut(w, 200), cut(g, 200)
			break
		}
	}
	slices.Sort(wl)
	slices.Sort(gl)
	m.SortedEqual = slices.Equal(wl, gl)
	return m, true
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "<EOF>"
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// LoadAvg returns the first three fields of /proc/loadavg ("" when it
// cannot be read).
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func firstLine(b []byte, err error) string {
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}
