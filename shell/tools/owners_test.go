package tools

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// TestOwnerNamesFromRootFile runs ls -l, stat and find -printf in a view
// that holds only /workspace and /tmp, as the daemon's does: owner names
// come from the container's /etc/passwd and /etc/group through
// Config.RootFile, root's without reading them; when RootFile fails, or
// there is none, the path is refused at run time (the exec goes to the
// container) instead of printing a number the container would not.
func TestOwnerNamesFromRootFile(t *testing.T) {
	testenv.Require(t, "root")
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "workspace"), map[string]string{"mine": "x\n", "roots": "y\n"})
	os.MkdirAll(filepath.Join(dir, "tmp"), 0o755)
	if err := os.Lchown(filepath.Join(dir, "workspace", "mine"), 1000, 1001); err != nil {
		t.Fatal(err)
	}
	view, err := storage.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	files := map[string]string{
		"/etc/passwd": "root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/bash\nalias:x:1000:1000::/:/bin/sh\n",
		"/etc/group":  "root:x:0:\nstaff:x:1001:user\n",
	}
	reads := 0
	ok := func(name string) ([]byte, error) {
		reads++
		b, found := files[name]
		if !found {
			return nil, errors.New("no such file")
		}
		return []byte(b), nil
	}
	failing := func(string) ([]byte, error) { return nil, errors.New("cannot tell") }
	tests := []struct {
		name, script string
		rootFile     func(string) ([]byte, error)
		want         string // stdout; "" with refused
		refused      bool
	}{
		{"ls -l", "ls -l mine | cut -d' ' -f3,4", ok, "user staff\n", false},
		{"stat", "stat -c '%U %G %u' mine", ok, "user staff 1000\n", false},
		{"find", "find . -name mine -printf '%u:%g\\n'", ok, "user:staff\n", false},
		{"root needs no file", "stat -c '%U %G' roots", failing, "root root\n", false},
		{"failing", "ls -l mine", failing, "", true},
		{"none", "ls -l mine", nil, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sh := shell.New(shell.Config{FS: view, Tools: All(), RootFile: tc.rootFile})
			var out, errb bytes.Buffer
			res := sh.Run(t.Context(), shell.Request{Script: tc.script, Dir: "/workspace", Stdout: &out, Stderr: &errb, StopUnsupported: true})
			if refused := res.Unsupported != nil; refused != tc.refused {
				t.Fatalf("%q: refused %v (%v), want %v; stderr %q", tc.script, refused, res.Unsupported, tc.refused, errb.String())
			}
			if !tc.refused && out.String() != tc.want {
				t.Errorf("%q = %q, want %q (stderr %q)", tc.script, out.String(), tc.want, errb.String())
			}
		})
	}
	if reads == 0 {
		t.Error("RootFile was never read")
	}
}
