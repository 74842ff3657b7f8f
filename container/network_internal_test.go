package container

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/runtime-spec/specs-go"
	"rung.dev/rung"
)

// Without a prepared namespace the spec is what it always was; with one,
// two things differ: the network namespace's path and a read-only
// resolv.conf.
func TestSpecNetwork(t *testing.T) {
	in := plainSpecInput()
	plain := buildSpec(in)
	for _, ns := range plain.Linux.Namespaces {
		if ns.Path != "" {
			t.Errorf("namespace %s joins %q without a prepared namespace", ns.Type, ns.Path)
		}
	}
	if slices.ContainsFunc(plain.Mounts, func(m specs.Mount) bool { return m.Destination == "/etc/resolv.conf" }) {
		t.Error("a resolv.conf mount without one asked for")
	}
	in.NetNS, in.ResolvConf = "/state/ns/sbx", "/bundle/resolv.conf"
	joined := buildSpec(in)
	var netns []specs.LinuxNamespace
	for _, ns := range joined.Linux.Namespaces {
		if ns.Path != "" {
			netns = append(netns, ns)
		}
	}
	if want := []specs.LinuxNamespace{{Type: specs.NetworkNamespace, Path: in.NetNS}}; !cmp.Equal(netns, want) {
		t.Errorf("namespaces joined: %+v, want %+v", netns, want)
	}
	resolv := joined.Mounts[len(joined.Mounts)-1]
	want := specs.Mount{Destination: "/etc/resolv.conf", Type: "bind", Source: in.ResolvConf, Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}}
	if diff := cmp.Diff(want, resolv); diff != "" {
		t.Errorf("resolv.conf mount (-want +got):\n%s", diff)
	}
	// Nothing else differs.
	joined.Mounts = joined.Mounts[:len(joined.Mounts)-1]
	for i := range joined.Linux.Namespaces {
		joined.Linux.Namespaces[i].Path = ""
	}
	a, _ := json.Marshal(plain)
	b, _ := json.Marshal(joined)
	if string(a) != string(b) {
		t.Errorf("specs differ beyond the network:\n%s\n%s", a, b)
	}
}

func TestNetworkedRuntime(t *testing.T) {
	for _, rt := range []Runtime{{Name: "runc", Binary: "runc"}, Crun("crun")} {
		if got := rt.networked(); !cmp.Equal(got, rt) {
			t.Errorf("%s networked: %+v, want it unchanged", rt.Name, got)
		}
	}
	g := GVisor("runsc")
	n := g.networked()
	if !slices.Contains(n.Flags, "--network=sandbox") || slices.Contains(n.Flags, "--network=none") || len(n.Wrapper) == 0 {
		t.Errorf("runsc networked: flags %v, wrapper %v; want --network=sandbox only, under a wrapper", n.Flags, n.Wrapper)
	}
	if !cmp.Equal(g, GVisor("runsc")) {
		t.Errorf("networked changed the runtime it was called on: %+v", g)
	}
}

// plainSpecInput is a container's spec input without network, boot id or
// certificate store, for tests that add one of them.
func plainSpecInput() specInput {
	return specInput{ID: rung.NewSandboxID(), Rootfs: "/r", Workspace: "/w", Tmp: "/t", AgentBin: "/a", RunDir: "/run",
		Env: []string{"PATH=/bin"}, Size: rung.Presets["basic"], Hostname: "rung", PassedListener: true}
}
