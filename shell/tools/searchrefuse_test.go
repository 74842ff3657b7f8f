package tools

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// TestSearchRefusals checks that what the family does not implement is
// refused before any output, both by Check and at run time (exit 125).
func TestSearchRefusals(t *testing.T) {
	cases := [][]string{
		{"grep", "-P", "x"},
		{"grep", "-T", "x"},
		{"grep", "--color=always", "x"},
		{"sed", "--posix", "p"},
		{"sed", "e ls"},
		{"sed", "s/a/b/e"},
		{"find", ".", "-ok", "rm", "{}", ";"},
		{"find", ".", "-ls"},
		{"find", ".", "-regextype", "awk", "-regex", "x"},
		{"find", ".", "-user", "nobody"},
		{"xargs", "-p", "echo"},
		{"diff", "-y", "a", "b"},
		{"diff", "-e", "a", "b"},
		{"patch", "--merge"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			tool := tools[args[0]]
			root := t.TempDir()
			view, err := storage.OpenRoot(root)
			if err != nil {
				t.Fatal(err)
			}
			defer view.Close()
			var out, errb bytes.Buffer
			c := &shell.Call{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Dir: "/workspace", FS: view}
			c.Exec = func(ctx context.Context, sub *shell.Call) int { return execTool(ctx, sub) }
			st := tool.Run(t.Context(), c)
			if st != shell.ExitUnsupported || !errors.Is(c.Unsupported, shell.ErrUnsupported) || out.Len() != 0 {
				t.Errorf("%q: status %d, unsupported %v, stdout %q", args, st, c.Unsupported, out.String())
			}
			// sed's e command is found by parsing the script at run time.
			if args[0] == "sed" && !strings.HasPrefix(args[1], "-") {
				return
			}
			if err := tool.Check(args[1:]); !errors.Is(err, shell.ErrUnsupported) {
				t.Errorf("Check(%q) = %v, want ErrUnsupported", args[1:], err)
			}
		})
	}
}

func TestSearchCheckAccepts(t *testing.T) {
	for _, args := range [][]string{
		{"grep", "-rn", "--include=*.go", "foo", "."},
		{"sed", "-i.bak", "-E", "s/a/b/g", "f"},
		{"find", ".", "-name", "*.go", "-exec", "grep", "-l", "x", "{}", "+"},
		{"xargs", "-0", "-n1", "echo"},
		{"diff", "-ruN", "a", "b"},
		{"patch", "-p1", "-i", "x.diff"},
		{"cmp", "-s", "a", "b"},
		{"grep", shell.Unknown, "x"},
	} {
		if err := tools[args[0]].Check(args[1:]); err != nil {
			t.Errorf("Check(%q) = %v, want nil", args, err)
		}
	}
}

// TestSearchCancel checks that endless input ends when ctx does.
func TestSearchCancel(t *testing.T) {
	root := t.TempDir()
	view, err := storage.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	for _, args := range [][]string{{"grep", "x", "/dev/zero"}, {"grep", "-c", "-a", "x", "/dev/zero"}, {"cmp", "/dev/zero", "/dev/zero"}, {"sed", "-z", "d", "/dev/zero"}} {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		var out bytes.Buffer
		c := &shell.Call{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Dir: "/workspace", FS: view}
		done := make(chan int, 1)
		go func() { done <- tools[args[0]].Run(ctx, c) }()
		select {
		case st := <-done:
			if st == 0 || st == 1 {
				t.Errorf("%q on endless input: status %d after cancel", args, st)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("%q did not stop after its context ended", args)
		}
		cancel()
	}
}
