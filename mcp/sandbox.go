package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// Sandbox tools: create, list, get, delete.

type sandboxRef struct {
	Sandbox string `json:"sandbox" jsonschema:"the sandbox's id (sbx_...) or name"`
}

type createIn struct {
	Name  string `json:"name,omitempty" jsonschema:"a name for the sandbox, unique among yours: 1 to 63 of a-z, 0-9, '.', '_', '-', starting with a letter or digit; every tool accepts it in place of the id"`
	Image string `json:"image,omitempty" jsonschema:"image to start from; default the server's (base: Debian 12 with bash, python3, nodejs and npm, git, build-essential, curl, jq, ripgrep, sudo)"`
	Size  string `json:"size,omitempty" jsonschema:"size preset: lite, basic, standard-1, standard-2, standard-3 or standard-4; default standard-3 (2 vCPU, 8 GiB memory, 16 GB disk). Or leave it out and give milli_cpu, memory_bytes and disk_bytes"`
	// Custom size, in place of a preset.
	MilliCPU    int64             `json:"milli_cpu,omitempty" jsonschema:"custom size: CPU in thousandths of a core (2000 = 2 vCPU)"`
	MemoryBytes int64             `json:"memory_bytes,omitempty" jsonschema:"custom size: memory limit in bytes"`
	DiskBytes   int64             `json:"disk_bytes,omitempty" jsonschema:"custom size: disk quota in bytes"`
	Network     *networkIn        `json:"network,omitempty" jsonschema:"what the sandbox's container may reach; default none (loopback only)"`
	Env         map[string]string `json:"env,omitempty" jsonschema:"environment variables for every command; a value {{secret:NAME}} becomes a placeholder the egress proxy replaces with your secret NAME on the way to its hosts"`
	User        string            `json:"user,omitempty" jsonschema:"user commands run as (default the image's: 'user' with passwordless sudo in base; 'root' also works)"`
	Isolation   string            `json:"isolation,omitempty" jsonschema:"container runtime: container (runc or crun, the default) or gvisor (runsc: a stronger boundary, slower system calls)"`
	Labels      map[string]string `json:"labels,omitempty" jsonschema:"labels to find the sandbox by (sandbox_list's label filter)"`
	// FromSnapshot restores a snapshot into the new sandbox.
	FromSnapshot string `json:"from_snapshot,omitempty" jsonschema:"start from this snapshot (id or name) instead of an empty workspace; its image, size, env and network are the defaults"`
	TTLMS        int64  `json:"ttl_ms,omitempty" jsonschema:"delete the sandbox this many milliseconds after creation (default: never)"`
}

type networkIn struct {
	Mode  string             `json:"mode" jsonschema:"none: loopback only; egress: every connection goes through rung's proxy under the rules (denials are answered with a reason); open: direct, where the server allows it"`
	Allow []string           `json:"allow,omitempty" jsonschema:"egress: domains to allow (exact, or *.example.com for any name below it); once anything is allowed, everything else is denied"`
	Deny  []string           `json:"deny,omitempty" jsonschema:"egress: domains to deny"`
	Rules []rung.NetworkRule `json:"rules,omitempty" jsonschema:"egress: full rules, after allow and deny: {action: allow|deny, domain, cidr, ports, methods, path_prefix}; every field set must match"`
}

// policy is the API's network policy for n.
func (n *networkIn) policy() rung.NetworkPolicy {
	if n == nil {
		return rung.NetworkPolicy{}
	}
	p := rung.NetworkPolicy{Mode: rung.NetworkMode(n.Mode)}
	for _, d := range n.Allow {
		p.Rules = append(p.Rules, rung.NetworkRule{Action: rung.RuleAllow, Domain: d})
	}
	for _, d := range n.Deny {
		p.Rules = append(p.Rules, rung.NetworkRule{Action: rung.RuleDeny, Domain: d})
	}
	p.Rules = append(p.Rules, n.Rules...)
	return p
}

