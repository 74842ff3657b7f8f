package shelltest_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"rung.dev/rung/shell/shelltest"
	"rung.dev/rung/shell/tools"
)

type fixture struct {
	ID       string            `json:"id"`
	Group    string            `json:"group"`
	Command  string            `json:"command"`
	Files    map[string]string `json:"files"`
	Stdout   string            `json:"stdout"`
	Stderr   string            `json:"stderr"`
	ExitCode int               `json:"exit_code"`
}

// fixturePath finds bash-fixtures.jsonl: $RUNG_CONFORMANCE (a file or a
// directory), or ../shared/conformance beside the repository root.
func fixturePath() string {
	if p := os.Getenv("RUNG_CONFORMANCE"); p != "" {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return filepath.Join(p, "bash-fixtures.jsonl")
		}
		return p
	}
	dir, _ := os.Getwd()
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(d), "shared", "conformance", "bash-fixtures.jsonl")
		}
	}
	return ""
}

// TestConformanceFixtures replays the shared bash fixtures through the
// interpreter in-process and logs the pass rate. It is a benchmark: a
// miss does not fail the build. RUNG_CONFORMANCE_FAILS=file writes the
// failures as JSON lines.
func TestConformanceFixtures(t *testing.T) {
	path := fixturePath()
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("no fixtures at %q: %v", path, err)
	}
	defer f.Close()
	var fixtures []fixture
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var fx fixture
		if err := json.Unmarshal(sc.Bytes(), &fx); err != nil {
			t.Fatalf("parse fixture: %v", err)
		}
		fixtures = append(fixtures, fx)
	}
	all := tools.All()
	saved := shelltest.Env["PATH"]
	_ = saved
	type fail struct {
		ID, Group, Command, WantOut, GotOut, GotErr string
		WantExit, GotExit                           int
	}
	var fails []fail
	groups := map[string][2]int{}
	for _, fx := range fixtures {
		c := shelltest.Case{Name: fx.ID, Script: fx.Command, Files: fx.Files}
		got, err := shelltest.RunShell(t.Context(), c, t.TempDir(), all)
		g := groups[fx.Group]
		g[1]++
		if err == nil && got.Stdout == fx.Stdout && got.Exit == fx.ExitCode {
			g[0]++
		} else {
			fails = append(fails, fail{fx.ID, fx.Group, fx.Command, fx.Stdout, got.Stdout, got.Stderr, fx.ExitCode, got.Exit})
		}
		groups[fx.Group] = g
	}
	passed := len(fixtures) - len(fails)
	t.Logf("passed %d of %d (%.1f%%)", passed, len(fixtures), 100*float64(passed)/float64(len(fixtures)))
	var names []string
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	var sb strings.Builder
	for _, g := range names {
		c := groups[g]
		if c[0] != c[1] {
			fmt.Fprintf(&sb, "  %s: %d/%d\n", g, c[0], c[1])
		}
	}
	t.Logf("groups with failures:\n%s", sb.String())
	if out := os.Getenv("RUNG_CONFORMANCE_FAILS"); out != "" {
		w, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		enc := json.NewEncoder(w)
		for _, f := range fails {
			enc.Encode(f)
		}
	}
}
