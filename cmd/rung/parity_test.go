package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// TestParity is the tier parity suite (issue 11): every case of
// testdata/parity runs through backend auto on a base sandbox and through
// real bash in the same sandbox's container (backend container, the
// oracle: same files, user and environment), each from a /workspace
// holding the same starting files and an empty /tmp. A case fails when
// auto's answer differs from bash's: stdout, stderr (unless the case says
// it is not stable), exit status, or the files left in /workspace and
// /tmp (type, mode, owner, content hash, symlink target). auto may send
// a case to the container; the test reports the share it served
// in-process. A case auto sent to the container also runs with backend
// isolate forced, which is measured (the share equal to bash), not
// failed; when auto ran it in-process, its outcome is the forced one.
// A run's files are put back only when the run before left them
// otherwise than the last reset did (see parityRun.reset).
//
// RUNG_PARITY_RUN=substring runs only the cases whose name or script
// contains it; RUNG_PARITY_REPORT=file writes every outcome as JSON lines.
func TestParity(t *testing.T) {
	c, _ := startBaseDaemon(t)
	cases, err := loadParityCases("testdata/parity")
	if err != nil {
		t.Fatal(err)
	}
	if extra := os.Getenv("RUNG_PARITY_EXTRA"); extra != "" {
		more, err := loadFixtureCases(extra)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, more...)
	}
	if f := os.Getenv("RUNG_PARITY_RUN"); f != "" {
		var keep []parityCase
		for _, pc := range cases {
			if strings.Contains(pc.Name, f) || strings.Contains(pc.Script, f) {
				keep = append(keep, pc)
			}
		}
		cases = keep
	}
	p := newParityRun(t, c, paritySandboxes)
	start := time.Now()
	results := p.runAll(cases)
	st := paritySummary(results)
	t.Logf("%d resets of the files, %d skipped (the files were as the last reset left them)", p.resets.Load(), p.skipped.Load())
	t.Logf("%d cases in %s: auto served %.1f%% in-process, %d differ from bash (%.2f%%); isolate forced equal %.1f%%",
		st.total, time.Since(start).Round(time.Second), st.pct(st.inProcess), st.autoDiffer, st.pct(st.autoDiffer), st.pct(st.isolateEqual))
	for _, r := range results {
		if r.autoDiff != "" {
			t.Errorf("%s: %q: auto (%s: %s) differs from bash:\n%s", r.c.Name, r.c.Script, r.auto.Backend, r.auto.Reason, r.autoDiff)
		}
	}
	if out := os.Getenv("RUNG_PARITY_REPORT"); out != "" {
		writeParityReport(t, out, results)
	}
}

// paritySandboxes is how many sandboxes the suite runs cases on at once:
// a case is mostly waiting for container execs, so more sandboxes than
// the machine's 2 cores keep them busy. More do not help there: the
// whole suite took 2m26s with 4, 2m42s with 6 and 2m46s with 8 (one run
// each at load 9-12).
const paritySandboxes = 4

// parityOutcome is what one run of a case did.
type parityOutcome struct {
	Stdout, Stderr string
	Exit           int
	Files          string // listing of /workspace and /tmp
	Backend        rung.Backend
	Reason         string
	Err            string // no result (an API error)
}

type parityResult struct {
	c                     parityCase
	auto, bash, isolate   parityOutcome
	autoDiff, isolateDiff string
}

type parityRun struct {
	t          *testing.T
	c          *client.Client
	sbs        []*paritySandbox
	fixture    []byte // tar of the starting files
	fixtureKey string // its SHA-256

	mu    sync.Mutex        // guards clean
	clean map[string]string // fixture's key -> its state right after an upload (see paritySandbox.state), no root times
	// resets counts the resets done and skipped, for the log.
	resets, skipped atomic.Int64
}

// paritySandbox is one sandbox of the run and what the runner knows of
// its files. Only its own goroutine of runAll uses it.
type paritySandbox struct {
	id string
	// fixture is the key of the starting files the last reset put
	// back, and clean their state then, "" when unknown.
	fixture, clean string
	// state is the files' state after the last run: the listing of
	// /workspace and /tmp with modification times (whole seconds, as the
	// tar download has them), followed by the modification times of
	// /workspace and /tmp themselves (to the nanosecond), which change
	// whenever an entry is made, removed or renamed in them, a FIFO or
	// socket (which the tar download leaves out) too; "" when unknown.
	state string
}

