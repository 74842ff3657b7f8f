package container

import (
	"github.com/opencontainers/runtime-spec/specs-go"
	"rung.dev/rung"
)

// Paths inside every container.
const (
	AgentDir     = "/.rung/bin" // holds the rung binary, read-only
	AgentRunDir  = "/.rung/run" // the agent's socket, shared with the host under runsc only
	agentBinName = "rung"
)

// specInput is what a bundle's config.json is made from.
type specInput struct {
	ID        rung.SandboxID
	Rootfs    string // host path of the mounted overlay
	Workspace string // host path of the sandbox's fs/workspace
	Tmp       string // host path of the sandbox's fs/tmp
	AgentBin  string // host directory holding the rung binary
	// RunDir is the host directory where the agent makes its socket,
	// bind-mounted at AgentRunDir; unused with PassedListener.
	RunDir   string
	Env      []string // image environment
	Size     rung.Size
	Hostname string
	// PassedListener: the agent serves the listening socket it inherits
	// as descriptor 3 (see Manager.Start) instead of making one in RunDir,
	// and the container sees no host directory but its own files: nothing
	// it can write decides where the daemon connects.
	PassedListener bool
	// SeccompBPF, when set, is the seccomp program compiled by rung
	// (base64, see seccomp_bpf.go), passed in crun's annotation instead of
	// the profile in the spec's seccomp section.
	SeccompBPF string
	// NetNS is the path of a network namespace to join (see
	// StartRequest.NetNS); "" makes a new one, with loopback only.
	NetNS string
	// ResolvConf is the host path of a file bind-mounted read-only at
	// /etc/resolv.conf; "" leaves the image's.
	ResolvConf string
	// CABundle is the host path of a file bind-mounted read-only at
	// /etc/ssl/certs/ca-certificates.crt; "" leaves the image's.
	CABundle string
	// BootID is the host path of a file holding this start's boot id,
	// bind-mounted read-only over BootIDPath (see bootIDMount); ""
	// leaves the host's (runc, crun) or none (runsc).
	BootID string
	// MountBin, when set, is the host's mount(8), which a createContainer
	// hook runs to make BootID's mount (runc); without it, the mount is
	// the spec's (crun, runsc).
	MountBin string
}

// BootIDPath is the kernel's boot id, which changes with every boot.
// Each container start gets its own (Manager.Start), as a VM's boot does
// (E2B's filesystem-only resume checks it; systemd-nspawn does the same):
// containers share the host's kernel, and with it the host's boot id.
const BootIDPath = "/proc/sys/kernel/random/boot_id"

// dockerCaps is Docker's default capability set without NET_RAW (raw
// sockets are an escape route we close) and without MKNOD, SETFCAP and
// AUDIT_WRITE, which agents' workloads do not need.
var dockerCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_SETGID", "CAP_SETUID",
	"CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL",
}

// pidsMax bounds processes per container, so a fork bomb stops there.
const pidsMax = 1024

// cpuLimit is a container's CFS bandwidth: quota microseconds of CPU
// per period, plus up to burst microseconds banked from idle periods.
type cpuLimit struct{ period, quota, burst int64 }

// cpuLimits is the CPU share of size. Burst is the kernel's maximum (one
// quota): an agent's commands come in bursts after idle time, and with it
// a lite sandbox (62 mCPU, 6.2 ms per 100 ms) runs a short command without
// waiting out a period.
func cpuLimits(size rung.Size) cpuLimit {
	const period = 100000
	quota := size.MilliCPU * period / 1000
	if quota < 1000 {
		quota = 1000 // the kernel's minimum cfs quota is 1 ms
	}
	return cpuLimit{period: period, quota: quota, burst: quota}
}

