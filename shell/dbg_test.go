package shell_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

func TestDbg(t *testing.T) {
	d := t.TempDir()
	os.MkdirAll(filepath.Join(d, "workspace"), 0o755)
	os.MkdirAll(filepath.Join(d, "tmp"), 0o755)
	root, _ := storage.OpenRoot(d)
	var out, errb bytes.Buffer
	res := shell.New(shell.Config{FS: root}).Run(t.Context(), shell.Request{Script: os.Getenv("RUNG_SCRIPT"), Stdout: &out, Stderr: &errb})
	t.Logf("%q %q %+v", out.String(), errb.String(), res)
}
