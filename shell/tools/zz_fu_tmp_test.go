package tools

import (
	"io"
	"strings"
	"testing"

	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

func TestZZFuNoPanic(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root+"/workspace", map[string]string{"f": "x\n", "d/g": "", "e/": ""})
	fuSymlink("loop", "loop")(t, root+"/workspace")
	fuMkfifo("p")(t, root+"/workspace")
	view, _ := storage.OpenRoot(root)
	defer view.Close()
	argsets := [][]string{{}, {""}, {"-"}, {"--"}, {"f"}, {"d"}, {"nope"}, {"loop"}, {"p"}, {"/"}, {"/workspace"}, {"..", "."}, {"f", "f"}, {"d", "d"}, {"f", "d", "e"}, {"-x"}, {"--bogus"}, {"", ""}, {"/tmp"}, {"loop", "x"}, {"p", "q"}, {"d", "d/g"}, {"-t", "nope", "f"}, {"-T", "f"}, {"-c"}, {"-d"}, {"-L", "0"}, {"-p", ""}, {"--suffix="}, {"-s", ""}, {"--relative-to="}}
	for _, name := range []string{"ls", "cat", "tee", "touch", "mkdir", "rmdir", "rm", "cp", "mv", "ln", "readlink", "realpath", "basename", "dirname", "stat", "du", "df", "chmod", "tree", "file", "mktemp"} {
		for _, a := range argsets {
			args := append([]string{name}, a...)
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%q panicked: %v", args, r)
					}
				}()
				c := &shell.Call{Args: args, Stdin: strings.NewReader("in\n"), Stdout: io.Discard, Stderr: io.Discard, Dir: "/workspace", FS: view}
				All()[name].Run(t.Context(), c)
				All()[name].Check(a)
			}()
			// restore a baseline
			writeFiles(t, root+"/workspace", map[string]string{"f": "x\n", "d/g": "", "e/": ""})
		}
	}
}
