package tools_test

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"rung.dev/rung/shell/tools"
)

// TestOptionsFirstUseConcurrent: option tables are built on first use,
// which may come from several execs at once (run it with -race). An
// option with several long names is keyed by its last one.
func TestOptionsFirstUseConcurrent(t *testing.T) {
	o := tools.NewOptions("n,lines=", "q,quiet,silent", "v")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			opts, operands, err := o.Parse([]string{"-n", "3", "--quiet", "--sil", "-v", "f"})
			if err != nil {
				t.Error(err)
				return
			}
			var keys []string
			for _, op := range opts {
				keys = append(keys, op.Key)
			}
			if diff := cmp.Diff([]string{"lines", "silent", "silent", "v"}, keys); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"f"}, operands); diff != "" {
				t.Errorf("operands (-want +got):\n%s", diff)
			}
		})
	}
	wg.Wait()
}
