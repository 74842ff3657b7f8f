package shell_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"rung.dev/rung/shell"
)

// TestExecsStartFresh: execs on one Shell start from the same initial
// variables (shared between them until one changes them), so nothing an
// exec sets, exports, unsets, declares or changes in place reaches the
// next exec, or a concurrent one.
func TestExecsStartFresh(t *testing.T) {
	sh := newShell(t, shell.Config{})
	env := map[string]string{"A": "1", "B": "two"}
	const probe = `echo "$A $B $HOME $PWD [${X-}] ${BASH_VERSINFO[0]} ${#BASH_VERSINFO[@]} [${OLDPWD-}]"; export -p`
	runEnv := func(script string, env map[string]string, dir string) string {
		var out bytes.Buffer
		sh.Run(t.Context(), shell.Request{Script: script, Env: env, Dir: dir, Stdout: &out, Stderr: &out})
		return out.String()
	}
	want := runEnv(probe, env, "")
	for _, change := range []string{
		"A=changed; export X=1; unset B; cd /tmp",
		"declare -A m=([k]=v); HOME=/tmp; export -n A; readonly B",
		"BASH_VERSINFO[0]=9 2>/dev/null; unset BASH_VERSINFO 2>/dev/null; IFS=:; PATH=/nowhere",
		"f() { local A=in; export B=fn; }; f; declare -x X=2",
	} {
		runEnv(change, env, "")
		if got := runEnv(probe, env, ""); got != want {
			t.Errorf("after %q:\n%s", change, cmp.Diff(want, got))
		}
	}
	// A different environment or directory is built afresh.
	if got := runEnv(`echo "$A $PWD"`, map[string]string{"A": "other"}, "/tmp"); got != "other /tmp\n" {
		t.Errorf("other env: %q", got)
	}
	if got := runEnv(probe, env, ""); got != want {
		t.Errorf("back to the first env:\n%s", cmp.Diff(want, got))
	}

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			script := fmt.Sprintf("A=%d; export Y=%d; unset B; echo \"$A $Y ${B-gone}\"", i, i)
			if got, want := runEnv(script, env, ""), fmt.Sprintf("%d %d gone\n", i, i); got != want {
				t.Errorf("concurrent exec %d: %q, want %q", i, got, want)
			}
			if got := runEnv(probe, env, ""); got != want {
				t.Errorf("concurrent probe %d:\n%s", i, cmp.Diff(want, got))
			}
		})
	}
	wg.Wait()
}
