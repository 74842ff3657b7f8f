package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// TestToolBudgets runs tools that hold their input (or a line of it)
// against a small memory budget: each must end the exec with memory_bytes,
// and tools that spin must end with cpu_time, never run on.
func TestToolBudgets(t *testing.T) {
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
	defer root.Close()
	sh := shell.New(shell.Config{FS: root, Tools: All(), Limits: shell.Limits{MemoryBytes: 16 << 20, CPUTime: 5 * time.Second}})
	spin := shell.New(shell.Config{FS: root, Tools: All(), Limits: shell.Limits{CPUTime: 200 * time.Millisecond}})
	for _, tc := range []struct {
		sh            *shell.Shell
		script, limit string
	}{
		{sh, "cut -c1 /dev/zero", "memory_bytes"},       // one endless line
		{sh, "yes | sed -n H", "memory_bytes"},          // hold space
		{sh, "yes | sed ':a;N;ba'", "memory_bytes"},     // pattern space
		{sh, "yes | awk '{a[NR]=$0}'", "memory_bytes"},  // awk array
		{sh, "yes | tail -n 100000000", "memory_bytes"}, // tail's ring
		{sh, "yes | tac", "memory_bytes"},               // whole input
		{sh, "yes | jq -R -s .", "memory_bytes"},        // slurp
		{sh, "head -c 100000000 /dev/zero | diff - /dev/null", "memory_bytes"},
		{spin, "yes > /dev/null", "cpu_time"},
		{spin, "seq 1 100000000000 > /dev/null", "cpu_time"},
		{spin, "md5sum /dev/zero", "cpu_time"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // catches a hang only
		var errb strings.Builder
		res := tc.sh.Run(ctx, shell.Request{Script: tc.script, Stderr: &errb})
		cancel()
		if res.Limit != tc.limit || res.ExitCode != 126 {
			t.Errorf("Run(%q) = %+v, stderr %q; want limit %s, exit 126", tc.script, res, errb.String(), tc.limit)
		}
	}
}
