package container

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// The seccomp profile compiled here, once per process, instead of by
// libseccomp in every container start. crun 1.8.1 spends 25-35 ms of each
// `run` turning the allow-list into BPF (measured side by side: 70.7 ms
// p50 with the profile against 41.4 ms without one, and 42.3 ms with the
// old deny-list); it takes a ready program in the run.oci.seccomp_bpf_data
// annotation instead (see [Runtime.SeccompBPF]). runc has no such door and
// keeps compiling the profile itself.
//
// The program decides exactly what the profile says, for the profile's own
// vocabulary: unconditional rules and rules whose conditions are masked
// comparisons (SCMP_CMP_MASKED_EQ), ANDed within a rule, with rules on one
// call disjoint (defaultSeccomp guarantees it: TestSeccompRulesDisjoint).
// TestSeccompBPF runs the program in an emulator against the profile's
// decision for every call of both tables and the argument values the rules
// look at; the containment tests run it in real containers. Layout:
//
//	load arch; x86_64 -> A, x86 -> B, anything else: kill the process
//	A: load nr; x32 calls (bit 30): ENOSYS; then one check per call
//	B: load nr; one check per call
//	each check: nr == N ? (unconditional: return the action;
//	            conditional: each rule's conditions, then its action; the
//	            default when no rule matched) : next check
//	end of each list: the default action
//
// x32 (x86_64's ILP32 ABI) is refused whole, as if the kernel lacked it:
// this one does (CONFIG_X86_X32_ABI unset), most distributions' do too,
// and no image rung runs is built for it. libseccomp would apply the
// x86_64 list to it.

// Classic BPF opcodes (linux/bpf_common.h).
const (
	bpfLdWAbs = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfAndK   = 0x54 // BPF_ALU | BPF_AND | BPF_K
	bpfJeqK   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJgeK   = 0x35 // BPF_JMP | BPF_JGE | BPF_K
	bpfJa     = 0x05 // BPF_JMP | BPF_JA
	bpfRetK   = 0x06 // BPF_RET | BPF_K
)

// seccomp_data offsets and values (linux/seccomp.h, linux/audit.h).
const (
	seccompNr          = 0
	seccompArch        = 4
	seccompArgs        = 16
	auditArchX8664     = 0xc000003e
	auditArchI386      = 0x40000003
	x32SyscallBit      = 0x40000000
	retKillProcess     = 0x80000000
	retKillThread      = 0x00000000
	retTrap            = 0x00030000
	retErrno           = 0x00050000
	retLog             = 0x7ffc0000
	retAllow           = 0x7fff0000
	bpfMaxInstructions = 4096 // BPF_MAXINSNS
)

// sockFilter is struct sock_filter.
type sockFilter struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

// seccompRet is the return value for a profile action.
func seccompRet(action specs.LinuxSeccompAction, errno *uint) (uint32, error) {
	switch action {
	case specs.ActAllow:
		return retAllow, nil
	case specs.ActErrno:
		e := uint32(1) // EPERM, the runtimes' default for an errno rule without one
		if errno != nil {
			e = uint32(*errno)
		}
		if e > 0xffff {
			return 0, fmt.Errorf("errno %d out of range", e)
		}
		return retErrno | e, nil
	case specs.ActKillProcess:
		return retKillProcess, nil
	case specs.ActKill, specs.ActKillThread:
		return retKillThread, nil
	case specs.ActTrap:
		return retTrap, nil
	case specs.ActLog:
		return retLog, nil
	}
	return 0, fmt.Errorf("seccomp action %s not supported", action)
}

// compiledRule is one rule of one call: its conditions (all must hold)
// and what it returns.
type compiledRule struct {
	conds []specs.LinuxSeccompArg
	ret   uint32
}

// compileSeccomp turns p into a seccomp BPF program for x86_64 and x86.
func compileSeccomp(p *specs.LinuxSeccomp) ([]sockFilter, error) {
	def, err := seccompRet(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		return nil, err
	}
	arches := map[specs.Arch]bool{}
	for _, a := range p.Architectures {
		arches[a] = true
	}
	if !arches[specs.ArchX86_64] {
		return nil, fmt.Errorf("seccomp profile without x86_64")
	}
	x64, err := dispatch(p, sysnumX8664, def)
	if err != nil {
		return nil, err
	}
	var x86 []sockFilter
	if arches[specs.ArchX86] {
		if x86, err = dispatch(p, sysnumX86, def); err != nil {
			return nil, err
		}
	}
	prog := []sockFilter{
		{code: bpfLdWAbs, k: seccompArch},
		{code: bpfJeqK, jt: 0, jf: 1, k: auditArchX8664},
		{code: bpfJa, k: 3}, // to the x86_64 list (a jump lands k past the next instruction)
		{code: bpfJeqK, jt: 1, jf: 0, k: auditArchI386},
		{code: bpfRetK, k: retKillProcess},     // an architecture the profile does not name
		{code: bpfJa, k: uint32(3 + len(x64))}, // to the x86 list
		// The x86_64 list: x32 calls first.
		{code: bpfLdWAbs, k: seccompNr},
		{code: bpfJgeK, jt: 0, jf: 1, k: x32SyscallBit},
		{code: bpfRetK, k: retErrno | uint32(enosys)},
	}
	prog = append(prog, x64...)
	if x86 == nil {
		x86 = []sockFilter{{code: bpfRetK, k: retKillProcess}}
	} else {
		x86 = append([]sockFilter{{code: bpfLdWAbs, k: seccompNr}}, x86...)
	}
	prog = append(prog, x86...)
	if len(prog) > bpfMaxInstructions {
		return nil, fmt.Errorf("seccomp program of %d instructions, more than the kernel takes", len(prog))
	}
	return prog, nil
}

