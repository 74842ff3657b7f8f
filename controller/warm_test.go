package controller_test

import (
	"errors"
	"path/filepath"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/storage/storagetest"
	"rung.dev/rung/store/sqlite"
)

func TestParseWarm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     controller.WarmSpec
		err      bool
	}{
		{name: "image only", in: "lite=2", want: controller.WarmSpec{Image: "lite", Count: 2}},
		{name: "image and size", in: "debian:basic=1", want: controller.WarmSpec{Image: "debian", Size: rung.Size{Preset: "basic"}, Count: 1}},
		{name: "zero keeps none", in: "lite=0", want: controller.WarmSpec{Image: "lite"}},
		{name: "no count", in: "lite", err: true},
		{name: "negative count", in: "lite=-1", err: true},
		{name: "not a number", in: "lite=two", err: true},
		{name: "bad image name", in: "Lite/x=1", err: true},
		{name: "unknown size", in: "lite:huge=1", err: true},
		{name: "empty", in: "", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := controller.ParseWarm(tc.in)
			if tc.err {
				if !errors.Is(err, rung.ErrInvalid) {
					t.Errorf("ParseWarm(%q) = %v, %v; want invalid_argument", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseWarm(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if back, err := controller.ParseWarm(got.String()); err != nil || back != got {
				t.Errorf("ParseWarm(%q.String() = %q) = %+v, %v", tc.in, got.String(), back, err)
			}
		})
	}
}

func TestWarmNeedsContainers(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "rung.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := controller.Config{Store: st, Pool: storagetest.NewTestPool(t), Warm: []controller.WarmSpec{{Image: "lite", Count: 1}}}
	if c, _, err := controller.New(t.Context(), cfg); !errors.Is(err, rung.ErrUnavailable) {
		if c != nil {
			c.Close()
		}
		t.Errorf("New with spares and no container tier: %v, want unavailable", err)
	}
	// A count of zero asks for nothing: no container tier needed.
	cfg.Warm[0].Count = 0
	c, _, err := controller.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New with a zero warm count: %v", err)
	}
	c.Close()
}

// A warm spec's linked directory is checked as a create's is: New
// refuses one that is not a clean absolute directory outside /workspace
// and /tmp, before it asks for a container tier.
func TestWarmLinkChecked(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "rung.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, link := range []string{"home/user", "/home/../etc", "/workspace/x", "/"} {
		cfg := controller.Config{Store: st, Pool: storagetest.NewTestPool(t), Warm: []controller.WarmSpec{{Image: "base", Count: 1, LinkWorkspace: link}}}
		if c, _, err := controller.New(t.Context(), cfg); !errors.Is(err, rung.ErrInvalid) {
			if c != nil {
				c.Close()
			}
			t.Errorf("New with a spare linking %q: %v, want invalid_argument", link, err)
		}
	}
}
