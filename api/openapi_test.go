package api

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/wire"
)

// TestOpenAPISchemasMatchWire keeps openapi.json's schemas and package
// wire's types the same: every body type has a schema whose properties
// are exactly its JSON fields, so a field added, renamed or dropped on
// either side fails here.
func TestOpenAPISchemasMatchWire(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		t.Fatal(err)
	}
	types := map[string]any{
		"Sandbox": wire.Sandbox{}, "SandboxList": wire.SandboxList{}, "CreateSandboxRequest": wire.CreateSandboxRequest{},
		"UpdateSandboxRequest": wire.UpdateSandboxRequest{}, "ExecRequest": wire.ExecRequest{}, "ExecResult": wire.ExecResult{},
		"Frame": wire.Frame{}, "WSInput": wire.WSInput{}, "Error": wire.ErrorBody{}, "ErrorDetail": wire.ErrorDetail{},
		"FileInfo": wire.FileInfo{}, "FileList": wire.FileList{}, "MkdirRequest": wire.MkdirRequest{}, "MoveRequest": wire.MoveRequest{},
		"UntarResult": wire.UntarResult{}, "Event": wire.Event{}, "Journal": wire.Journal{}, "EffectRequest": wire.EffectRequest{},
		"Effect": wire.Effect{}, "EffectResponse": wire.EffectResponse{}, "EffectList": wire.EffectList{},
		"ProcessRequest": wire.ProcessRequest{}, "Process": wire.Process{}, "ProcessExit": wire.Exit{}, "OutputFrame": wire.OutputFrame{},
		"Snapshot": wire.Snapshot{}, "SnapshotRequest": wire.SnapshotRequest{}, "SnapshotList": wire.SnapshotList{},
		"PinRequest": wire.PinRequest{}, "RestoreRequest": wire.RestoreRequest{}, "ForkRequest": wire.ForkRequest{},
		"ForkResult": wire.ForkResult{}, "ForkResults": wire.ForkResults{}, "PauseRequest": wire.PauseRequest{},
		"Tenant": wire.Tenant{}, "TenantList": wire.TenantList{}, "TenantRequest": wire.TenantRequest{},
		"TokenRequest": wire.TokenRequest{}, "TokenResponse": wire.TokenResponse{}, "Size": rung.Size{},
		"SecretRequest": wire.SecretRequest{}, "Secret": wire.Secret{}, "SecretList": wire.SecretList{},
		"ShareRequest": wire.ShareRequest{}, "Share": wire.Share{}, "ShareList": wire.ShareList{},
		"NetworkPolicy": rung.NetworkPolicy{}, "NetworkRule": rung.NetworkRule{}, "HeaderRule": rung.HeaderRule{},
		"NetworkLimits": rung.NetworkLimits{}, "UsageSample": wire.UsageSample{}, "SandboxMetrics": wire.SandboxMetrics{},
		"SandboxUsage": wire.SandboxUsage{}, "UsageList": wire.UsageList{}, "ExecCounts": rung.ExecCounts{},
	}
	for name, v := range types {
		schema, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("openapi.json has no schema %s (%T)", name, v)
			continue
		}
		var doc []string
		for p := range schema.Properties {
			doc = append(doc, p)
		}
		slices.Sort(doc)
		if fields := jsonFields(reflect.TypeOf(v)); !slices.Equal(fields, doc) {
			t.Errorf("schema %s: properties %v; %T's JSON fields are %v", name, doc, v, fields)
		}
	}
}

// jsonFields returns the sorted JSON names of struct type typ's fields.
func jsonFields(typ reflect.Type) []string {
	var out []string
	for f := range typ.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