// enosys is ENOSYS on Linux.
const enosys = 38

// dispatch is one architecture's list of checks: nr (in A) against each
// call of table the profile names, ending with the default action.
func dispatch(p *specs.LinuxSeccomp, table map[string]uint32, def uint32) ([]sockFilter, error) {
	rules := map[uint32][]compiledRule{}
	for _, r := range p.Syscalls {
		ret, err := seccompRet(r.Action, r.ErrnoRet)
		if err != nil {
			return nil, err
		}
		for _, a := range r.Args {
			if a.Op != specs.OpMaskedEqual {
				return nil, fmt.Errorf("seccomp rule on %v: operator %s not supported", r.Names, a.Op)
			}
			if a.Index > 5 {
				return nil, fmt.Errorf("seccomp rule on %v: argument %d", r.Names, a.Index)
			}
		}
		for _, name := range r.Names {
			// A name this architecture does not have is skipped, as
			// libseccomp does (x86's _llseek on x86_64).
			if nr, ok := table[name]; ok && ret != def || ok && len(r.Args) > 0 {
				rules[nr] = append(rules[nr], compiledRule{conds: r.Args, ret: ret})
			}
		}
	}
	nrs := make([]uint32, 0, len(rules))
	for nr := range rules {
		nrs = append(nrs, nr)
	}
	slices.Sort(nrs)
	var out []sockFilter
	for _, nr := range nrs {
		block, err := callBlock(rules[nr], def)
		if err != nil {
			return nil, fmt.Errorf("system call %d: %w", nr, err)
		}
		if len(block) == 1 {
			out = append(out, sockFilter{code: bpfJeqK, jt: 0, jf: 1, k: nr}, block[0])
			continue
		}
		// A block longer than a conditional jump reaches: skip it with
		// an unconditional one.
		out = append(out, sockFilter{code: bpfJeqK, jt: 1, jf: 0, k: nr}, sockFilter{code: bpfJa, k: uint32(len(block))})
		out = append(out, block...)
	}
	return append(out, sockFilter{code: bpfRetK, k: def}), nil
}

// callBlock decides one call, nr already matched: its conditional rules
// in order, each ending in its action, then the unconditional rule's
// action or the default. It always returns, so A may be clobbered.
func callBlock(rules []compiledRule, def uint32) ([]sockFilter, error) {
	final := def
	var out []sockFilter
	for _, r := range rules {
		if len(r.conds) == 0 {
			final = r.ret
			continue
		}
		rule, err := ruleCode(r)
		if err != nil {
			return nil, err
		}
		out = append(out, rule...)
	}
	return append(out, sockFilter{code: bpfRetK, k: final}), nil
}

// ruleCode is one conditional rule: each condition's words compared in
// turn, a mismatch jumping past the rule's return. A rule with a
// condition no value meets (a value with bits outside its mask) never
// applies and has no code.
func ruleCode(r compiledRule) ([]sockFilter, error) {
	type word struct{ off, mask, value uint32 }
	var words []word
	for _, c := range r.conds {
		off := uint32(seccompArgs + 8*c.Index) // the low word comes first on little-endian x86
		for half := range 2 {
			shift := 32 * half
			mask, value := uint32(c.Value>>shift), uint32(c.ValueTwo>>shift)
			if value&^mask != 0 {
				return nil, nil
			}
			if mask == 0 {
				continue // nothing of this word is compared
			}
			words = append(words, word{off + uint32(4*half), mask, value})
		}
	}
	var out []sockFilter
	for i, w := range words {
		out = append(out, sockFilter{code: bpfLdWAbs, k: w.off})
		if w.mask != 0xffffffff {
			out = append(out, sockFilter{code: bpfAndK, k: w.mask})
		}
		// Past the rest of this rule's comparisons and its return.
		rest := 1
		for _, later := range words[i+1:] {
			rest += 2
			if later.mask != 0xffffffff {
				rest++
			}
		}
		if rest > 255 {
			return nil, fmt.Errorf("rule with %d conditions is too long", len(r.conds))
		}
		out = append(out, sockFilter{code: bpfJeqK, jt: 0, jf: uint8(rest), k: w.value})
	}
	return append(out, sockFilter{code: bpfRetK, k: r.ret}), nil
}

// encodeFilter is prog as the bytes of a struct sock_filter array.
func encodeFilter(prog []sockFilter) []byte {
	var b bytes.Buffer
	for _, f := range prog {
		binary.Write(&b, binary.LittleEndian, f.code)
		b.WriteByte(f.jt)
		b.WriteByte(f.jf)
		binary.Write(&b, binary.LittleEndian, f.k)
	}
	return b.Bytes()
}

// defaultSeccompBPF is defaultSeccomp compiled, base64-encoded as crun's
// run.oci.seccomp_bpf_data annotation takes it; computed once.
var defaultSeccompBPF = sync.OnceValues(func() (string, error) {
	prog, err := compileSeccomp(defaultSeccomp())
	if err != nil {
		return "", fmt.Errorf("compile seccomp profile: %w", err)
	}
	return base64.StdEncoding.EncodeToString(encodeFilter(prog)), nil
})

// seccompBPFAnnotation is crun's annotation for a ready seccomp program,
// which it loads instead of compiling the spec's seccomp section.
const seccompBPFAnnotation = "run.oci.seccomp_bpf_data"
