package bench

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// JustBashVersion is the just-bash release the bench installs. Its
// package.json asks for node >=20.18.1; [InstallJustBash] checks that
// against the installed node and says so when it does not hold.
const JustBashVersion = "3.4.2"

//go:embed justbash/run.mjs
var runMJS []byte

// DefaultCacheDir is where just-bash is installed: $RUNG_BENCH_CACHE,
// else rung-bench under the user's cache directory ($XDG_CACHE_HOME or
// ~/.cache), outside the repository so node_modules is never committed
// and one install serves every later run on the machine.
func DefaultCacheDir() (string, error) {
	if d := os.Getenv("RUNG_BENCH_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache dir: %w", err)
	}
	return filepath.Join(d, "rung-bench"), nil
}

// JustBashDir is the directory holding the install of version under
// cacheDir (its node_modules and the driver script).
func JustBashDir(cacheDir, version string) string {
	return filepath.Join(cacheDir, "just-bash-"+version)
}

// JustBashInstalled reports whether version is installed under cacheDir.
func JustBashInstalled(cacheDir, version string) bool {
	_, err := os.Stat(filepath.Join(JustBashDir(cacheDir, version), "node_modules", "just-bash", "package.json"))
	return err == nil
}

// InstallJustBash installs just-bash@version with npm under cacheDir
// unless it is there already (the first install takes about two minutes
// on a loaded 2-core machine), writes the driver script next to it, and
// checks the package's engines field against `node --version`. It
// returns the install directory and the node version.
func InstallJustBash(ctx context.Context, cacheDir, version string) (dir, nodeVersion string, err error) {
	dir = JustBashDir(cacheDir, version)
	if !JustBashInstalled(cacheDir, version) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", "", fmt.Errorf("install just-bash: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private": true}`+"\n"), 0o644); err != nil {
			return "", "", fmt.Errorf("install just-bash: %w", err)
		}
		cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "just-bash@"+version)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("install just-bash@%s: npm: %w: %s", version, err, lastLines(out, 5))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "run.mjs"), runMJS, 0o644); err != nil {
		return "", "", fmt.Errorf("install just-bash: %w", err)
	}
	out, err := exec.CommandContext(ctx, "node", "--version").Output()
	if err != nil {
		return "", "", fmt.Errorf("node --version: %w", err)
	}
	nodeVersion = strings.TrimSpace(string(out))
	pkg, err := os.ReadFile(filepath.Join(dir, "node_modules", "just-bash", "package.json"))
	if err != nil {
		return "", "", fmt.Errorf("install just-bash: %w", err)
	}
	var meta struct {
		Engines struct{ Node string } `json:"engines"`
	}
	if err := json.Unmarshal(pkg, &meta); err != nil {
		return "", "", fmt.Errorf("just-bash package.json: %w", err)
	}
	if !nodeSatisfies(nodeVersion, meta.Engines.Node) {
		return "", "", fmt.Errorf("just-bash@%s needs node %s, have %s (an older just-bash may accept it: npm view just-bash@X engines)",
			version, meta.Engines.Node, nodeVersion)
	}
	return dir, nodeVersion, nil
}

// nodeSatisfies checks a version against an engines range of the only
// form just-bash uses, ">=X.Y.Z" (anything else is accepted).
func nodeSatisfies(have, want string) bool {
	min, ok := strings.CutPrefix(strings.TrimSpace(want), ">=")
	if !ok {
		return true
	}
	h, w := semver(have), semver(min)
	for i := range 3 {
		if h[i] != w[i] {
			return h[i] > w[i]
		}
	}
	return true
}

func semver(v string) [3]int {
	var out [3]int
	for i, part := range strings.SplitN(strings.TrimPrefix(strings.TrimSpace(v), "v"), ".", 3) {
		out[i], _ = strconv.Atoi(part)
	}
	return out
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// JustBashProc is one Node process running the driver script. It serves
// one request at a time and is not safe for concurrent use.
type JustBashProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr lockedBuffer // node's stderr, written by exec's copying goroutine
}

// lockedBuffer is a bytes.Buffer safe for one writer and readers.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// StartJustBash starts node on the driver in dir (from
// [InstallJustBash]). The process lives until Close or until ctx ends.
func StartJustBash(ctx context.Context, dir string) (*JustBashProc, error) {
	p := &JustBashProc{cmd: exec.CommandContext(ctx, "node", "run.mjs")}
	p.cmd.Dir = dir
	p.cmd.Stderr = &p.stderr
	in, err := p.cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start just-bash: %w", err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start just-bash: %w", err)
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start just-bash: %w", err)
	}
	p.in, p.out = in, bufio.NewReader(out)
	return p, nil
}

// Run seeds a fresh just-bash with fx's files under /workspace and runs
// script there: once untimed for its output, then timed per b. It is
// bounded by the context given to [StartJustBash]: when that ends, node
// is killed and Run returns an error.
func (p *JustBashProc) Run(fx Fixture, script string, b Budget) (Sample, error) {
	files := make(map[string]string, len(fx.Files)+len(fx.Modified))
	for n, c := range fx.Files {
		files["/workspace/"+n] = c
	}
	for n, c := range fx.Modified {
		files["/workspace/"+n] = c
	}
	req := map[string]any{
		"files": files, "mtimeMs": FixedTime.UnixMilli(), "cwd": "/workspace",
		"env": env, "script": script,
		"runs": b.Runs, "minRuns": b.MinRuns, "budgetMs": float64(b.Time) / float64(time.Millisecond),
	}
	line, err := json.Marshal(req)
	if err != nil {
		return Sample{}, fmt.Errorf("just-bash request: %w", err)
	}
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		return Sample{}, fmt.Errorf("just-bash request: %w (node stderr: %s)", err, lastLines(p.stderr.Bytes(), 5))
	}
	reply, err := p.out.ReadBytes('\n')
	if err != nil {
		return Sample{}, fmt.Errorf("just-bash reply: %w (node stderr: %s)", err, lastLines(p.stderr.Bytes(), 5))
	}
	var r struct {
		Stdout   string
		Stderr   string
		ExitCode int
		TimesNs  []int64
		CPUNs    []int64
		Error    string
	}
	if err := json.Unmarshal(reply, &r); err != nil {
		return Sample{}, fmt.Errorf("just-bash reply: %w", err)
	}
	if r.Error != "" {
		return Sample{}, fmt.Errorf("just-bash: %s", r.Error)
	}
	s := Sample{Stdout: r.Stdout, Stderr: r.Stderr, Exit: r.ExitCode}
	for _, ns := range r.TimesNs {
		s.Times = append(s.Times, time.Duration(ns))
	}
	for _, ns := range r.CPUNs {
		s.CPU = append(s.CPU, time.Duration(ns))
	}
	return s, nil
}

// Close ends the Node process (closing its input ends its loop) and
// waits for it.
func (p *JustBashProc) Close() error {
	p.in.Close()
	err := p.cmd.Wait()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return fmt.Errorf("just-bash exited: %w: %s", ee, lastLines(p.stderr.Bytes(), 5))
	}
	return err
}
