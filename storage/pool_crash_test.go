package storage_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/storage"
)

// The crash test runs the test binary again as a child (TestCrashChild,
// selected by crashDirEnv) that works on a pool in a loop and prints
// "committed <op> <name>" after each operation returns. The parent kills
// it with SIGKILL at a random moment, re-opens the pool as a restarted
// daemon would, reconciles, and checks that every committed operation is
// in effect and that nothing leaked.

const (
	crashDirEnv = "RUNG_CRASH_POOL_DIR"
	crashRunEnv = "RUNG_CRASH_RUN"
)

// TestCrashChild is the child side; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("only run as the child of TestCrash")
	}
	run := os.Getenv(crashRunEnv)
	ctx := t.Context()
	p, err := storage.Open(ctx, storage.PoolConfig{Dir: dir})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	begin := func(op, name string) { fmt.Println("begin", op, name) }
	commit := func(op, name string, err error) {
		if err != nil {
			fmt.Println("error", op, name, err)
			os.Exit(2)
		}
		fmt.Println("committed", op, name) // a direct write(2) to the pipe
	}
	// Bounded, so an orphaned child cannot run for ever.
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		sbx := fmt.Sprintf("sbx_%s_%d", run, i)
		snp := fmt.Sprintf("snp_%s_%d", run, i)
		fork := sbx + "_f"
		begin("create", sbx)
		commit("create", sbx, p.Create(ctx, sbx))
		begin("write", sbx)
		commit("write", sbx, writeSynced(p, sbx, sbx))
		begin("snapshot", snp)
		commit("snapshot", snp, p.Snapshot(ctx, sbx, snp))
		begin("fork", fork)
		commit("fork", fork, p.Fork(ctx, snp, fork))
		begin("write", fork)
		commit("write", fork, writeSynced(p, fork, fork+"!"))
		begin("delete", sbx)
		commit("delete", sbx, p.Delete(ctx, sbx))
		if i%2 == 1 {
			begin("delete", snp)
			commit("delete", snp, p.Delete(ctx, snp))
		}
	}
	os.Exit(0)
}

// writeSynced writes data to /workspace/data of name through the file
// view and fsyncs it.
func writeSynced(p *storage.Pool, name, data string) error {
	r, err := p.Root(name)
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := r.OpenFile("/workspace/data", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, data)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// crashModel is what the committed log promises. An operation that
// began but did not commit (the one the kill interrupted) may or may not
// have taken effect: its subvolume is left out of the model, so Reconcile
// removes it if it exists, and an interrupted write may have landed.
type crashModel struct {
	data    map[string]string // live subvolume -> content of /workspace/data ("" if not yet written)
	deleted map[string]bool
	maybe   map[string]string // subvolume -> content an interrupted write may have left
	pending []string          // the begun, uncommitted operation: op, name
}

func writeData(name string) string {
	if strings.HasSuffix(name, "_f") {
		return name + "!"
	}
	return name
}

func (m *crashModel) apply(t *testing.T, line string) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "committed" && f[0] != "begin" {
		return
	}
	if f[0] == "begin" {
		m.pending = f[1:]
		return
	}
	m.pending = nil
	op, name := f[1], f[2]
	switch op {
	case "create":
		m.data[name] = ""
	case "write":
		m.data[name] = writeData(name)
	case "snapshot":
		m.data[name] = m.data["sbx_"+strings.TrimPrefix(name, "snp_")]
	case "fork":
		m.data[name] = m.data["snp_"+strings.TrimSuffix(strings.TrimPrefix(name, "sbx_"), "_f")]
	case "delete":
		delete(m.data, name)
		m.deleted[name] = true
	default:
		t.Fatalf("unknown op in %q", line)
	}
}

// interrupted folds the uncommitted operation of a killed child into the
// model's uncertainty.
func (m *crashModel) interrupted() {
	if m.pending == nil {
		return
	}
	op, name := m.pending[0], m.pending[1]
	m.pending = nil
	switch op {
	case "write":
		m.maybe[name] = writeData(name)
	case "delete":
		delete(m.data, name) // gone or not: reconcile decides
	}
}

