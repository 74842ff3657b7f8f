package container

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// outcome is what the profile does with one call: its action and, for
// SCMP_ACT_ERRNO, the errno.
type outcome struct {
	action specs.LinuxSeccompAction
	errno  uint
}

func (o outcome) String() string {
	if o.action == specs.ActErrno {
		return syscall.Errno(o.errno).Error()
	}
	return string(o.action)
}

// callArgs are a call's arguments as the profile's rules see them.
type callArgs [6]uint64

// argsOf places arg at the argument the rules on call look at (ioctl's
// command is its second), and proto at socket's protocol.
func argsOf(call string, arg, proto uint64) callArgs {
	var a callArgs
	if call == "ioctl" {
		a[1] = arg
	} else {
		a[0] = arg
	}
	a[2] = proto
	return a
}

// matches says whether rule r applies to a call of name with args. It
// knows the one operator the profile uses, and fails the test on any
// other; a rule's conditions must all hold (they are on different
// arguments: see defaultSeccomp).
func matches(t *testing.T, r specs.LinuxSyscall, name string, args callArgs) bool {
	found := false
	for _, n := range r.Names {
		found = found || n == name
	}
	if !found {
		return false
	}
	for _, a := range r.Args {
		if a.Op != specs.OpMaskedEqual {
			t.Fatalf("rule %+v: operator %s not modelled here", r, a.Op)
		}
		if args[a.Index]&a.Value != a.ValueTwo {
			return false
		}
	}
	return true
}

// decide returns every distinct outcome of the profile's rules that match
// the call, or the default action's when none does.
func decide(t *testing.T, p *specs.LinuxSeccomp, name string, args callArgs) []outcome {
	seen := map[outcome]bool{}
	var out []outcome
	for _, r := range p.Syscalls {
		if !matches(t, r, name, args) {
			continue
		}
		o := outcome{action: r.Action}
		if r.ErrnoRet != nil {
			o.errno = *r.ErrnoRet
		}
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		out = append(out, outcome{p.DefaultAction, *p.DefaultErrnoRet})
	}
	return out
}

