package container

import (
	"math/bits"
	"syscall"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// allowedSyscalls is every system call a container may make without
// conditions, by what it is for. Anything else fails, with ENOSYS unless
// refusedSyscalls or a rule of defaultSeccomp says otherwise. The list is
// our own, written from the x86_64 and x86 system call tables; where it
// differs from Docker's default profile, the comment says why.
var allowedSyscalls = []string{
	// Files and descriptors.
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2",
	"pwritev2", "lseek", "open", "openat", "openat2", "creat", "close", "close_range", "dup",
	"dup2", "dup3", "fcntl", "flock", "fsync", "fdatasync", "syncfs", "sync", "sync_file_range",
	"fallocate", "fadvise64", "readahead", "truncate", "ftruncate", "sendfile", "splice", "tee",
	"vmsplice", "copy_file_range", "cachestat",
	"stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs", "access", "faccessat",
	"faccessat2", "readlink", "readlinkat", "getdents", "getdents64", "getcwd", "chdir", "fchdir",
	"mkdir", "mkdirat", "rmdir", "rename", "renameat", "renameat2", "link", "linkat", "symlink",
	"symlinkat", "unlink", "unlinkat", "mknod", "mknodat", "chmod", "fchmod", "fchmodat",
	"fchmodat2", "chown", "fchown", "lchown", "fchownat", "umask", "utime", "utimes", "utimensat",
	"futimesat", "setxattr", "lsetxattr", "fsetxattr", "getxattr", "lgetxattr", "fgetxattr",
	"listxattr", "llistxattr", "flistxattr", "removexattr", "lremovexattr", "fremovexattr",
	"inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
	"poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl",
	"epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "signalfd", "signalfd4",
	"timerfd_create", "timerfd_settime", "timerfd_gettime", "pipe", "pipe2", "memfd_create",
	"io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents",
	// chroot needs CAP_SYS_CHROOT, which containers keep (as in Docker):
	// build tools chroot into trees they made.
	"chroot",
	// Memory.
	"brk", "mmap", "munmap", "mremap", "mprotect", "msync", "mincore", "madvise", "mlock",
	"mlock2", "munlock", "mlockall", "munlockall", "remap_file_pages", "pkey_alloc", "pkey_free",
	"pkey_mprotect", "membarrier", "mbind", "get_mempolicy", "set_mempolicy",
	"set_mempolicy_home_node", "migrate_pages", "move_pages", "map_shadow_stack",
	"process_madvise", "process_mrelease",
	// Processes and threads. ptrace and the calls that read or change
	// another process are allowed as in Docker: the pid namespace leaves
	// only the container's own processes, and the agent is not dumpable.
	"fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid", "kill",
	"tkill", "tgkill", "getpid", "getppid", "gettid", "getpgid", "setpgid", "getpgrp", "getsid",
	"setsid", "set_tid_address", "set_robust_list", "get_robust_list", "futex", "futex_waitv",
	"futex_wake", "futex_wait", "futex_requeue", "rseq", "arch_prctl", "set_thread_area",
	"get_thread_area", "prctl", "seccomp", "ptrace", "process_vm_readv", "process_vm_writev",
	"kcmp", "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "capget", "capset", "getrlimit",
	"setrlimit", "prlimit64", "getrusage", "times", "getpriority", "setpriority", "sched_yield",
	"sched_setparam", "sched_getparam", "sched_setscheduler", "sched_getscheduler",
	"sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval",
	"sched_setaffinity", "sched_getaffinity", "sched_setattr", "sched_getattr", "getcpu",
	"ioprio_get", "ioprio_set", "landlock_create_ruleset", "landlock_add_rule",
	"landlock_restrict_self", "restart_syscall",
	"getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups", "setuid",
	"setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid", "setgroups",
	// Signals and time. Setting a clock is refused; adjtimex stays, as in
	// Docker: with modes 0 it only reads (ntp_gettime), and any change
	// needs CAP_SYS_TIME, which no container has.
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait",
	"rt_sigqueueinfo", "rt_tgsigqueueinfo", "rt_sigsuspend", "sigaltstack", "pause", "alarm",
	"getitimer", "setitimer", "nanosleep", "clock_nanosleep", "clock_gettime", "clock_getres",
	"gettimeofday", "time", "timer_create", "timer_settime", "timer_gettime", "timer_getoverrun",
	"timer_delete", "adjtimex",
	// The container has its own UTS and IPC namespaces.
	"uname", "sysinfo", "getrandom", "sethostname", "setdomainname",
	"shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl", "msgget",
	"msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive",
	"mq_notify", "mq_getsetattr",
	// Sockets, in the container's network namespace (socket: see socketRules).
	"socketpair", "bind", "listen", "accept", "accept4", "connect", "getsockname", "getpeername",
	"sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "shutdown", "setsockopt",
	"getsockopt",
	// x86 (32-bit) only: the 64-bit file offsets, 32-bit ids, multiplexed
	// socket and IPC calls and 64-bit time calls a 32-bit glibc makes.
	// socketcall passes its arguments in memory, so a 32-bit program can
	// still make an AF_VSOCK socket through it (see socketRules).
	"_llseek", "_newselect", "chown32", "fchown32", "lchown32", "fadvise64_64", "fcntl64",
	"fstat64", "fstatat64", "fstatfs64", "lstat64", "stat64", "statfs64", "ftruncate64",
	"truncate64", "getegid32", "geteuid32", "getgid32", "getuid32", "getgroups32", "getresgid32",
	"getresuid32", "setfsgid32", "setfsuid32", "setgid32", "setgroups32", "setregid32",
	"setresgid32", "setresuid32", "setreuid32", "setuid32", "mmap2", "sendfile64", "sigreturn",
	"ugetrlimit", "waitpid", "socketcall", "ipc", "clock_gettime64", "clock_getres_time64",
	"clock_nanosleep_time64", "futex_time64", "io_pgetevents_time64", "mq_timedreceive_time64",
	"mq_timedsend_time64", "ppoll_time64", "pselect6_time64", "recvmmsg_time64",
	"rt_sigtimedwait_time64", "sched_rr_get_interval_time64", "semtimedop_time64",
	"timer_gettime64", "timer_settime64", "timerfd_gettime64", "timerfd_settime64",
	"utimensat_time64",
}

// refusedSyscalls fail with EPERM, the answer an unprivileged process
// gets, so that tools report "permission denied" rather than a missing
// call. They reach the kernel's global state, which no namespace
// separates from the host and other sandboxes (mounts, modules, kexec,
// clocks, keyrings, swap, reboot, accounting, the kernel log, quotas,
// port I/O), make or join namespaces (unshare, setns; clone: see
// cloneRules), or are common escape primitives: bpf, perf_event_open and
// userfaultfd are where kernel exploits start; io_uring's operations
// never pass through seccomp; open_by_handle_at opens any file of a
// filesystem by handle (name_to_handle_at makes the handles).
var refusedSyscalls = []string{
	"mount", "umount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig",
	"fsmount", "fspick", "mount_setattr", "unshare", "setns", "init_module", "finit_module",
	"delete_module", "kexec_load", "kexec_file_load", "settimeofday", "stime", "clock_settime",
	"clock_settime64", "clock_adjtime", "clock_adjtime64", "add_key", "keyctl", "request_key",
	"swapon", "swapoff", "reboot", "acct", "syslog", "vhangup", "quotactl", "quotactl_fd", "iopl",
	"ioperm", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
	"io_uring_register", "name_to_handle_at", "open_by_handle_at",
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

// defaultSeccomp is the profile of every runc and crun container: an
// allow-list. A call not on it fails with ENOSYS, as on a kernel too old to
// have it, not EPERM: programs probe new calls (clone3, faccessat2,
// fchmodat2, statx, ...) and fall back on ENOSYS, while EPERM reads as a
// hard failure. Calls the kernel gained after this list (listmount,
// statmount, open_tree_attr, mseal, ... on 6.18) and after the libseccomp
// here (2.5.4 knows calls up to futex_requeue) fail that way too, which is
// the point of an allow-list: a new kernel brings no new reachable code.
//
// clone3 passes its flags in memory, where seccomp cannot read them, so it
// fails whole, with ENOSYS: glibc (2.34 and later) then falls back to clone
// for threads and posix_spawn, whose flags the filter can check.
//
// Measured with runc 1.1.5 and crun 1.8.1 (both on libseccomp 2.5.4):
// several rules on one call are ORed, and so are two conditions on one
// argument within a rule (not ANDed, as the spec reads), so no rule here
// has two conditions on one argument (conditions on different arguments
// are ANDed: socketRules). Where rules on one call overlap with different
// actions, libseccomp decides by its internal order (an EPERM rule for
// ioctl type 0x94 beat an exact-match allow for FICLONE when listed first,
// and lost when listed second or when the allow was a masked comparison),
// so the rules on each call are disjoint: no argument value matches two
// rules with different actions (TestSeccompRulesDisjoint).
//
// runsc loads this profile only with --oci-seccomp, which rung does not
// pass: the gVisor build here (2022) ignores errnoRet, so clone3 would
// fail with EPERM and glibc would not fall back. gVisor's own kernel
// answers these calls instead, out of the host kernel's reach, and has no
// clone3 (see TestContainment).
func defaultSeccomp() *specs.LinuxSeccomp {
	eperm, enosys := uint(syscall.EPERM), uint(syscall.ENOSYS)
	rules := []specs.LinuxSyscall{
		{Names: allowedSyscalls, Action: specs.ActAllow},
		{Names: refusedSyscalls, Action: specs.ActErrno, ErrnoRet: &eperm},
		// The default says the same; written out because glibc's
		// fallback needs exactly ENOSYS, whatever the default becomes.
		{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys},
	}
	rules = append(rules, cloneRules(eperm)...)
	rules = append(rules, ioctlRules(eperm)...)
	rules = append(rules, socketRules(eperm)...)
	rules = append(rules, personalityRules()...)
	return &specs.LinuxSeccomp{
		DefaultAction:   specs.ActErrno,
		DefaultErrnoRet: &enosys,
		Architectures:   []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32},
		Syscalls:        rules,
	}
}

// argSet is the values of one system call argument whose bits in mask
// equal value: one masked-equal comparison.
type argSet struct{ mask, value uint64 }

// except returns disjoint sets whose union is s without the values in
// excluded, varying only the bits in free: the branches that a binary
// trie of excluded, built over free from its highest bit down, leaves
// empty. Every value in excluded must be in s. Seccomp compares with
// equality; this is how a rule says "not equal" on part of an argument,
// as len(free bits) comparisons at most per excluded value.
func except(s argSet, free uint64, excluded []uint64) []argSet {
	if len(excluded) == 0 {
		return []argSet{s}
	}
	if free == 0 {
		return nil // s is one value, and it is excluded
	}
	bit := uint64(1) << (63 - bits.LeadingZeros64(free))
	var zero, one []uint64
	for _, v := range excluded {
		if v&bit == 0 {
			zero = append(zero, v)
		} else {
			one = append(one, v)
		}
	}
	free &^= bit
	return append(except(argSet{s.mask | bit, s.value}, free, zero),
		except(argSet{s.mask | bit, s.value | bit}, free, one)...)
}

// argRules makes one rule per set, on argument index of name.
func argRules(name string, index uint, sets []argSet, action specs.LinuxSeccompAction, errno *uint) []specs.LinuxSyscall {
	rules := make([]specs.LinuxSyscall, 0, len(sets))
	for _, s := range sets {
		rules = append(rules, specs.LinuxSyscall{
			Names: []string{name}, Action: action, ErrnoRet: errno,
			Args: []specs.LinuxSeccompArg{{Index: index, Value: s.mask, ValueTwo: s.value, Op: specs.OpMaskedEqual}},
		})
	}
	return rules
}

// cloneRules allow clone when none of namespaceCloneFlags is set (one
// comparison: the flags under their mask equal 0) and refuse it with
// EPERM, one rule per flag, when any is; the two never overlap. clone's
// flags are its first argument on x86_64, x86 and x32 alike, and the
// kernel reads only their lower 32 bits, as the masks do.
func cloneRules(eperm uint) []specs.LinuxSyscall {
	var mask uint64
	var refused []argSet
	for _, f := range namespaceCloneFlags {
		mask |= f
		refused = append(refused, argSet{f, f})
	}
	rules := argRules("clone", 0, []argSet{{mask, 0}}, specs.ActAllow, nil)
	return append(rules, argRules("clone", 0, refused, specs.ActErrno, &eperm)...)
}

// btrfsIoctlType is the type byte (bits 8-15 of the command) of btrfs's
// ioctls. The storage pool is btrfs, and several of them need no
// privilege: creating a subvolume or a snapshot in /workspace escaped the
// sandbox's disk quota (a new subvolume gets a qgroup of its own, without
// a limit) and left subvolumes the daemon could not delete. Quota, send,
// receive, balance, scrub, device and resize commands are no business of
// a sandbox either, so the whole type is refused.
const btrfsIoctlType = 0x94

// ioctlRules allow every ioctl whose type is not btrfs's (eight sets:
// "type differs from 0x94 first at bit i"), and the three generic
// ioctls that share the type: FICLONE, FICLONERANGE (cp --reflink) and
// FIDEDUPERANGE, each only with its exact command. Every other command
// of the type fails with EPERM, except those with the three's numbers but
// another size or direction, which the kernel does not know and which
// fail with the default ENOSYS. The kernel reads the command as 32 bits;
// so do the masks, so a command with garbage in the upper half of the
// register is judged by its lower half, as the kernel will run it.
//
// Left allowed, on purpose: TIOCSTI (push input into a terminal) reaches
// only terminals of the container's own devpts instance: the agent gives
// commands pipes, not a terminal, and nothing outside the sandbox reads a
// terminal inside it. fscrypt's key ioctls (FS_IOC_ADD_ENCRYPTION_KEY,
// ...) would add keys to a filesystem-wide keyring, but btrfs, the overlay
// and tmpfs answer them with ENOTTY (measured). Loop and device-mapper
// ioctls need device nodes that containers cannot open or make.
func ioctlRules(eperm uint) []specs.LinuxSyscall {
	const typeBits, nrBits = 0xff00, 0x00ff
	generic := []uint64{unix.FICLONE, unix.FICLONERANGE, unix.FIDEDUPERANGE}
	rules := argRules("ioctl", 1, except(argSet{}, typeBits, []uint64{btrfsIoctlType << 8}), specs.ActAllow, nil)
	var exact []argSet
	var genericNrs []uint64
	for _, cmd := range generic {
		exact = append(exact, argSet{0xffffffff, cmd})
		genericNrs = append(genericNrs, btrfsIoctlType<<8|cmd&nrBits)
	}
	rules = append(rules, argRules("ioctl", 1, exact, specs.ActAllow, nil)...)
	btrfs := except(argSet{typeBits, btrfsIoctlType << 8}, nrBits, genericNrs)
	return append(rules, argRules("ioctl", 1, btrfs, specs.ActErrno, &eperm)...)
}

// socketRules refuse AF_VSOCK sockets with EPERM: vsock is no part of a
// sandbox's network (loopback only, for now), and on a virtual machine
// (this host is one) it leads to the hypervisor's host. Other families
// are allowed when the family's low byte is neither AF_VSOCK's nor
// AF_NETLINK's (sets of one condition); a family with such a low byte and
// other bits set is none the kernel knows and fails with the default
// ENOSYS. The kernel reads the family as a 32-bit int, as the masks do.
// 32-bit programs can still reach vsock through socketcall, whose
// arguments seccomp cannot read (see allowedSyscalls).
//
// AF_NETLINK is allowed (ip, ss and Node read routes and addresses
// through it) except for NETLINK_AUDIT, which fails with EPROTONOSUPPORT,
// as on a kernel built without audit: sudo and PAM then skip auditing
// quietly, where the EPERM a container without CAP_AUDIT_WRITE gets made
// sudo print "unable to send audit message" on every call. Granting the
// capability instead, as Docker does, would let every sandbox write to
// the host's audit log. These rules have two conditions, on the family
// and on the protocol: on different arguments libseccomp ANDs them
// (measured, runc and crun); the protocol's low byte decides, as the
// family's does.
func socketRules(eperm uint) []specs.LinuxSyscall {
	rules := argRules("socket", 0, except(argSet{}, 0xff, []uint64{unix.AF_VSOCK, unix.AF_NETLINK}), specs.ActAllow, nil)
	rules = append(rules, argRules("socket", 0, []argSet{{0xffffffff, unix.AF_VSOCK}}, specs.ActErrno, &eperm)...)
	netlink := specs.LinuxSeccompArg{Index: 0, Value: 0xffffffff, ValueTwo: unix.AF_NETLINK, Op: specs.OpMaskedEqual}
	noproto := uint(syscall.EPROTONOSUPPORT)
	for _, r := range argRules("socket", 2, except(argSet{}, 0xff, []uint64{unix.NETLINK_AUDIT}), specs.ActAllow, nil) {
		r.Args = append([]specs.LinuxSeccompArg{netlink}, r.Args...)
		rules = append(rules, r)
	}
	for _, r := range argRules("socket", 2, []argSet{{0xffffffff, unix.NETLINK_AUDIT}}, specs.ActErrno, &noproto) {
		r.Args = append([]specs.LinuxSeccompArg{netlink}, r.Args...)
		rules = append(rules, r)
	}
	return rules
}

// Personalities (sys/personality.h) that personalityRules allow.
const (
	perLinux32       = 0x0008
	uname26          = 0x0020000
	addrNoRandomize  = 0x0040000
	personalityQuery = 0xffffffff
)

// personalityRules allow the personalities programs set: Linux (64- and
// 32-bit), a 2.6 uname for old build scripts, ASLR off for the caller's
// own children (setarch -R; gdb does it by default), and the query. Other
// flags (READ_IMPLIES_EXEC, MMAP_PAGE_ZERO, ...) only weaken the caller's
// own defences against exploits; they fail with the default ENOSYS.
// Docker's profile allows a similar set.
func personalityRules() []specs.LinuxSyscall {
	var sets []argSet
	for _, p := range []uint64{0, perLinux32, uname26, uname26 | perLinux32, addrNoRandomize, addrNoRandomize | perLinux32, personalityQuery} {
		sets = append(sets, argSet{0xffffffff, p})
	}
	return argRules("personality", 0, sets, specs.ActAllow, nil)
}
