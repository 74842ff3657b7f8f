package controller_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

func TestDefaultSizePolicy(t *testing.T) {
	t.Parallel()
	def := controller.SizePolicies{}.For("anyone")
	if def != controller.DefaultSizePolicy {
		t.Errorf("zero SizePolicies.For = %+v, want DefaultSizePolicy", def)
	}
	for _, name := range slices.Sorted(maps.Keys(rung.Presets)) {
		if _, err := (rung.Size{Preset: name}).Resolve(def); err != nil {
			t.Errorf("default policy refuses preset %s: %v", name, err)
		}
	}
	allowed := []rung.Size{
		{MilliCPU: 8000, MemoryBytes: 32 << 30, DiskBytes: 100 << 30},
		{MilliCPU: 500, MemoryBytes: 128 << 20, DiskBytes: 64e6}, // cmd/rung's container limits test
		{MilliCPU: 62, MemoryBytes: 496 << 20, DiskBytes: 1e9},
	}
	for _, s := range allowed {
		if _, err := s.Resolve(def); err != nil {
			t.Errorf("default policy refuses %v: %v", s, err)
		}
	}
	refused := []rung.Size{
		{MilliCPU: 64000, MemoryBytes: 1 << 40, DiskBytes: 1 << 40}, // the audit's sandbox
		{MilliCPU: 8001, MemoryBytes: 16 << 30, DiskBytes: 1 << 30},
		{MilliCPU: 4000, MemoryBytes: 32<<30 + 1, DiskBytes: 1 << 30},
		{MilliCPU: 1000, MemoryBytes: 4 << 30, DiskBytes: 100<<30 + 1},
		{MilliCPU: 8000, MemoryBytes: 1<<30 - 1, DiskBytes: 1 << 30}, // below 128 MiB per vCPU
		{MilliCPU: 62, MemoryBytes: 512 << 20, DiskBytes: 1e9},       // above 8 GiB per vCPU
	}
	for _, s := range refused {
		if _, err := s.Resolve(def); !errors.Is(err, rung.ErrPermission) {
			t.Errorf("default policy on %v: err = %v, want permission denied", s, err)
		}
	}
}