func buildSpec(in specInput) *specs.Spec {
	memory := in.Size.MemoryBytes
	swap := memory // no swap beyond the memory limit
	pids := int64(pidsMax)
	// no_new_privileges is off, as in Docker's default: commands run as
	// an unprivileged user (issue 11), and sudo (setuid root) is how that
	// user becomes root again in its own container. With it on, a setuid
	// program runs without gaining anything. Off, sudo gains exactly what
	// the container's root already has, the capabilities above (bounded
	// by the bounding set, which no exec can widen) and nothing else: the
	// seccomp allow-list still applies (the filter is inherited and cannot
	// be removed), the agent stays undumpable, and /workspace and /tmp
	// are nosuid, so a setuid file written there gains nothing. See
	// docs/decisions/container.md.
	noNewPrivs := false
	rw := func(src, dst string) specs.Mount {
		return specs.Mount{Destination: dst, Type: "bind", Source: src, Options: []string{"rbind", "rw", "nosuid", "nodev"}}
	}
	args := []string{AgentDir + "/" + agentBinName, "agent", "--listen-fd", "3"}
	mounts := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		rw(in.Workspace, "/workspace"),
		rw(in.Tmp, "/tmp"),
		{Destination: AgentDir, Type: "bind", Source: in.AgentBin, Options: []string{"rbind", "ro", "nosuid", "nodev"}},
	}
	if !in.PassedListener {
		// runsc: the agent makes its socket in a directory shared with
		// the host (a small tmpfs there, see Manager.Start), and the host
		// pins the socket it finds first (agent.Client).
		args = []string{AgentDir + "/" + agentBinName, "agent", "--socket-dir", AgentRunDir}
		mounts = append(mounts, rw(in.RunDir, AgentRunDir))
	}
	spec := &specs.Spec{
		// 1.0.2: the newest version every runtime here accepts (crun 1.8
		// refuses 1.3.0, the module's own).
		Version:  "1.0.2",
		Hostname: in.Hostname,
		Root:     &specs.Root{Path: in.Rootfs},
		Process: &specs.Process{
			Args: args,
			Env:  in.Env,
			Cwd:  "/workspace",
			User: specs.User{UID: 0, GID: 0},
			Capabilities: &specs.LinuxCapabilities{
				Bounding: dockerCaps, Effective: dockerCaps, Permitted: dockerCaps,
			},
			NoNewPrivileges: noNewPrivs,
		},
		Mounts: mounts,
		Linux: &specs.Linux{
			CgroupsPath: "/rung/" + string(in.ID),
			Resources: &specs.LinuxResources{
				Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
				Memory:  &specs.LinuxMemory{Limit: &memory, Swap: &swap},
				// No CPU quota here: the agent starts unthrottled and
				// the manager applies cpu (cpuLimits) once it answers.
				Pids: &specs.LinuxPids{Limit: &pids},
			},
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace}, {Type: specs.MountNamespace},
			},
			MaskedPaths: []string{
				"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
				"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
				"/sys/firmware", "/sys/devices/virtual/powercap",
			},
			ReadonlyPaths: []string{
				"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
			},
			Seccomp: defaultSeccomp(),
		},
	}
	if in.SeccompBPF != "" {
		spec.Linux.Seccomp = nil
		spec.Annotations = map[string]string{seccompBPFAnnotation: in.SeccompBPF}
	}
	for i, ns := range spec.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace {
			spec.Linux.Namespaces[i].Path = in.NetNS
		}
	}
	if in.ResolvConf != "" {
		spec.Mounts = append(spec.Mounts, hostFileMount("/etc/resolv.conf", in.ResolvConf))
	}
	if in.CABundle != "" {
		spec.Mounts = append(spec.Mounts, hostFileMount(CABundlePath, in.CABundle))
	}
	bootIDMount(spec, in)
	return spec
}

// hostFileMount bind-mounts the host's file src read-only at dst.
func hostFileMount(dst, src string) specs.Mount {
	return specs.Mount{Destination: dst, Type: "bind", Source: src, Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}}
}

// bootIDMount puts in.BootID over BootIDPath, read-only. Under runc
// (in.MountBin set) by a createContainer hook, which runc runs in the
// container's mount namespace after its mounts and before it pivots to
// the root (so the host's binary and the root's host path are the ones
// to name): runc refuses every mount of the spec under /proc. Under crun
// and runsc as a mount of the spec, also listed in readonlyPaths: crun
// makes it before its read-only remount of /proc/sys, whose recursive
// copy of it comes out writable (a container's root could then write the
// host's file, and fill the tmpfs every container's boot id lives on;
// TestBootID writes to it), and the readonlyPaths entry, after /proc/sys,
// remounts that copy read-only. Not a hook under crun: crun writes the
// container's state to a hook's standard input after starting it and
// fails the start ("writing to pipe: Broken pipe") when the hook has
// exited without reading it, as mount(8) does when it is quick. The
// hook's target is the runtime's own proc mount: runc refuses a root
// whose /proc is a symbolic link (which a sandbox could leave in its
// upper directory).
func bootIDMount(spec *specs.Spec, in specInput) {
	switch {
	case in.BootID == "":
	case in.MountBin != "":
		spec.Hooks = &specs.Hooks{CreateContainer: []specs.Hook{{
			Path: in.MountBin,
			Args: []string{"mount", "--bind", "-o", "ro,nosuid,nodev,noexec", in.BootID, in.Rootfs + BootIDPath},
		}}}
	default:
		spec.Mounts = append(spec.Mounts, hostFileMount(BootIDPath, in.BootID))
		spec.Linux.ReadonlyPaths = append(spec.Linux.ReadonlyPaths, BootIDPath)
	}
}

// CABundlePath is where a container finds the certificate authorities it
// trusts (Debian's system store), and where StartRequest.CABundle goes.
const CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
