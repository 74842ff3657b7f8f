package storage

import (
	"errors"
	"path/filepath"
	"regexp"
	"testing"

	"rung.dev/rung"
)

var validSubvolName = regexp.MustCompile(`^(sbx|snp)_[a-z0-9_]+$`)

// FuzzSubvolName checks that every name checkName accepts is a single,
// plain path component of the documented form, and that it refuses the
// rest with rung.ErrInvalid.
func FuzzSubvolName(f *testing.F) {
	for _, s := range []string{"sbx_a", "snp_0_1", "sbx_", "../sbx_a", "sbx_a/..", "sbx_a\x00", "sbx_.", "snp_A", "sbx_é", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := checkName(s)
		want := validSubvolName.MatchString(s) && len(s) <= MaxSubvolNameLen
		if (err == nil) != want {
			t.Fatalf("checkName(%q) = %v, want valid=%v", s, err, want)
		}
		if err != nil {
			if !errors.Is(err, rung.ErrInvalid) {
				t.Fatalf("checkName(%q) = %v, want ErrInvalid", s, err)
			}
			return
		}
		if got := filepath.Join("/pool/sandboxes", s); filepath.Dir(got) != "/pool/sandboxes" || filepath.Base(got) != s {
			t.Fatalf("name %q does not stay one component: %q", s, got)
		}
	})
}