func TestParseSizePolicies(t *testing.T) {
	t.Parallel()
	def := controller.DefaultSizePolicy
	with := func(p rung.SizePolicy, f func(*rung.SizePolicy)) rung.SizePolicy { f(&p); return p }
	tests := []struct {
		name    string
		in      string
		want    map[rung.TenantID]rung.SizePolicy
		wantErr string // a substring of the error; "" for none
	}{
		{name: "no tenants", in: `{"tenants": {}}`, want: map[rung.TenantID]rung.SizePolicy{"*": def}},
		{
			name: "tenant inherits from the default",
			in:   `{"tenants": {"acme": {"max_milli_cpu": 1000}}}`,
			want: map[rung.TenantID]rung.SizePolicy{"*": def, "acme": with(def, func(p *rung.SizePolicy) { p.MaxMilliCPU = 1000 })},
		},
		{
			name: "tenant inherits from star",
			in:   `{"tenants": {"*": {"max_memory_bytes": "4GiB", "max_disk_bytes": 10000000000}, "acme": {"max_disk_bytes": "20 GB"}}}`,
			want: map[rung.TenantID]rung.SizePolicy{
				"*":    with(def, func(p *rung.SizePolicy) { p.MaxMemoryBytes, p.MaxDiskBytes = 4<<30, 10e9 }),
				"acme": with(def, func(p *rung.SizePolicy) { p.MaxMemoryBytes, p.MaxDiskBytes = 4<<30, 20e9 }),
			},
		},
		{
			name: "every field and unit",
			in: `{"tenants": {"big": {"max_milli_cpu": 16000, "max_memory_bytes": "1TiB", "max_disk_bytes": "2TB",
				"min_memory_per_vcpu_bytes": "512MiB", "max_memory_per_vcpu_bytes": "16384 MiB"},
				"small": {"max_memory_bytes": "1048576KiB", "max_disk_bytes": "5000000KB", "min_memory_per_vcpu_bytes": "1000MB", "max_memory_per_vcpu_bytes": "2147483648B"}}}`,
			want: map[rung.TenantID]rung.SizePolicy{
				"*":     def,
				"big":   {MaxMilliCPU: 16000, MaxMemoryBytes: 1 << 40, MaxDiskBytes: 2e12, MinMemoryPerVCPU: 512 << 20, MaxMemoryPerVCPU: 16 << 30},
				"small": {MaxMilliCPU: 8000, MaxMemoryBytes: 1 << 30, MaxDiskBytes: 5e9, MinMemoryPerVCPU: 1e9, MaxMemoryPerVCPU: 2 << 30},
			},
		},
		{name: "not JSON", in: `{"tenants": `, wantErr: "unexpected EOF"},
		{name: "empty file", in: ``, wantErr: "missing value"},
		{name: "trailing data", in: `{"tenants": {}} {}`, wantErr: "unexpected data"},
		{name: "no tenants key", in: `{}`, wantErr: "tenants: missing value"},
		{name: "unknown top-level field", in: `{"tenants": {}, "tenant": {}}`, wantErr: `unknown field "tenant"`},
		{name: "tenants not an object", in: `{"tenants": []}`, wantErr: "tenants: json: cannot unmarshal array"},
		{name: "entry not an object", in: `{"tenants": {"acme": 5}}`, wantErr: `tenants["acme"]: json: cannot unmarshal number`},
		{name: "unknown field", in: `{"tenants": {"acme": {"max_cpu": 4}}}`, wantErr: `tenants["acme"]: unknown field "max_cpu"`},
		{name: "bad tenant name", in: `{"tenants": {"Acme Corp": {}}}`, wantErr: `invalid tenant name "Acme Corp"`},
		{name: "zero", in: `{"tenants": {"acme": {"max_milli_cpu": 0}}}`, wantErr: `tenants["acme"].max_milli_cpu: got 0, want a positive integer`},
		{name: "negative", in: `{"tenants": {"*": {"max_disk_bytes": -1}}}`, wantErr: `tenants["*"].max_disk_bytes: got -1`},
		{name: "null", in: `{"tenants": {"*": {"max_disk_bytes": null}}}`, wantErr: `tenants["*"].max_disk_bytes: got null`},
		{name: "fraction", in: `{"tenants": {"acme": {"max_milli_cpu": 1.5}}}`, wantErr: `max_milli_cpu: got 1.5`},
		{name: "cpu as a string", in: `{"tenants": {"acme": {"max_milli_cpu": "4000"}}}`, wantErr: `max_milli_cpu: got "4000", want a positive integer`},
		{name: "unknown unit", in: `{"tenants": {"acme": {"max_memory_bytes": "4G"}}}`, wantErr: `tenants["acme"].max_memory_bytes: got "4G"`},
		{name: "no digits", in: `{"tenants": {"acme": {"max_memory_bytes": "GiB"}}}`, wantErr: `max_memory_bytes: got "GiB"`},
		{name: "negative string", in: `{"tenants": {"acme": {"max_memory_bytes": "-4GiB"}}}`, wantErr: `max_memory_bytes: got "-4GiB"`},
		{name: "zero string", in: `{"tenants": {"acme": {"max_memory_bytes": "0GiB"}}}`, wantErr: `max_memory_bytes: got "0GiB"`},
		{name: "overflowing number", in: `{"tenants": {"acme": {"max_memory_bytes": 99999999999999999999}}}`, wantErr: `max_memory_bytes: got 99999999999999999999`},
		{name: "overflowing unit", in: `{"tenants": {"acme": {"max_disk_bytes": "9000000000TiB"}}}`, wantErr: `max_disk_bytes: "9000000000TiB" is out of range`},
		{name: "above the hard limit", in: `{"tenants": {"acme": {"max_disk_bytes": "2048TiB"}}}`, wantErr: `max_disk_bytes: "2048TiB" is out of range`},
		{name: "cpu above the hard limit", in: `{"tenants": {"acme": {"max_milli_cpu": 1000001}}}`, wantErr: `max_milli_cpu: 1000001 is out of range`},
		{name: "min ratio above max", in: `{"tenants": {"acme": {"min_memory_per_vcpu_bytes": "16GiB"}}}`, wantErr: `tenants["acme"]: min_memory_per_vcpu_bytes 17179869184 is above max_memory_per_vcpu_bytes 8589934592`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := controller.ParseSizePolicies([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("ParseSizePolicies(%s) err = %v, want it to contain %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSizePolicies(%s): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got.Tenants); diff != "" {
				t.Errorf("ParseSizePolicies(%s) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestSizePoliciesFor(t *testing.T) {
	t.Parallel()
	acme := rung.SizePolicy{MaxMilliCPU: 1000}
	star := rung.SizePolicy{MaxMilliCPU: 2000}
	tests := []struct {
		name   string
		p      controller.SizePolicies
		tenant rung.TenantID
		want   rung.SizePolicy
	}{
		{"named", controller.SizePolicies{Tenants: map[rung.TenantID]rung.SizePolicy{"acme": acme, "*": star}}, "acme", acme},
		{"star", controller.SizePolicies{Tenants: map[rung.TenantID]rung.SizePolicy{"acme": acme, "*": star}}, "beta", star},
		{"default without star", controller.SizePolicies{Tenants: map[rung.TenantID]rung.SizePolicy{"acme": acme}}, "beta", controller.DefaultSizePolicy},
		{"zero entry means no bound", controller.SizePolicies{Tenants: map[rung.TenantID]rung.SizePolicy{"acme": {}}}, "acme", rung.SizePolicy{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.p.For(tc.tenant); got != tc.want {
				t.Errorf("For(%q) = %+v, want %+v", tc.tenant, got, tc.want)
			}
		})
	}
}

// TestCreateSizePolicy checks that Create holds each tenant to its own
// policy, presets included, and stores the size it allowed unchanged.
func TestCreateSizePolicy(t *testing.T) {
	sizes, err := controller.ParseSizePolicies([]byte(`{"tenants": {"acme": {"max_milli_cpu": 1000, "max_memory_bytes": "2GiB"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, controller.Config{Sizes: sizes})
	tests := []struct {
		name   string
		tenant rung.TenantID
		size   rung.Size
		want   error
	}{
		{"preset within", "acme", rung.Size{Preset: "basic"}, nil},
		{"preset above cpu", "acme", rung.Size{Preset: "standard-4"}, rung.ErrPermission},
		{"custom at the caps", "acme", rung.Size{MilliCPU: 1000, MemoryBytes: 2 << 30, DiskBytes: 1e9}, nil},
		{"custom above memory", "acme", rung.Size{MilliCPU: 1000, MemoryBytes: 2<<30 + 1<<20, DiskBytes: 1e9}, rung.ErrPermission},
		{"other tenant gets the default", "beta", rung.Size{Preset: "standard-4"}, nil},
		{"other tenant above the default", "beta", rung.Size{MilliCPU: 64000, MemoryBytes: 1 << 40, DiskBytes: 1 << 40}, rung.ErrPermission},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb, err := e.c.Create(t.Context(), tc.tenant, controller.CreateRequest{Size: tc.size})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Create(%s, %v) err = %v, want %v", tc.tenant, tc.size, err, tc.want)
			}
			if err != nil {
				return
			}
			want, _ := tc.size.Resolve(rung.SizePolicy{})
			if sb.Size != want {
				t.Errorf("Create(%s, %v) size = %+v, want %+v", tc.tenant, tc.size, sb.Size, want)
			}
		})
	}
}
