package container

import (
	"syscall"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// deniedSyscalls fail with EPERM inside every container: they reach the
// kernel's global state (mounts, modules, clocks, keyrings, reboot), make
// or join namespaces, or are common escape primitives. io_uring is here as
// in Docker: the operations a ring runs never pass through seccomp, and it
// is a frequent source of kernel privilege escalations.
// ptrace stays allowed (as in Docker on kernels since 4.8, where a tracer
// can no longer step around seccomp): the pid namespace leaves only the
// container's own processes to trace. The rest of the kernel ABI stays
// available, so compilers, package managers and test runners work unchanged.
var deniedSyscalls = []string{
	"acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module", "delete_module",
	"finit_module", "fsconfig", "fsmount", "fsopen", "fspick", "get_kernel_syms", "init_module",
	"io_uring_enter", "io_uring_register", "io_uring_setup",
	"ioperm", "iopl", "kexec_file_load", "kexec_load", "keyctl", "lookup_dcookie", "mount",
	"mount_setattr", "move_mount", "name_to_handle_at", "nfsservctl", "open_by_handle_at",
	"open_tree", "perf_event_open", "pivot_root",
	"query_module", "quotactl", "reboot", "request_key", "setns", "settimeofday",
	"swapoff", "swapon", "syslog", "umount", "umount2", "unshare", "uselib", "userfaultfd",
	"vhangup", "_sysctl",
}

// namespaceCloneFlags are the clone flags that make a new namespace. A new
// user namespace alone would hand the caller every capability inside it,
// CAP_SYS_ADMIN included, and with it the kernel code that only root could
// reach. CLONE_NEWTIME is not here: it shares its bit with clone's exit
// signal, so only unshare and clone3 take it, and both are refused whole.
var namespaceCloneFlags = []uint64{
	syscall.CLONE_NEWNS, syscall.CLONE_NEWUTS, syscall.CLONE_NEWIPC, syscall.CLONE_NEWUSER,
	syscall.CLONE_NEWPID, syscall.CLONE_NEWNET, syscall.CLONE_NEWCGROUP,
}

// defaultSeccomp is the profile of every container: allow by default,
// refuse deniedSyscalls, clone with a namespace flag, and clone3.
//
// clone3 passes its flags in memory, where seccomp cannot read them, so it
// fails whole, with ENOSYS rather than EPERM: glibc (2.34 and later) then
// falls back to clone for threads and posix_spawn, whose flags the filter
// can check. Docker's default profile does the same.
//
// runsc loads this profile only with --oci-seccomp, which rung does not
// pass: the gVisor build here (2022) ignores errnoRet, so clone3 would
// fail with EPERM and glibc would not fall back. gVisor's own kernel
// answers these calls instead, out of the host kernel's reach, and has no
// clone3 (see TestContainment).
func defaultSeccomp() *specs.LinuxSeccomp {
	eperm, enosys := uint(syscall.EPERM), uint(syscall.ENOSYS)
	rules := []specs.LinuxSyscall{
		{Names: deniedSyscalls, Action: specs.ActErrno, ErrnoRet: &eperm},
		{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys},
	}
	// One rule per flag: a deny-list needs "any of these bits set", which
	// one masked comparison cannot say (it tests equality). Conditions in
	// one rule are meant to AND, but runc splits several on the same
	// argument into rules of their own; separate rules OR everywhere.
	// clone's flags are its first argument on x86_64, x86 and x32 alike.
	for _, flag := range namespaceCloneFlags {
		rules = append(rules, specs.LinuxSyscall{
			Names: []string{"clone"}, Action: specs.ActErrno, ErrnoRet: &eperm,
			Args: []specs.LinuxSeccompArg{{Index: 0, Value: flag, ValueTwo: flag, Op: specs.OpMaskedEqual}},
		})
	}
	return &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Architectures: []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32},
		Syscalls:      rules,
	}
}
