package tools

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"rung.dev/rung/shell"
)

// FuzzJQ runs arbitrary filters through the query rewriting and the
// encoder: any filter must end in an exit status, never a panic.
func FuzzJQ(f *testing.F) {
	for _, s := range []string{".", ".[] | {a: .x, b: (.y, 1)}", `"\(.a) \(.[0]?)"`, "path(..)", ".a[] |= 1",
		"to_entries | from_entries", "[paths]", "@json", `{(.k): 1, "x\(1)": 2}`, "reduce .[] as $x (0; . + 1)"} {
		f.Add(s, `{"b":[1,{"d":2,"c":3}],"a":"x"}`)
	}
	f.Fuzz(func(t *testing.T, filter, input string) {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		var out, errb bytes.Buffer
		c := &shell.Call{Args: []string{"jq", "-c", filter}, Stdin: strings.NewReader(input), Stdout: &out, Stderr: &errb, Dir: "/workspace"}
		runJQ(ctx, c)
	})
}
