package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"rung.dev/rung/internal/testenv"
)

// runDiffSorted is runDiff for cases whose output order GNU takes from
// readdir(3) (grep -r, find): the lines of stdout are compared sorted,
// since our file view lists directories sorted by name.
func runDiffSorted(t *testing.T, cases []toolCase) {
	t.Helper()
	runSearchDiff(t, cases, true)
}

// runSearchDiff is runDiff with the GNU side of every case run
// concurrently first (it is dominated by fork and exec), then each case
// compared in its own subtest; with sorted, stdout lines are compared
// sorted.
func runSearchDiff(t *testing.T, cases []toolCase, sorted bool) {
	t.Helper()
	testenv.Require(t, "bash")
	type prepared struct {
		gnuDir, ourRoot, ourDir string
		out, errOut             string
		status                  int
		ready                   bool
	}
	preps := make([]prepared, len(cases))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, tc := range cases {
		if tc.known != "" {
			continue
		}
		if _, err := exec.LookPath(tc.args[0]); err != nil {
			continue
		}
		pr := &preps[i]
		pr.gnuDir = t.TempDir()
		pr.ourRoot = t.TempDir()
		pr.ourDir = filepath.Join(pr.ourRoot, "workspace")
		// The goroutines end before runSearchDiff goes on (wg.Wait).
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			for _, d := range []string{pr.ourDir, filepath.Join(pr.ourRoot, "tmp")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return
				}
			}
			writeFiles(t, pr.gnuDir, tc.files)
			writeFiles(t, pr.ourDir, tc.files)
			if tc.setup != nil {
				tc.setup(t, pr.gnuDir)
				tc.setup(t, pr.ourDir)
			}
			pr.out, pr.errOut, pr.status = runGNU(t, tc, pr.gnuDir)
			pr.out = strings.ReplaceAll(pr.out, pr.gnuDir, "/workspace")
			pr.ready = true
		})
	}
	wg.Wait()
	for i, tc := range cases {
		pr := &preps[i]
		t.Run(tc.name, func(t *testing.T) {
			if tc.known != "" {
				t.Skip("known difference: " + tc.known)
			}
			if !pr.ready {
				t.Skipf("GNU %s not installed", tc.args[0])
			}
			wantOut, wantErr, wantStatus := pr.out, pr.errOut, pr.status
			gotOut, gotErr, gotStatus := runOurs(t, tc, pr.ourRoot)
			if sorted {
				if diff := cmp.Diff(srchSortLines(wantOut), srchSortLines(gotOut)); diff != "" {
					t.Errorf("%q sorted stdout (-gnu +ours):\n%s\nstderr gnu=%q ours=%q", tc.args, diff, wantErr, gotErr)
				}
			} else if diff := cmp.Diff(wantOut, gotOut); diff != "" {
				t.Errorf("%q stdout (-gnu +ours):\n%s\nstderr gnu=%q ours=%q", tc.args, diff, wantErr, gotErr)
			}
			if wantStatus != gotStatus {
				t.Errorf("%q status = %d, want %d (stderr gnu=%q ours=%q)", tc.args, gotStatus, wantStatus, wantErr, gotErr)
			}
			if (wantErr == "") != (gotErr == "") {
				t.Errorf("%q stderr gnu=%q ours=%q", tc.args, wantErr, gotErr)
			}
			if diff := cmp.Diff(snapshotTree(t, pr.gnuDir), snapshotTree(t, pr.ourDir)); diff != "" {
				t.Errorf("%q files (-gnu +ours):\n%s", tc.args, diff)
			}
		})
	}
}

func srchSortLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	sort.Strings(lines)
	return lines
}
