package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"rung.dev/rung/internal/testenv"
)

// runDiffSorted is runDiff for cases whose output order GNU takes from
// readdir(3) (grep -r, find): the lines of stdout are compared sorted,
// since our file view lists directories sorted by name.
func runDiffSorted(t *testing.T, cases []toolCase) {
	t.Helper()
	testenv.Require(t, "bash")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.known != "" {
				t.Skip("known difference: " + tc.known)
			}
			if _, err := exec.LookPath(tc.args[0]); err != nil {
				t.Skipf("GNU %s not installed", tc.args[0])
			}
			gnuDir := t.TempDir()
			ourRoot := t.TempDir()
			ourDir := filepath.Join(ourRoot, "workspace")
			for _, d := range []string{ourDir, filepath.Join(ourRoot, "tmp")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeFiles(t, gnuDir, tc.files)
			writeFiles(t, ourDir, tc.files)
			if tc.setup != nil {
				tc.setup(t, gnuDir)
				tc.setup(t, ourDir)
			}
			wantOut, wantErr, wantStatus := runGNU(t, tc, gnuDir)
			gotOut, gotErr, gotStatus := runOurs(t, tc, ourRoot)
			wantOut = strings.ReplaceAll(wantOut, gnuDir, "/workspace")
			if diff := cmp.Diff(sortLines(wantOut), sortLines(gotOut)); diff != "" {
				t.Errorf("%q sorted stdout (-gnu +ours):\n%s\nstderr gnu=%q ours=%q", tc.args, diff, wantErr, gotErr)
			}
			if wantStatus != gotStatus {
				t.Errorf("%q status = %d, want %d (stderr gnu=%q ours=%q)", tc.args, gotStatus, wantStatus, wantErr, gotErr)
			}
			if (wantErr == "") != (gotErr == "") {
				t.Errorf("%q stderr gnu=%q ours=%q", tc.args, wantErr, gotErr)
			}
			if diff := cmp.Diff(snapshotTree(t, gnuDir), snapshotTree(t, ourDir)); diff != "" {
				t.Errorf("%q files (-gnu +ours):\n%s", tc.args, diff)
			}
		})
	}
}

func sortLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	sort.Strings(lines)
	return lines
}
