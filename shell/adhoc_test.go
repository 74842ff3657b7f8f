package shell_test

import (
	"os"
	"testing"

	"rung.dev/rung/shell/shelltest"
)

// TestAdhoc runs $RUNG_SCRIPT on both sides and prints the outcomes; it
// is a development aid and skips without the variable.
func TestAdhoc(t *testing.T) {
	script := os.Getenv("RUNG_SCRIPT")
	if script == "" {
		t.Skip("RUNG_SCRIPT not set")
	}
	c := shelltest.Case{Name: "adhoc", Script: script}
	want, err := shelltest.RunBash(t.Context(), c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got, err := shelltest.RunShell(t.Context(), c, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bash: %q %q %d", want.Stdout, want.Stderr, want.Exit)
	t.Logf("rung: %q %q %d", got.Stdout, got.Stderr, got.Exit)
}
