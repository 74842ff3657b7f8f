package tools

import (
	"fmt"
	"testing"
)

// runDiffParallel splits cases into parts run in parallel through
// runDiff, to keep the data tools' many differential cases quick.
func runDiffParallel(t *testing.T, cases []toolCase, parts int) {
	t.Helper()
	size := (len(cases) + parts - 1) / parts
	for i := 0; i < len(cases); i += size {
		chunk := cases[i:min(i+size, len(cases))]
		t.Run(fmt.Sprintf("part%d", i/size), func(t *testing.T) {
			t.Parallel()
			runDiff(t, chunk)
		})
	}
}