// TestSeccompRulesDisjoint checks what the profile decides for the
// conditional calls, and that no argument value matches two rules with
// different outcomes: libseccomp resolves such overlaps by an internal
// order that changed with the order of the rules (see defaultSeccomp), so
// the profile must never depend on it.
func TestSeccompRulesDisjoint(t *testing.T) {
	p := defaultSeccomp()
	allow := outcome{action: specs.ActAllow}
	eperm := outcome{specs.ActErrno, uint(syscall.EPERM)}
	enosys := outcome{specs.ActErrno, uint(syscall.ENOSYS)}
	noproto := outcome{specs.ActErrno, uint(syscall.EPROTONOSUPPORT)}
	const upper = 0xffffffff00000000 // ignored by the kernel for all four
	cases := []struct {
		name string
		call string
		arg  uint64
		want outcome
	}{
		{"read", "read", 0, allow},
		{"mount", "mount", 0, eperm},
		{"keyctl", "keyctl", 0, eperm},
		{"fsopen", "fsopen", 0, eperm},
		{"clone3", "clone3", 0, enosys},
		{"a call newer than the list", "listmount", 0, enosys},
		{"modify_ldt, left off", "modify_ldt", 0, enosys},
		{"fork by clone", "clone", uint64(syscall.SIGCHLD), allow},
		{"thread by clone", "clone", syscall.CLONE_VM | syscall.CLONE_FS | syscall.CLONE_FILES | syscall.CLONE_SIGHAND | syscall.CLONE_THREAD | syscall.CLONE_SYSVSEM | syscall.CLONE_SETTLS | syscall.CLONE_PARENT_SETTID | syscall.CLONE_CHILD_CLEARTID, allow},
		{"clone with a pidfd", "clone", unix.CLONE_PIDFD | uint64(syscall.SIGCHLD), allow},
		{"clone of a user namespace", "clone", syscall.CLONE_NEWUSER | uint64(syscall.SIGCHLD), eperm},
		{"clone of every namespace", "clone", syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWCGROUP, eperm},
		{"TCGETS", "ioctl", unix.TCGETS, allow},
		{"TIOCSTI", "ioctl", unix.TIOCSTI, allow},
		{"FS_IOC_GETFLAGS", "ioctl", unix.FS_IOC_GETFLAGS, allow},
		{"FICLONE", "ioctl", unix.FICLONE, allow},
		{"FICLONE with upper bits", "ioctl", unix.FICLONE | upper, allow},
		{"FICLONERANGE", "ioctl", unix.FICLONERANGE, allow},
		{"FIDEDUPERANGE", "ioctl", unix.FIDEDUPERANGE, allow},
		{"FICLONE's number, no size", "ioctl", btrfsIoctlType<<8 | 9, enosys},
		{"BTRFS_IOC_SNAP_CREATE", "ioctl", 0x50009401, eperm},
		{"BTRFS_IOC_SUBVOL_CREATE", "ioctl", 0x5000940e, eperm},
		{"BTRFS_IOC_SUBVOL_CREATE with upper bits", "ioctl", 0x5000940e | upper, eperm},
		{"BTRFS_IOC_SNAP_DESTROY", "ioctl", 0x5000940f, eperm},
		{"BTRFS_IOC_QUOTA_CTL", "ioctl", 0xc0109428, eperm},
		{"BTRFS_IOC_QGROUP_LIMIT", "ioctl", 0x8030942b, eperm},
		{"BTRFS_IOC_SEND", "ioctl", 0x40489426, eperm},
		{"FS_IOC_GETFSLABEL", "ioctl", 0x81009431, eperm},
		{"AF_UNIX socket", "socket", unix.AF_UNIX, allow},
		{"AF_INET6 socket", "socket", unix.AF_INET6, allow},
		{"AF_NETLINK socket", "socket", unix.AF_NETLINK, allow},
		{"no such family, netlink's low byte", "socket", 0x100 | unix.AF_NETLINK, enosys},
		{"AF_VSOCK socket", "socket", unix.AF_VSOCK, eperm},
		{"AF_VSOCK socket with upper bits", "socket", unix.AF_VSOCK | upper, eperm},
		{"no such family", "socket", 0x100 | unix.AF_VSOCK, enosys},
		{"personality query", "personality", personalityQuery, allow},
		{"personality linux32", "personality", perLinux32, allow},
		{"personality without ASLR", "personality", addrNoRandomize, allow},
		{"personality READ_IMPLIES_EXEC", "personality", 0x0400000, enosys},
	}
	for _, tc := range cases {
		got := decide(t, p, tc.call, argsOf(tc.call, tc.arg, 0))
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: %s(%#x) = %v, want %v", tc.name, tc.call, tc.arg, got, tc.want)
		}
	}
	// socket's protocol matters to netlink only: its audit protocol is
	// refused as if the kernel had no audit (see socketRules).
	for _, tc := range []struct {
		name          string
		family, proto uint64
		want          outcome
	}{
		{"netlink route", unix.AF_NETLINK, unix.NETLINK_ROUTE, allow},
		{"netlink audit", unix.AF_NETLINK, unix.NETLINK_AUDIT, noproto},
		{"netlink audit with upper bits", unix.AF_NETLINK | upper, unix.NETLINK_AUDIT | upper, noproto},
		{"no such netlink protocol", unix.AF_NETLINK, 0x100 | unix.NETLINK_AUDIT, enosys},
		{"protocol 9 of another family", unix.AF_INET, unix.NETLINK_AUDIT, allow},
	} {
		got := decide(t, p, "socket", argsOf("socket", tc.family, tc.proto))
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: socket(%#x, _, %#x) = %v, want %v", tc.name, tc.family, tc.proto, got, tc.want)
		}
	}
	// Every value of the bits the rules look at, with the upper halves
	// the three exact ioctl commands carry: two outcomes for one value
	// would leave the answer to libseccomp's order.
	for _, call := range []string{"ioctl", "socket", "clone", "personality"} {
		highs := map[uint64]bool{0: true, upper: true}
		for _, r := range p.Syscalls {
			for _, a := range r.Args {
				if r.Names[0] == call {
					highs[a.ValueTwo&^0xffff] = true
				}
			}
		}
		// socket's protocol too, for netlink's rules: every low byte,
		// with and without other bits.
		protos := []uint64{0}
		if call == "socket" {
			protos = nil
			for b := range uint64(256) {
				protos = append(protos, b, b|0x100, b|upper)
			}
		}
		for high := range highs {
			for low := range uint64(1 << 16) {
				for _, proto := range protos {
					if call == "socket" && low&0xff != unix.AF_NETLINK && proto != 0 {
						continue // no rule of another family looks at the protocol
					}
					if got := decide(t, p, call, argsOf(call, high|low, proto)); len(got) > 1 {
						t.Fatalf("%s(%#x, protocol %#x) matches rules with outcomes %v", call, high|low, proto, got)
					}
				}
			}
		}
	}
}

