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
	"strings"
	"sync"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// TestParity is the tier parity suite (issue 11): every case of
// testdata/parity runs through backend auto on a base sandbox and through
// real bash in the same sandbox's container (backend container, the
// oracle: same files, user and environment), each from a fresh /workspace
// holding the same starting files and an empty /tmp. A case fails when
// auto's answer differs from bash's: stdout, stderr (unless the case says
// it is not stable), exit status, or the files left in /workspace and
// /tmp (type, mode, owner, content hash, symlink target). auto may send
// a case to the container; the test reports the share it served
// in-process. Each case also runs with backend isolate forced, which is
// measured (the share equal to bash), not failed.
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
// the machine's 2 cores keep them busy.
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
	t       *testing.T
	c       *client.Client
	ids     []string
	fixture []byte // tar of the starting files
}

func newParityRun(t *testing.T, c *client.Client, n int) *parityRun {
	p := &parityRun{t: t, c: c}
	for range n {
		sb, err := c.Create(t.Context(), client.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		p.ids = append(p.ids, string(sb.ID))
	}
	p.fixture = p.buildFixture(p.ids[0])
	return p
}

// runAll runs every case, each sandbox taking the next case in turn.
func (p *parityRun) runAll(cases []parityCase) []parityResult {
	results := make([]parityResult, len(cases))
	next := make(chan int)
	var wg sync.WaitGroup
	for _, id := range p.ids {
		wg.Go(func() {
			for i := range next {
				results[i] = p.runCase(id, cases[i])
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

func (p *parityRun) runCase(id string, pc parityCase) parityResult {
	r := parityResult{c: pc}
	r.auto = p.run(id, pc, rung.BackendAuto)
	r.bash = p.run(id, pc, rung.BackendContainer)
	r.isolate = p.run(id, pc, rung.BackendIsolate)
	r.autoDiff = parityDiff(pc, r.bash, r.auto)
	r.isolateDiff = parityDiff(pc, r.bash, r.isolate)
	return r
}

// run resets the sandbox's files and runs pc on backend.
func (p *parityRun) run(id string, pc parityCase, backend rung.Backend) parityOutcome {
	ctx := p.t.Context()
	if err := p.reset(id, pc); err != nil {
		return parityOutcome{Err: "reset: " + err.Error()}
	}
	res, err := p.c.Exec(ctx, id, client.ExecRequest{Command: pc.Script, Backend: backend, Stdin: pc.Stdin, TimeoutMS: 20000})
	if err != nil {
		return parityOutcome{Err: err.Error(), Backend: backend}
	}
	o := parityOutcome{Stdout: res.Stdout, Stderr: res.Stderr, Exit: res.ExitCode, Backend: res.Backend, Reason: res.Reason}
	ws, err := p.listing(id, "/workspace")
	if err != nil {
		o.Err = "list: " + err.Error()
	}
	tmp, err := p.listing(id, "/tmp")
	if err != nil {
		o.Err = "list: " + err.Error()
	}
	o.Files = ws + tmp
	return o
}

// reset empties /workspace and /tmp and puts the starting files back.
func (p *parityRun) reset(id string, pc parityCase) error {
	ctx := p.t.Context()
	for _, dir := range []string{"/workspace", "/tmp"} {
		ents, err := p.c.ListFiles(ctx, id, dir, false)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := p.c.Remove(ctx, id, e.Path, true); err != nil && !errors.Is(err, rung.ErrNotFound) {
				return err
			}
		}
	}
	fixture := p.fixture
	if pc.Files != nil {
		fixture = tarOf(pc.Files, nil)
	}
	return p.c.UploadTar(ctx, id, "/workspace", bytes.NewReader(fixture))
}

// listing describes every entry under dir: type, mode, owner, path, and
// a content hash or symlink target.
func (p *parityRun) listing(id, dir string) (string, error) {
	rc, err := p.c.DownloadTar(p.t.Context(), id, dir)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var lines []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		what := h.Linkname
		if h.Typeflag == tar.TypeReg {
			s := sha256.New()
			if _, err := io.Copy(s, tr); err != nil {
				return "", err
			}
			what = hex.EncodeToString(s.Sum(nil))[:16]
		}
		lines = append(lines, fmt.Sprintf("%c %04o %d:%d %s/%s %s", h.Typeflag, h.Mode&0o7777, h.Uid, h.Gid, dir, strings.TrimSuffix(h.Name, "/"), what))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n", nil
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
