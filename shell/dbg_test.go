package shell_test

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"rung.dev/rung/shell/shelltest"
)

func TestDbgFixtures(t *testing.T) {
	if os.Getenv("RUNG_DBG") == "" {
		t.Skip()
	}
	f, _ := os.Open("/work/shared/conformance/bash-fixtures.jsonl")
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	n, pass, skipped := 0, 0, 0
	for sc.Scan() {
		var fx struct {
			ID, Group, Command, Stdout string
			Files                      map[string]string
			ExitCode                   int `json:"exit_code"`
		}
		json.Unmarshal(sc.Bytes(), &fx)
		got, _ := shelltest.RunShell(t.Context(), shelltest.Case{Script: fx.Command, Files: fx.Files}, t.TempDir(), nil)
		if strings.Contains(got.Stderr, "command not found") {
			skipped++
			continue
		}
		n++
		if got.Stdout == fx.Stdout && got.Exit == fx.ExitCode {
			pass++
			continue
		}
		t.Logf("FAIL %s\n  cmd: %q\n  want: %q %d\n  got:  %q %d\n  err: %q", fx.ID, fx.Command, fx.Stdout, fx.ExitCode, got.Stdout, got.Exit, got.Stderr)
	}
	t.Logf("builtin-only: %d/%d (skipped %d needing tools)", pass, n, skipped)
}