// TestSeccompNames checks the profile's lists: every name is a system
// call of x86_64 or x86 (runc and crun skip a name libseccomp does not
// know without a word, so a typo would silently refuse a call), none is
// listed twice, and no call with conditional rules is also listed
// without conditions (which would overlap them).
func TestSeccompNames(t *testing.T) {
	known := systemCallNames(t)
	seen := map[string]string{}
	for list, names := range map[string][]string{"allowed": allowedSyscalls, "refused": refusedSyscalls} {
		for _, n := range names {
			if !known[n] {
				t.Errorf("%s list: %q is no x86_64 or x86 system call", list, n)
			}
			if other, ok := seen[n]; ok {
				t.Errorf("%q is in the %s list and the %s list", n, list, other)
			}
			seen[n] = list
		}
	}
	for _, r := range defaultSeccomp().Syscalls {
		if len(r.Args) > 0 {
			if list, ok := seen[r.Names[0]]; ok {
				t.Errorf("%s has conditional rules and is in the %s list", r.Names[0], list)
			}
		}
	}
}

// systemCallNames reads the x86_64 and x86 system call tables of the
// golang.org/x/sys module this package builds with (SYS_FCHMODAT2 is
// fchmodat2, SYS__LLSEEK is _llseek).
func systemCallNames(t *testing.T) map[string]bool {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/sys").Output()
	if err != nil {
		t.Fatalf("go list golang.org/x/sys: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	re := regexp.MustCompile(`(?m)^\s*SYS_(\w+)\s*=\s*\d+`)
	names := map[string]bool{}
	for _, f := range []string{"zsysnum_linux_amd64.go", "zsysnum_linux_386.go"} {
		b, err := os.ReadFile(filepath.Join(dir, "unix", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			names[strings.ToLower(m[1])] = true
		}
	}
	if !names["read"] || !names["_llseek"] || !names["fchmodat2"] {
		t.Fatalf("system call tables in %s: %d names, read, _llseek or fchmodat2 missing", dir, len(names))
	}
	return names
}

func TestExceptCover(t *testing.T) {
	for _, tc := range []struct {
		excluded []uint64
		want     int // sets
	}{
		{nil, 1},
		{[]uint64{0x28}, 8},
		{[]uint64{0x09, 0x0d, 0x36}, 13},
		{[]uint64{0, 1}, 7},
	} {
		sets := except(argSet{}, 0xff, tc.excluded)
		if len(sets) != tc.want {
			t.Errorf("except(%#x): %d sets, want %d", tc.excluded, len(sets), tc.want)
		}
		for v := range uint64(256) {
			n := 0
			for _, s := range sets {
				if v&s.mask == s.value {
					n++
				}
			}
			want := 1
			for _, e := range tc.excluded {
				if v == e {
					want = 0
				}
			}
			if n != want {
				t.Errorf("except(%#x): %#x is in %d sets, want %d", tc.excluded, v, n, want)
			}
		}
	}
}
