package container

import (
	"encoding/binary"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// runBPF runs prog, a classic BPF seccomp program, on one call the way
// the kernel does, for the few instructions compileSeccomp emits; any
// other instruction, a jump out of the program or running off its end
// fails the test.
func runBPF(t *testing.T, prog []sockFilter, arch, nr uint32, args callArgs) uint32 {
	var data [64]byte
	binary.LittleEndian.PutUint32(data[seccompNr:], nr)
	binary.LittleEndian.PutUint32(data[seccompArch:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[seccompArgs+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.code {
		case bpfLdWAbs:
			if in.k > 60 || in.k%4 != 0 {
				t.Fatalf("pc %d: load at offset %d", pc, in.k)
			}
			acc = binary.LittleEndian.Uint32(data[in.k:])
		case bpfAndK:
			acc &= in.k
		case bpfJeqK, bpfJgeK:
			cond := acc == in.k
			if in.code == bpfJgeK {
				cond = acc >= in.k
			}
			if cond {
				pc += int(in.jt)
			} else {
				pc += int(in.jf)
			}
		case bpfJa:
			pc += int(in.k)
		case bpfRetK:
			return in.k
		default:
			t.Fatalf("pc %d: opcode %#x", pc, in.code)
		}
	}
	t.Fatalf("arch %#x nr %d: ran off the end of the program", arch, nr)
	return 0
}

// interestingArgs are argument values that exercise every rule on call:
// each rule's matching value, with each bit of its mask flipped, with
// bits outside the mask and the upper half set, plus for ioctl every type
// and number of the lower 16 bits of the command.
func interestingArgs(p *specs.LinuxSeccomp, call string) []callArgs {
	var out []callArgs
	seen := map[callArgs]bool{}
	add := func(a callArgs) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	add(callArgs{})
	var base []callArgs
	for _, r := range p.Syscalls {
		if r.Names[0] != call || len(r.Args) == 0 {
			continue
		}
		var a callArgs
		for _, c := range r.Args {
			a[c.Index] = c.ValueTwo
		}
		base = append(base, a)
		for _, c := range r.Args {
			for bit := range 32 {
				if c.Value&(1<<bit) != 0 {
					b := a
					b[c.Index] ^= 1 << bit
					base = append(base, b)
				}
			}
		}
	}
	for _, a := range base {
		add(a)
		for i := range a {
			b := a
			b[i] |= 0xdead_beef_0000_0000 // the upper half the kernel ignores
			add(b)
			b = a
			b[i] |= 0x0100_0000 // outside the masks of ioctl's and socket's rules
			add(b)
		}
	}
	if call == "ioctl" {
		for cmd := range uint64(1 << 16) {
			add(callArgs{0, cmd})
			add(callArgs{0, cmd | 0x4008_0000}) // an _IOW size and direction
		}
	}
	return out
}

// TestSeccompBPF checks that the compiled program decides every call of
// the x86_64 and x86 tables as the profile does (decide, the model
// TestSeccompRulesDisjoint also uses), for every argument value the rules
// look at; that x32 calls get ENOSYS and an unknown architecture a kill;
// and that the kernel takes the program (it checks every jump).
func TestSeccompBPF(t *testing.T) {
	p := defaultSeccomp()
	prog, err := compileSeccomp(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d instructions", len(prog))
	for _, tab := range []struct {
		arch  uint32
		table map[string]uint32
	}{{auditArchX8664, sysnumX8664}, {auditArchI386, sysnumX86}} {
		for name, nr := range tab.table {
			for _, args := range interestingArgs(p, name) {
				want := decide(t, p, name, args)
				if len(want) != 1 {
					t.Fatalf("%s%v: the profile is ambiguous: %v", name, args, want)
				}
				ret, err := seccompRet(want[0].action, &want[0].errno)
				if err != nil {
					t.Fatal(err)
				}
				if got := runBPF(t, prog, tab.arch, nr, args); got != ret {
					t.Fatalf("arch %#x %s (%d) args %#x: program returns %#x, profile says %s (%#x)", tab.arch, name, nr, args, got, want[0], ret)
				}
			}
		}
		// Numbers no table names, up to past the newest call.
		for nr := uint32(0); nr < 1024; nr++ {
			named := false
			for _, n := range tab.table {
				named = named || n == nr
			}
			if !named && runBPF(t, prog, tab.arch, nr, callArgs{}) != retErrno|enosys {
				t.Errorf("arch %#x unnamed call %d not ENOSYS", tab.arch, nr)
			}
		}
	}
	if got := runBPF(t, prog, auditArchX8664, x32SyscallBit|sysnumX8664["read"], callArgs{}); got != retErrno|enosys {
		t.Errorf("x32 read: %#x, want ENOSYS", got)
	}
	if got := runBPF(t, prog, 0xc00000b7 /* aarch64 */, 63, callArgs{}); got != retKillProcess {
		t.Errorf("an unknown architecture: %#x, want a kill", got)
	}
	// The kernel's verdict on the program: load it into a child that
	// exits at once (a filter cannot be removed once installed).
	checkLoads(t, prog)
}

// checkLoads installs prog in a short-lived child (this test binary run
// with RUNG_SECCOMP_LOAD_CHECK) to let the kernel's checker judge it.
func checkLoads(t *testing.T, prog []sockFilter) {
	t.Helper()
	if err := loadInChild(prog); err != nil {
		t.Errorf("the kernel refuses the program: %v", err)
	}
}

// TestSeccompBPFRefusesUnsupported checks that the compiler fails on what
// it does not model rather than compiling something else.
func TestSeccompBPFRefusesUnsupported(t *testing.T) {
	enosysRet := uint(unix.ENOSYS)
	for name, p := range map[string]*specs.LinuxSeccomp{
		"operator": {DefaultAction: specs.ActErrno, DefaultErrnoRet: &enosysRet, Architectures: []specs.Arch{specs.ArchX86_64},
			Syscalls: []specs.LinuxSyscall{{Names: []string{"ioctl"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 1, Value: 5, Op: specs.OpGreaterThan}}}}},
		"action": {DefaultAction: specs.ActTrace, Architectures: []specs.Arch{specs.ArchX86_64}},
		"arch":   {DefaultAction: specs.ActAllow, Architectures: []specs.Arch{specs.ArchAARCH64}},
	} {
		if _, err := compileSeccomp(p); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}