func newParityRun(t *testing.T, c *client.Client, n int) *parityRun {
	p := &parityRun{t: t, c: c, clean: map[string]string{}}
	for range n {
		sb, err := c.Create(t.Context(), client.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		p.sbs = append(p.sbs, &paritySandbox{id: string(sb.ID)})
	}
	p.fixture = p.buildFixture(p.sbs[0].id)
	sum := sha256.Sum256(p.fixture)
	p.fixtureKey = string(sum[:])
	return p
}

// runAll runs every case, each sandbox taking the next case in turn.
func (p *parityRun) runAll(cases []parityCase) []parityResult {
	results := make([]parityResult, len(cases))
	next := make(chan int)
	var wg sync.WaitGroup
	for _, sb := range p.sbs {
		wg.Go(func() {
			for i := range next {
				results[i] = p.runCase(sb, cases[i])
			}
		})
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// runCase runs pc through auto and bash and, when auto sent it to the
// container, with isolate forced. When auto ran it in-process, the
// forced run would run the same admitted program from the same files in
// the same tier, so auto's outcome stands for it.
func (p *parityRun) runCase(sb *paritySandbox, pc parityCase) parityResult {
	r := parityResult{c: pc}
	r.auto = p.run(sb, pc, rung.BackendAuto)
	r.bash = p.run(sb, pc, rung.BackendContainer)
	r.autoDiff = parityDiff(pc, r.bash, r.auto)
	if r.auto.Backend == rung.BackendIsolate && r.auto.Err == "" {
		r.isolate, r.isolateDiff = r.auto, r.autoDiff
		return r
	}
	r.isolate = p.run(sb, pc, rung.BackendIsolate)
	r.isolateDiff = parityDiff(pc, r.bash, r.isolate)
	return r
}

// run puts the starting files back unless the last run left them as
// they were, and runs pc on backend.
func (p *parityRun) run(sb *paritySandbox, pc parityCase, backend rung.Backend) parityOutcome {
	ctx := p.t.Context()
	fixture, key := p.fixture, p.fixtureKey
	if pc.Files != nil {
		fixture = tarOf(pc.Files, nil)
		sum := sha256.Sum256(fixture)
		key = string(sum[:])
	}
	if err := p.reset(sb, fixture, key); err != nil {
		sb.fixture, sb.state = "", ""
		return parityOutcome{Err: "reset: " + err.Error()}
	}
	res, err := p.c.Exec(ctx, sb.id, client.ExecRequest{Command: pc.Script, Backend: backend, Stdin: pc.Stdin, TimeoutMS: 20000})
	if err != nil {
		sb.state = ""
		return parityOutcome{Err: err.Error(), Backend: backend}
	}
	o := parityOutcome{Stdout: res.Stdout, Stderr: res.Stderr, Exit: res.ExitCode, Backend: res.Backend, Reason: res.Reason}
	files, state, err := p.listing(sb.id)
	if err != nil {
		o.Err = "list: " + err.Error()
	}
	o.Files, sb.state = files, state
	return o
}

// reset empties /workspace and /tmp and puts fixture (whose SHA-256 is
// key) back, unless the
// files are still in the state the last reset left them in: same
// entries, types, modes, owners, contents, link targets and modification
// times, and /workspace and /tmp not modified since. (What that does not
// see, an access time or a change time alone, no case compares between
// its runs: they differ from one reset to the next too.)
func (p *parityRun) reset(sb *paritySandbox, fixture []byte, key string) error {
	if sb.fixture == key && sb.state != "" && sb.state == sb.clean {
		p.skipped.Add(1)
		return nil
	}
	p.resets.Add(1)
	sb.fixture, sb.state, sb.clean = "", "", ""
	ctx := p.t.Context()
	for _, dir := range []string{"/workspace", "/tmp"} {
		ents, err := p.c.ListFiles(ctx, sb.id, dir, false)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := p.c.Remove(ctx, sb.id, e.Path, true); err != nil && !errors.Is(err, rung.ErrNotFound) {
				return err
			}
		}
	}
	if err := p.c.UploadTar(ctx, sb.id, "/workspace", bytes.NewReader(fixture)); err != nil {
		return err
	}
	p.mu.Lock()
	clean, ok := p.clean[key]
	p.mu.Unlock()
	if !ok {
		_, state, err := p.listing(sb.id)
		if err != nil {
			return err
		}
		clean, _, _ = strings.Cut(state, "\x00")
		p.mu.Lock()
		p.clean[key] = clean
		p.mu.Unlock()
	}
	times, err := p.rootTimes(sb.id)
	if err != nil {
		return err
	}
	sb.fixture, sb.clean, sb.state = key, clean+"\x00"+times, clean+"\x00"+times
	return nil
}

// rootTimes is the modification times of /workspace and /tmp.
func (p *parityRun) rootTimes(id string) (string, error) {
	var times []string
	for _, dir := range []string{"/workspace", "/tmp"} {
		fi, err := p.c.Stat(p.t.Context(), id, dir)
		if err != nil {
			return "", err
		}
		times = append(times, fi.ModTime.Format(time.RFC3339Nano))
	}
	return strings.Join(times, " "), nil
}

// listing describes every entry under /workspace and /tmp, as files
// (what a case's runs compare: type, mode, owner, path, and a content
// hash or symlink target) and as state (the same with modification
// times, then a NUL and rootTimes).
func (p *parityRun) listing(id string) (files, state string, err error) {
	var fl, sl []string
	for _, dir := range []string{"/workspace", "/tmp"} {
		f, s, err := p.listDir(id, dir)
		if err != nil {
			return "", "", err
		}
		fl, sl = append(fl, f), append(sl, s)
	}
	times, err := p.rootTimes(id)
	if err != nil {
		return "", "", err
	}
	return strings.Join(fl, ""), strings.Join(sl, "") + "\x00" + times, nil
}

// listDir lists dir from its tar download: one sorted line per entry,
// without and with its modification time (but a symlink's).
func (p *parityRun) listDir(id, dir string) (files, state string, err error) {
	rc, err := p.c.DownloadTar(p.t.Context(), id, dir)
	if err != nil {
		return "", "", err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var lines, timed []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", "", err
		}
		what := h.Linkname
		if h.Typeflag == tar.TypeReg {
			s := sha256.New()
			if _, err := io.Copy(s, tr); err != nil {
				return "", "", err
			}
			what = hex.EncodeToString(s.Sum(nil))[:16]
		}
		line := fmt.Sprintf("%c %04o %d:%d %s/%s %s", h.Typeflag, h.Mode&0o7777, h.Uid, h.Gid, dir, strings.TrimSuffix(h.Name, "/"), what)
		lines = append(lines, line)
		if h.Typeflag != tar.TypeSymlink {
			// A symlink's own time is when the upload made it (the
			// upload sets the times of what links point to); it changes
			// in place only with touch -h.
			line += " " + strconv.FormatInt(h.ModTime.Unix(), 10)
		}
		timed = append(timed, line)
	}
	sort.Strings(lines)
	sort.Strings(timed)
	return strings.Join(lines, "\n") + "\n", strings.Join(timed, "\n") + "\n", nil
}

// parityDiff describes how got differs from bash's outcome want, or "".
func parityDiff(pc parityCase, want, got parityOutcome) string {
	var sb strings.Builder
	if want.Err != "" || got.Err != "" {
		fmt.Fprintf(&sb, "no result: bash %q, got %q\n", want.Err, got.Err)
	}
	if !pc.StdoutAny && want.Stdout != got.Stdout {
		fmt.Fprintf(&sb, "stdout:\n  bash: %q\n  got:  %q\n", want.Stdout, got.Stdout)
	}
	if !pc.StderrAny && want.Stderr != got.Stderr {
		fmt.Fprintf(&sb, "stderr:\n  bash: %q\n  got:  %q\n", want.Stderr, got.Stderr)
	}
	if want.Exit != got.Exit {
		fmt.Fprintf(&sb, "exit: bash %d, got %d\n", want.Exit, got.Exit)
	}
	if want.Files != got.Files {
		fmt.Fprintf(&sb, "files:\n  bash: %q\n  got:  %q\n", want.Files, got.Files)
	}
	return sb.String()
}

type parityStats struct {
	total, inProcess, autoDiffer, isolateEqual int
}

func (s parityStats) pct(n int) float64 {
	if s.total == 0 {
		return 0
	}
	return 100 * float64(n) / float64(s.total)
}

func paritySummary(results []parityResult) parityStats {
	var s parityStats
	for _, r := range results {
		s.total++
		if r.auto.Backend == rung.BackendIsolate {
			s.inProcess++
		}
		if r.autoDiff != "" {
			s.autoDiffer++
		}
		if r.isolateDiff == "" {
			s.isolateEqual++
		}
	}
	return s
}

func writeParityReport(t *testing.T, path string, results []parityResult) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, r := range results {
		enc.Encode(map[string]any{
			"name": r.c.Name, "script": r.c.Script, "auto": r.auto, "bash": r.bash, "isolate": r.isolate,
			"auto_diff": r.autoDiff, "isolate_diff": r.isolateDiff,
		})
	}
}

// loadFixtureCases reads recorded cases in the shared conformance format
// (JSON lines with id, command and files) as extra input: their recorded
// answers are not used, bash in the container answers again.
func loadFixtureCases(path string) ([]parityCase, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []parityCase
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var fx struct {
			ID      string            `json:"id"`
			Command string            `json:"command"`
			Files   map[string]string `json:"files"`
		}
		if err := json.Unmarshal([]byte(line), &fx); err != nil {
			return nil, err
		}
		if fx.Files == nil {
			fx.Files = map[string]string{}
		}
		out = append(out, parityCase{Name: "fixture:" + fx.ID, Script: fx.Command, Files: fx.Files})
	}
	return out, nil
}
