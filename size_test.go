package rung_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"rung.dev/rung"
)

const (
	mib = 1 << 20
	gib = 1 << 30
)

func TestSizeResolve(t *testing.T) {
	t.Parallel()
	// A policy shaped like the server default, with ratio rules.
	pol := rung.SizePolicy{MaxMilliCPU: 4000, MaxMemoryBytes: 16 * gib, MaxDiskBytes: 50 * gib, MinMemoryPerVCPU: 1 * gib, MaxMemoryPerVCPU: 8 * gib}
	custom := func(m, mem, disk int64) rung.Size { return rung.Size{MilliCPU: m, MemoryBytes: mem, DiskBytes: disk} }
	tests := []struct {
		name    string
		in      rung.Size
		pol     rung.SizePolicy
		want    rung.Size // checked when wantErr is nil
		wantErr error
		wantMsg string // a substring of the error
	}{
		{name: "empty is the default preset", want: rung.Presets[rung.DefaultPreset]},
		{name: "preset", in: rung.Size{Preset: "standard-2"}, want: rung.Presets["standard-2"]},
		{name: "custom", in: custom(1500, 3*gib, 10*gib), pol: pol, want: custom(1500, 3*gib, 10*gib)},
		{name: "unknown preset", in: rung.Size{Preset: "huge"}, wantErr: rung.ErrInvalid, wantMsg: `unknown size preset "huge"`},
		{name: "preset and custom", in: rung.Size{Preset: "lite", MilliCPU: 100}, wantErr: rung.ErrInvalid},
		{name: "zero cpu", in: custom(0, gib, gib), wantErr: rung.ErrInvalid, wantMsg: "positive"},
		{name: "negative memory", in: custom(1000, -1, gib), wantErr: rung.ErrInvalid, wantMsg: "positive"},
		{name: "negative disk", in: custom(1000, gib, math.MinInt64), wantErr: rung.ErrInvalid, wantMsg: "positive"},
		{name: "memory below 16 MiB", in: custom(1000, 15*mib, gib), wantErr: rung.ErrInvalid, wantMsg: "16 MiB minimum"},
		{name: "cpu out of range", in: custom(math.MaxInt64, gib, gib), wantErr: rung.ErrInvalid, wantMsg: "milli_cpu 9223372036854775807 is out of range"},
		{name: "memory out of range", in: custom(1000, math.MaxInt64, gib), wantErr: rung.ErrInvalid, wantMsg: "memory_bytes 9223372036854775807 is out of range"},
		{name: "memory at 16 MiB", in: custom(1000, 16*mib, gib), want: custom(1000, 16*mib, gib)},
		{name: "cpu just out of range", in: custom(rung.MaxMilliCPU+1, gib, gib), wantErr: rung.ErrInvalid, wantMsg: "milli_cpu 1000001 is out of range"},
		{name: "memory just out of range", in: custom(1000, rung.MaxSizeBytes+1, gib), wantErr: rung.ErrInvalid, wantMsg: "memory_bytes 1125899906842625 is out of range"},
		{name: "disk out of range", in: custom(1000, gib, rung.MaxSizeBytes+1), wantErr: rung.ErrInvalid, wantMsg: "disk_bytes"},
		{name: "largest values, no policy", in: custom(rung.MaxMilliCPU, rung.MaxSizeBytes, rung.MaxSizeBytes), want: custom(rung.MaxMilliCPU, rung.MaxSizeBytes, rung.MaxSizeBytes)},

		// Each bound, just at it and just past it.
		{name: "cpu at max", in: custom(4000, 16*gib, gib), pol: pol, want: custom(4000, 16*gib, gib)},
		{name: "cpu above max", in: custom(4001, 16*gib, gib), pol: pol, wantErr: rung.ErrPermission, wantMsg: "size: milli_cpu 4001 is above this tenant's maximum 4000"},
		{name: "memory at max", in: custom(2000, 16*gib, gib), pol: pol, want: custom(2000, 16*gib, gib)},
		{name: "memory above max", in: custom(4000, 16*gib+1, gib), pol: pol, wantErr: rung.ErrPermission, wantMsg: "memory_bytes 17179869185 is above this tenant's maximum 17179869184 (16 GiB)"},
		{name: "disk at max", in: custom(1000, gib, 50*gib), pol: pol, want: custom(1000, gib, 50*gib)},
		{name: "disk above max", in: custom(1000, gib, 51*gib), pol: pol, wantErr: rung.ErrPermission, wantMsg: "disk_bytes 54760833024 (51 GiB) is above this tenant's maximum 53687091200 (50 GiB)"},
		{name: "ratio at min", in: custom(2000, 2*gib, gib), pol: pol, want: custom(2000, 2*gib, gib)},
		{name: "ratio below min", in: custom(2000, 2*gib-1, gib), pol: pol, wantErr: rung.ErrPermission, wantMsg: "per vCPU"},
		{name: "ratio below min, fraction of a vCPU", in: custom(500, 511*mib, gib), pol: pol, wantErr: rung.ErrPermission, wantMsg: "memory_bytes 535822336 (511 MiB) for milli_cpu 500 is below this tenant's minimum of 1073741824 (1 GiB) per vCPU"},
		{name: "ratio at max", in: custom(500, 4*gib, gib), pol: pol, want: custom(500, 4*gib, gib)},
		{name: "ratio above max", in: custom(500, 4*gib+mib, gib), pol: pol, wantErr: rung.ErrPermission, wantMsg: "is above this tenant's maximum of 8589934592 (8 GiB) per vCPU"},
		{name: "ratio with the largest values does not overflow", in: custom(1, rung.MaxSizeBytes, gib), pol: rung.SizePolicy{MaxMemoryPerVCPU: math.MaxInt64}, want: custom(1, rung.MaxSizeBytes, gib)},
		{name: "ratio above a huge max", in: custom(1, rung.MaxSizeBytes, gib), pol: rung.SizePolicy{MaxMemoryPerVCPU: rung.MaxSizeBytes}, wantErr: rung.ErrPermission},
		{name: "ratio below a huge min", in: custom(rung.MaxMilliCPU, rung.MaxSizeBytes, gib), pol: rung.SizePolicy{MinMemoryPerVCPU: math.MaxInt64}, wantErr: rung.ErrPermission},

		// Presets are held to the policy like custom sizes.
		{name: "preset above cpu max", in: rung.Size{Preset: "standard-4"}, pol: rung.SizePolicy{MaxMilliCPU: 1000}, wantErr: rung.ErrPermission, wantMsg: "size standard-4: milli_cpu 4000 is above this tenant's maximum 1000"},
		{name: "preset at cpu max", in: rung.Size{Preset: "standard-2"}, pol: rung.SizePolicy{MaxMilliCPU: 1000}, want: rung.Presets["standard-2"]},
		{name: "preset above disk max", in: rung.Size{Preset: "standard-1"}, pol: rung.SizePolicy{MaxDiskBytes: 4e9}, wantErr: rung.ErrPermission, wantMsg: "size standard-1: disk_bytes 8000000000 (8 GB) is above this tenant's maximum 4000000000 (4 GB)"},
		{name: "default preset above policy", pol: rung.SizePolicy{MaxMemoryBytes: 128 * mib}, wantErr: rung.ErrPermission, wantMsg: "size " + rung.DefaultPreset + ": memory_bytes"},
		{name: "preset against ratio", in: rung.Size{Preset: "standard-1"}, pol: rung.SizePolicy{MaxMemoryPerVCPU: 6 * gib}, wantErr: rung.ErrPermission, wantMsg: "size standard-1: memory_bytes 4294967296 (4 GiB) for milli_cpu 500 is above"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.in.Resolve(tc.pol)
			if tc.wantErr == nil {
				if err != nil || got != tc.want {
					t.Errorf("%+v.Resolve(%+v) = %+v, %v; want %+v", tc.in, tc.pol, got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("%+v.Resolve(%+v) err = %v, want %v", tc.in, tc.pol, err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("%+v.Resolve(%+v) err = %q, want it to contain %q", tc.in, tc.pol, err, tc.wantMsg)
			}
			if got != (rung.Size{}) {
				t.Errorf("%+v.Resolve(%+v) = %+v with an error, want the zero Size (never clamped)", tc.in, tc.pol, got)
			}
		})
	}
}

// TestSizePolicyPresetRatios pins what the default policy relies on:
// every preset has 3 to 8 GiB of memory per vCPU; each preset passes a
// policy at its own figures, and one step tighter on any bound refuses it.
func TestSizePolicyPresetRatios(t *testing.T) {
	t.Parallel()
	for name, p := range rung.Presets {
		perVCPU := p.MemoryBytes * 1000 / p.MilliCPU
		if perVCPU < 3*gib || perVCPU > 8*gib {
			t.Errorf("preset %s: %d bytes per vCPU, outside 3 to 8 GiB", name, perVCPU)
		}
		if err := (rung.SizePolicy{MaxMilliCPU: p.MilliCPU, MaxMemoryBytes: p.MemoryBytes, MaxDiskBytes: p.DiskBytes}).Check(p); err != nil {
			t.Errorf("preset %s at its own bounds: %v", name, err)
		}
		for _, tight := range []rung.SizePolicy{
			{MaxMilliCPU: p.MilliCPU - 1}, {MaxMemoryBytes: p.MemoryBytes - 1}, {MaxDiskBytes: p.DiskBytes - 1},
			{MinMemoryPerVCPU: perVCPU + 1}, {MaxMemoryPerVCPU: perVCPU - 1},
		} {
			if err := tight.Check(p); !errors.Is(err, rung.ErrPermission) {
				t.Errorf("preset %s under %+v: err = %v, want permission denied", name, tight, err)
			}
		}
	}
}
