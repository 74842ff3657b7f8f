package shell_test

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"rung.dev/rung/shell"
)

// FuzzRun runs random scripts: the interpreter must not panic (a
// recovered internal error counts as a failure), must report any limit
// it stops on, must keep output within the limit it reports, and must not
// touch the host (its working directory and temporary directory).
func FuzzRun(f *testing.F) {
	seeds := []string{
		"echo hi", "x=1; echo ${x:-a}${#x}", "for i in {1..3}; do echo $i; done",
		"f() { f; }; f", "a=(1 2); echo ${a[@]:1}", "echo $((1/0))", "cat <<EOF\n$x\nEOF",
		"echo a | while read l; do echo $l; done", "exec 3>/tmp/x; echo >&3", "[[ a =~ (b ]]",
		"printf '%*d' 5 1", "read -n 2 x <<< abc; echo $x", "echo ${x/#/y} ${x@Q}", "set -e; false",
		"trap 'echo t' EXIT ERR; false", "(( x = 2 ** 62 * 4 ))", "echo *; echo **/x", "eval \"$x\"",
		"case a in @(a|b)) ;; esac", "echo $(<nosuch)", "declare -n r=r; echo $r", "shift 5; echo $#",
		"x=$'\\x00'; echo \"$x\"", "echo {a..z..-3}", "echo ${x:-${y:=${z?}}}", "while :; do echo; done",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	wd, _ := os.Getwd()
	hostTmp := f.TempDir()
	f.Setenv("TMPDIR", hostTmp)
	sh := newShell(f, shell.Config{Limits: shell.Limits{
		Commands: 2000, LoopIterations: 2000, OutputBytes: 1 << 16, StringBytes: 1 << 16,
		ArrayElems: 1 << 12, Depth: 64, WriteBytes: 1 << 16,
	}})
	f.Fuzz(func(t *testing.T, script string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var out, errb bytes.Buffer
		var res shell.Result
		done := make(chan struct{})
		go func() {
			defer close(done)
			res = sh.Run(ctx, shell.Request{Script: script, Stdout: &out, Stderr: &errb})
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("Run(%q) ignored its 2s deadline:\n%s", script, buf[:n])
		}
		if strings.Contains(errb.String(), "internal error") {
			t.Fatalf("Run(%q) panicked: %s", script, errb.String())
		}
		if res.Limit != "" && res.ExitCode != 126 {
			t.Fatalf("Run(%q) = %+v: a limit must end with 126", script, res)
		}
		if n := out.Len() + errb.Len(); n > 1<<16+4096 && res.Limit == "" {
			t.Fatalf("Run(%q) wrote %d bytes without reporting output_bytes", script, n)
		}
		if now, _ := os.Getwd(); now != wd {
			t.Fatalf("Run(%q) changed the host working directory to %s", script, now)
		}
		if ents, _ := os.ReadDir(hostTmp); len(ents) > 0 {
			t.Fatalf("Run(%q) created %s in the host temp dir", script, ents[0].Name())
		}
	})
}