func TestCrash(t *testing.T) {
	testenv.Require(t, "root", "mkfs.btrfs")
	ctx := t.Context()
	dir := t.TempDir()
	image := filepath.Join(dir, "pool.img")
	cfg := storage.PoolConfig{Dir: dir, ImageSize: 2 << 30}
	p, err := storage.Open(ctx, cfg)
	must(t, err)
	must(t, p.Close())
	// Whatever happens, leave no mount or loop device behind.
	t.Cleanup(func() {
		if p, err := storage.Open(t.Context(), cfg); err == nil {
			p.Close()
		}
	})

	// RUNG_CRASH_BUDGET=5m runs a long stress.
	budget := 8 * time.Second
	if testing.Short() {
		budget = 3 * time.Second
	}
	if d, err := time.ParseDuration(os.Getenv("RUNG_CRASH_BUDGET")); err == nil {
		budget = d
	}
	m := &crashModel{data: map[string]string{}, deleted: map[string]bool{}, maybe: map[string]string{}}
	start := time.Now()
	kills, committed := 0, 0
	for run := 0; time.Since(start) < budget; run++ {
		lines, err := runCrashChild(t, dir, run)
		must(t, err)
		kills++
		for _, l := range lines {
			if strings.HasPrefix(l, "error") {
				t.Fatalf("child %d: %s", run, l)
			}
			if strings.HasPrefix(l, "committed") {
				committed++
			}
			m.apply(t, l)
		}
		m.interrupted()
		// Half of the time the next child, not this process, finds the
		// mount a killed child left; the rest of the time we restart
		// here, check, and close (unmount) the pool.
		if run%2 == 0 {
			continue
		}
		checkAfterCrash(t, cfg, m)
		if devs, _ := storage.LoopDevices(image); len(devs) != 0 {
			t.Fatalf("after run %d, loop devices %v still attached after Close", run, devs)
		}
	}
	checkAfterCrash(t, cfg, m)
	if devs, _ := storage.LoopDevices(image); len(devs) != 0 {
		t.Errorf("loop devices %v still attached after Close", devs)
	}
	if mounted(t, filepath.Join(dir, "pool")) {
		t.Errorf("pool still mounted after Close")
	}
	t.Logf("%d kills, %d committed operations, %d live subvolumes", kills, committed, len(m.data))
	if committed < kills/2 {
		t.Errorf("only %d operations committed in %d runs: the children made no progress", committed, kills)
	}
}

// runCrashChild starts a child on the pool in dir, lets it run for a
// random moment after it opened the pool, kills it, and returns its
// output lines.
func runCrashChild(t *testing.T, dir string, run int) ([]string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, fmt.Sprintf("%s=r%d", crashRunEnv, run))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	var lines []string
	if rand.IntN(4) == 0 {
		// Kill it while it may still be opening the pool: attaching the
		// loop device, mounting, enabling quotas.
		time.Sleep(time.Duration(rand.IntN(40_000)) * time.Microsecond)
	} else {
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if sc.Text() == "ready" || strings.HasPrefix(sc.Text(), "error") {
				break
			}
		}
		// The kill moment: anywhere in the first few dozen operations.
		time.Sleep(time.Duration(rand.IntN(80_000)) * time.Microsecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	// Read what the child wrote before it died; the pipe ends at its exit.
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL {
		return lines, nil
	}
	return lines, fmt.Errorf("child %d did not die by SIGKILL: %v; output %q", run, err, lines)
}

// checkAfterCrash re-opens the pool like a restarted daemon, reconciles
// it against the model, and checks the model against the pool.
func checkAfterCrash(t *testing.T, cfg storage.PoolConfig, m *crashModel) {
	t.Helper()
	ctx := t.Context()
	p, err := storage.Open(ctx, cfg)
	must(t, err)
	defer func() { must(t, p.Close()) }()
	if devs, _ := storage.LoopDevices(filepath.Join(cfg.Dir, "pool.img")); len(devs) != 1 {
		t.Fatalf("loop devices after re-open = %v, want exactly one", devs)
	}
	// The metadata is the committed log: anything else (an operation
	// killed half-way) is removed.
	_, err = p.Reconcile(ctx, func(name string) bool { _, ok := m.data[name]; return ok })
	must(t, err)
	for name, want := range m.data {
		ok, err := p.Exists(ctx, name)
		must(t, err)
		if !ok {
			t.Fatalf("committed %s is missing", name)
		}
		got, err := os.ReadFile(filepath.Join(p.Path(name), "fs/workspace/data"))
		if errors.Is(err, os.ErrNotExist) {
			got, err = nil, nil // never written
		}
		must(t, err)
		if alt, ok := m.maybe[name]; ok {
			// The interrupted write (open O_TRUNC, write, fsync) may
			// have landed, or stopped after truncating.
			delete(m.maybe, name)
			if string(got) == alt || string(got) == "" {
				m.data[name] = string(got)
				continue
			}
		}
		if string(got) != want {
			t.Fatalf("%s holds %q; want %q", name, got, want)
		}
	}
	for name := range m.deleted {
		if ok, _ := p.Exists(ctx, name); ok {
			t.Fatalf("deleted %s exists", name)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(p.Dir(), "staging")); len(ents) != 0 {
		t.Fatalf("staging holds %v after Reconcile", ents)
	}
	names, err := p.List(ctx)
	must(t, err)
	if len(names) != len(m.data) {
		t.Fatalf("pool has %d subvolumes, the model %d", len(names), len(m.data))
	}
	// Accounting survived the crashes too.
	for name := range m.data {
		if _, err := p.Usage(ctx, name); err != nil && !errors.Is(err, rung.ErrUnavailable) {
			t.Fatalf("usage of %s: %v", name, err)
		}
	}
}