type listIn struct {
	Labels map[string]string `json:"labels,omitempty" jsonschema:"only sandboxes with all these labels"`
	State  string            `json:"state,omitempty" jsonschema:"only sandboxes in this state: ready (no container running), running or paused"`
}

type sandboxList struct {
	Sandboxes []client.Sandbox `json:"sandboxes"`
}

type deleted struct {
	Deleted string `json:"deleted"`
}

// namePattern is [rung.ValidName] as a schema pattern.
const namePattern = `^[a-z0-9][a-z0-9._-]{0,62}$`

var networkModes = []string{string(rung.NetworkNone), string(rung.NetworkEgress), string(rung.NetworkOpen)}

func (t *tools) addSandboxTools(s *sdk.Server) {
	add(t, s, spec{name: "sandbox_create", title: "Create a sandbox",
		desc: "Create a sandbox: a Linux computer with a persistent /workspace, whose container starts when a command first needs it. " +
			"Returns the sandbox (id, name, image, size, state). Choose the image, a size preset, and the network: none (the default; " +
			"loopback only), or egress with allowed domains (e.g. {mode: egress, allow: [\"pypi.org\", \"*.pythonhosted.org\"]}) to install packages.",
		schema: []schemaRule{
			oneOf("size", "lite", "basic", "standard-1", "standard-2", "standard-3", "standard-4"),
			oneOf("isolation", string(rung.IsolationContainer), string(rung.IsolationGVisor)),
			oneOf("network.mode", networkModes...),
			oneOf("network.rules[].action", string(rung.RuleAllow), string(rung.RuleDeny)),
			matching("name", namePattern),
			atLeast("milli_cpu", 1), atLeast("memory_bytes", 1), atLeast("disk_bytes", 1), atLeast("ttl_ms", 1),
		}},
		func(ctx context.Context, c *client.Client, in createIn) (any, error) {
			req := client.CreateRequest{Name: in.Name, Labels: in.Labels, Image: in.Image, Env: in.Env, User: in.User,
				Isolation: rung.Isolation(in.Isolation), Network: in.Network.policy(), FromSnapshot: in.FromSnapshot, TTLMS: in.TTLMS}
			if in.Size != "" || in.MilliCPU != 0 || in.MemoryBytes != 0 || in.DiskBytes != 0 {
				req.Size = rung.Size{Preset: in.Size, MilliCPU: in.MilliCPU, MemoryBytes: in.MemoryBytes, DiskBytes: in.DiskBytes}
			}
			return c.Create(ctx, req)
		})
	add(t, s, spec{name: "sandbox_list", title: "List sandboxes", readOnly: true,
		desc:   "List your sandboxes, oldest first, with their id, name, image, size, network and state (ready: no container running; running; paused).",
		schema: []schemaRule{oneOf("state", string(rung.StateReady), string(rung.StateRunning), string(rung.StatePaused))}},
		func(ctx context.Context, c *client.Client, in listIn) (sandboxList, error) {
			l, err := c.List(ctx, client.ListOptions{Labels: in.Labels, State: rung.State(in.State)})
			return sandboxList{Sandboxes: l}, err
		})
	add(t, s, spec{name: "sandbox_get", title: "Describe a sandbox", readOnly: true,
		desc: "Describe one sandbox: id, name, image, size, network policy, user, state, idle timeout."},
		func(ctx context.Context, c *client.Client, in sandboxRef) (any, error) {
			return c.Get(ctx, in.Sandbox)
		})
	add(t, s, spec{name: "sandbox_delete", title: "Delete a sandbox", destructive: true,
		desc: "Delete a sandbox: its running commands are canceled, its container stopped and its files removed, at once. Its snapshots stay."},
		func(ctx context.Context, c *client.Client, in sandboxRef) (deleted, error) {
			return deleted{Deleted: in.Sandbox}, c.Delete(ctx, in.Sandbox)
		})
}
