package controller_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

// TestEntryJSON pins the JSON keys of every journal entry's and output
// event's data (docs/API.md, "Journal and events"): a renamed tag or a
// changed omitempty fails here. Each kind of an entry has a case, and
// every rung.EntryType needs at least one.
func TestEntryJSON(t *testing.T) {
	name := "build"
	startMS := int64(0)
	tests := []struct {
		name string
		typ  rung.EntryType
		data any
		want []string // its keys, in the order they are encoded
	}{
		{"exec started", rung.EntryExecStarted, controller.ExecStarted{},
			[]string{"backend", "command", "exec", "reason"}},
		{"exec ended", rung.EntryExecEnded, controller.ExecEnded{ExitReason: rung.ExitReasonExit},
			[]string{"backend", "duration_ms", "exec", "exit_code", "exit_reason", "stderr_bytes", "stdout_bytes"}},
		{"exec ended by a limit", rung.EntryExecEnded, controller.ExecEnded{ExitReason: rung.ExitReasonSignal,
			Limit: rung.LimitWallTime, Reason: "rerouted", Signal: "SIGKILL"},
			[]string{"backend", "duration_ms", "exec", "exit_code", "exit_reason", "limit", "reason", "signal", "stderr_bytes", "stdout_bytes"}},
		{"exec ended without a result", rung.EntryExecEnded, controller.ExecEnded{Error: "internal"},
			[]string{"backend", "duration_ms", "error", "exec", "exit_code", "stderr_bytes", "stdout_bytes"}},
		{"exec output", rung.EntryExecOutput, controller.ExecOutput{},
			[]string{"exec", "stream", "data"}},
		{"exec lost", rung.EntryExecLost, controller.ExecLost{},
			[]string{"execs", "reason"}},
		{"container started", rung.EntryContainerStarted, controller.ContainerStarted{StartMS: &startMS},
			[]string{"image", "isolation", "start_ms"}},
		{"warm container started", rung.EntryContainerStarted, controller.ContainerStarted{Warm: true},
			[]string{"image", "isolation", "warm"}},
		{"container stopped", rung.EntryContainerStopped, controller.ContainerStopped{},
			[]string{"reason"}},
		{"container exited", rung.EntryContainerExited, controller.ContainerExited{},
			[]string{"reason"}},
		{"container not adopted", rung.EntryContainerExited, controller.ContainerExited{Detail: "gone"},
			[]string{"detail", "reason"}},
		{"container adopted", rung.EntryContainerAdopted, controller.ContainerAdopted{},
			[]string{"processes", "reason"}},
		{"process started", rung.EntryProcessStarted, controller.ProcessStarted{},
			[]string{"argv", "process"}},
		{"process exited", rung.EntryProcessExited, controller.ProcessExited{},
			[]string{"argv", "exit_code", "exit_reason", "process"}},
		{"process killed", rung.EntryProcessExited, controller.ProcessExited{Signal: "SIGTERM"},
			[]string{"argv", "exit_code", "exit_reason", "process", "signal"}},
		{"process lost", rung.EntryProcessLost, controller.ProcessLost{},
			[]string{"argv", "process", "reason"}},
		{"file written", rung.EntryFileWritten, controller.FileWritten{},
			[]string{"bytes", "mode", "path"}},
		{"file mkdir", rung.EntryFileMkdir, controller.FileMkdir{},
			[]string{"path"}},
		{"file moved", rung.EntryFileMoved, controller.FileMoved{},
			[]string{"from", "to"}},
		{"file removed", rung.EntryFileRemoved, controller.FileRemoved{},
			[]string{"path", "recursive"}},
		{"file untarred", rung.EntryFileUntarred, controller.FileUntarred{},
			[]string{"entries", "path"}},
		{"effect declared", rung.EntryEffectDeclared, controller.EffectDeclared{},
			[]string{"key", "kind"}},
		{"sandbox created", rung.EntrySandboxCreated, controller.SandboxCreated{Size: "small"},
			[]string{"name", "size"}},
		{"sandbox created warm", rung.EntrySandboxCreated, controller.SandboxCreated{Size: "small", Warm: true},
			[]string{"name", "size", "warm"}},
		{"sandbox restored from a snapshot", rung.EntrySandboxCreated, controller.SandboxCreated{Snapshot: "snp_1"},
			[]string{"name", "snapshot"}},
		{"sandbox updated", rung.EntrySandboxUpdated, controller.SandboxUpdated{},
			[]string{"idle_timeout_ms", "labels"}},
		{"sandbox idle stopped", rung.EntrySandboxIdleStopped, controller.SandboxIdleStopped{},
			[]string{"idle_timeout_ms"}},
		{"sandbox expiry stopped", rung.EntrySandboxExpiryStopped, controller.SandboxExpiryStopped{},
			[]string{"labels", "ttl_ms"}},
		{"sandbox workspace lost", rung.EntrySandboxWorkspaceLost, controller.SandboxWorkspaceLost{},
			[]string{"reason"}},
		{"sandbox quarantined", rung.EntrySandboxQuarantined, controller.SandboxQuarantined{},
			[]string{"reason"}},
		{"sandbox snapshotted", rung.EntrySandboxSnapshotted, controller.SandboxSnapshotted{},
			[]string{"consistency", "name", "size_bytes", "snapshot"}},
		{"sandbox rolled back", rung.EntrySandboxRestored, controller.SandboxRestored{Name: &name},
			[]string{"name", "snapshot"}},
		{"sandbox rollback recovered", rung.EntrySandboxRestored, controller.SandboxRestored{Recovered: true},
			[]string{"recovered", "snapshot"}},
		{"sandbox restore failed", rung.EntrySandboxRestoreFailed, controller.SandboxRestoreFailed{},
			[]string{"reason", "snapshot"}},
		{"sandbox forked", rung.EntrySandboxForked, controller.SandboxForked{},
			[]string{"parent"}},
		{"sandbox forked from a snapshot", rung.EntrySandboxForked, controller.SandboxForked{Snapshot: "snp_1"},
			[]string{"parent", "snapshot"}},
		{"sandbox fork made", rung.EntrySandboxForkMade, controller.SandboxForkMade{},
			[]string{"failed", "forks"}},
		{"sandbox fork lost", rung.EntrySandboxForkLost, controller.SandboxForkLost{},
			[]string{"reason", "sandbox"}},
		{"snapshot expired", rung.EntrySnapshotExpired, controller.SnapshotExpired{},
			[]string{"name", "snapshot"}},
		{"snapshot lost", rung.EntrySnapshotLost, controller.SnapshotLost{},
			[]string{"name", "reason", "snapshot"}},
		{"port shared", rung.EntryPortShared, controller.PortShared{Expires: time.Unix(1, 0).UTC()},
			[]string{"expires", "port", "share"}},
		{"port share revoked", rung.EntryPortShareRevoked, controller.PortShareRevoked{},
			[]string{"port", "share"}},
		{"network updated", rung.EntryNetworkUpdated, controller.NetworkUpdated{},
			[]string{"headers", "mode", "rules"}},
		{"egress connection", rung.EntryEgressConnection, controller.Egress{Host: "h", IP: "1.2.3.4", Port: 443, Protocol: "tls",
			BytesIn: 1, BytesOut: 2, DurationMS: 3, Rule: "allow *.h", Time: time.Unix(1, 0).UTC()},
			[]string{"bytes_in", "bytes_out", "duration_ms", "host", "ip", "port", "protocol", "rule", "time"}},
		{"egress request", rung.EntryEgressRequest, controller.Egress{Host: "h", Method: "GET", Path: "/", Status: 200, Secret: "S", Port: 443,
			Protocol: "https", Time: time.Unix(1, 0).UTC()},
			[]string{"host", "method", "path", "port", "protocol", "secret", "status", "time"}},
		{"egress denied", rung.EntryEgressDenied, controller.Egress{Host: "h", Port: 80, Protocol: "http", Message: "m", Time: time.Unix(1, 0).UTC()},
			[]string{"host", "message", "port", "protocol", "time"}},
	}
	seen := map[rung.EntryType]bool{}
	for _, tc := range tests {
		seen[tc.typ] = true
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, jsonKeys(t, b)); diff != "" {
				t.Errorf("%s data %s: keys (-want +got):\n%s", tc.typ, b, diff)
			}
			// It decodes back into its own type unchanged.
			back := reflect.New(reflect.TypeOf(tc.data))
			if err := json.Unmarshal(b, back.Interface()); err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
			if diff := cmp.Diff(tc.data, back.Elem().Interface()); diff != "" {
				t.Errorf("%s data %s decoded (-want +got):\n%s", tc.typ, b, diff)
			}
		})
	}
	for _, typ := range entryTypes(t) {
		if !seen[typ] {
			t.Errorf("entry type %s has no case in TestEntryJSON", typ)
		}
	}
}

// jsonKeys returns the keys of the JSON object b in the order they appear.
func jsonKeys(t *testing.T, b []byte) []string {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatalf("%s is not a JSON object: %v", b, err)
	}
	keys := slices.Collect(maps.Keys(obj))
	// Sort by where each key is in b: the encoded order, which is the
	// order of the struct's fields.
	at := func(k string) int {
		q, _ := json.Marshal(k)
		return bytes.Index(b, append(q, ':'))
	}
	slices.SortFunc(keys, func(a, c string) int { return at(a) - at(c) })
	return keys
}

// entryTypes returns every rung.EntryType constant, read from the root
// package's source, so a new one without a case above fails the test.
func entryTypes(t *testing.T) []rung.EntryType {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../entry.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []rung.EntryType
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "EntryType" {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok {
					t.Fatalf("entry type %v is not a string literal", v)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, rung.EntryType(s))
			}
		}
	}
	if len(out) < 30 {
		t.Fatalf("found %d entry types in ../entry.go, want 30 or more", len(out))
	}
	return out
}
