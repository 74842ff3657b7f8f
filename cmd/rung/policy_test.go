package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rung.dev/rung/api"
	"rung.dev/rung/client"
)

// TestSizePolicyThroughDaemon writes <data>/sizes.json, starts the daemon
// as `rung serve` does and creates sandboxes over HTTP: a tenant named in
// the file is held to its caps (refused above them, with the bound and
// the value named; allowed at them), and a tenant not named gets "*".
func TestSizePolicyThroughDaemon(t *testing.T) {
	data := t.TempDir()
	sizes := `{"tenants": {
		"*":    {"max_milli_cpu": 2000, "max_memory_bytes": "4GiB"},
		"acme": {"max_milli_cpu": 1000, "max_memory_bytes": "2GiB", "max_disk_bytes": "10GB"}}}`
	if err := os.WriteFile(filepath.Join(data, "sizes.json"), []byte(sizes), 0o600); err != nil {
		t.Fatal(err)
	}
	d, addr := startDaemonWith(t, DaemonConfig{Data: data, NoContainers: true})

	admin := client.New(addr, client.WithToken(d.Token))
	tokens := map[string]string{}
	for _, tenant := range []string{"acme", "beta"} {
		if _, err := admin.CreateTenant(t.Context(), tenant); err != nil {
			t.Fatal(err)
		}
		tok, err := admin.CreateToken(t.Context(), tenant, false)
		if err != nil {
			t.Fatal(err)
		}
		tokens[tenant] = tok.Token
	}

	tests := []struct {
		name    string
		tenant  string
		size    string
		status  int
		code    string
		message string // for an error, the whole message
	}{
		{"acme above its cpu cap", "acme", `{"milli_cpu": 64000, "memory_bytes": 1099511627776, "disk_bytes": 1099511627776}`,
			http.StatusForbidden, "permission_denied", "size: milli_cpu 64000 is above this tenant's maximum 1000"},
		{"acme above its disk cap", "acme", `{"milli_cpu": 1000, "memory_bytes": 2147483648, "disk_bytes": 10000000001}`,
			http.StatusForbidden, "permission_denied", "size: disk_bytes 10000000001 is above this tenant's maximum 10000000000 (10 GB)"},
		{"acme preset above its caps", "acme", `{"preset": "standard-2"}`,
			http.StatusForbidden, "permission_denied", "size standard-2: memory_bytes 6442450944 (6 GiB) is above this tenant's maximum 2147483648 (2 GiB)"},
		{"acme below the default ratio", "acme", `{"milli_cpu": 1000, "memory_bytes": 67108864, "disk_bytes": 1000000000}`,
			http.StatusForbidden, "permission_denied", "size: memory_bytes 67108864 (64 MiB) for milli_cpu 1000 is below this tenant's minimum of 134217728 (128 MiB) per vCPU"},
		{"acme at its caps", "acme", `{"milli_cpu": 1000, "memory_bytes": 2147483648, "disk_bytes": 10000000000}`, http.StatusCreated, "", ""},
		{"acme malformed size", "acme", `{"milli_cpu": -1, "memory_bytes": 2147483648, "disk_bytes": 1}`,
			http.StatusBadRequest, "invalid_argument", "custom size needs positive milli_cpu, memory_bytes and disk_bytes"},
		{"acme overflowing size", "acme", `{"milli_cpu": 99999999999999999999, "memory_bytes": 1, "disk_bytes": 1}`, http.StatusBadRequest, "invalid_argument", ""},
		{"beta gets star", "beta", `{"milli_cpu": 2000, "memory_bytes": 4294967296, "disk_bytes": 10000000000}`, http.StatusCreated, "", ""},
		{"beta above star", "beta", `{"preset": "standard-4"}`,
			http.StatusForbidden, "permission_denied", "size standard-4: milli_cpu 4000 is above this tenant's maximum 2000"},
		{"beta inherits the default disk cap", "beta", `{"milli_cpu": 1000, "memory_bytes": 1073741824, "disk_bytes": 107374182401}`,
			http.StatusForbidden, "permission_denied", "size: disk_bytes 107374182401 is above this tenant's maximum 107374182400 (100 GiB)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), "POST", "http://"+addr+"/v1/sandboxes", strings.NewReader(`{"size": `+tc.size+`}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tokens[tc.tenant])
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("create with size %s as %s: HTTP %d, want %d", tc.size, tc.tenant, resp.StatusCode, tc.status)
			}
			if tc.code == "" {
				return
			}
			var body api.ErrorBody
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if body.Error.Code != tc.code || !strings.HasPrefix(body.Error.Message, tc.message) {
				t.Errorf("create with size %s as %s: error %+v, want code %s and message %q", tc.size, tc.tenant, body.Error, tc.code, tc.message)
			}
		})
	}
}

// TestSizePolicyMalformed checks that a malformed sizes.json stops the
// daemon from starting, with an error naming the file and the field, and
// that no daemon state is created or left open.
func TestSizePolicyMalformed(t *testing.T) {
	tests := []struct {
		name string
		file string
		want string // after the file's path
	}{
		{"not JSON", `{"tenants": {"acme": `, ": unexpected EOF"},
		{"unknown field", `{"tenants": {"acme": {"max_vcpu": 4}}}`, `: tenants["acme"]: unknown field "max_vcpu"`},
		{"bad value", `{"tenants": {"*": {"max_memory_bytes": "lots"}}}`, `: tenants["*"].max_memory_bytes: got "lots"`},
		{"negative", `{"tenants": {"acme": {"max_milli_cpu": -8000}}}`, `: tenants["acme"].max_milli_cpu: got -8000, want a positive integer`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			path := filepath.Join(data, "sizes.json")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			d, err := OpenDaemon(t.Context(), DaemonConfig{Data: data, NoContainers: true})
			if err == nil {
				d.Close()
				t.Fatalf("OpenDaemon with sizes.json %s: started, want an error", tc.file)
			}
			if want := "size policy " + path + tc.want; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("OpenDaemon err = %q, want it to start with %q", err, want)
			}
			if _, err := os.Stat(filepath.Join(data, "rung.db")); err == nil {
				t.Errorf("OpenDaemon failed on sizes.json but created rung.db")
			}
		})
	}
}
