package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"rung.dev/rung/shell"
)

// chmod changes file mode bits like GNU chmod: octal and symbolic modes
// (u+x,go-w,a=r,+X,u=g...), -R, -v, -c, -f, --reference. The umask used
// for symbolic modes without a "who" is 022, the container's default.

var chmodSpec = fuNewSpec([]string{
	"R,recursive", "v,verbose", "c,changes", "f,quiet,silent", "reference=",
	"preserve-root", "no-preserve-root",
}, "help", "version")

// fuModeChange is one compiled clause of a mode (GNU's struct mode_change).
type fuModeChange struct {
	op        byte   // '=', '+', '-'
	flag      byte   // 0 ordinary, 'c' copy existing, 'X' x-if-any-x
	affected  uint32 // who bits; 0 means "a, masked by the umask"
	value     uint32
	mentioned uint32
}

type fuMode []fuModeChange

const fuModeBits = 0o7777

// fuParseMode compiles an octal or symbolic mode as GNU's mode_compile.
func fuParseMode(s string) (fuMode, error) {
	bad := errors.New("invalid mode")
	if s != "" && strings.Trim(s, "01234567") == "" {
		var v uint32
		for _, ch := range s {
			v = v*8 + uint32(ch-'0')
			if v > fuModeBits {
				return nil, bad
			}
		}
		mentioned := uint32(fuModeBits)
		if len(s) < 5 {
			mentioned = v&0o6000 | 0o1000 | 0o777
		}
		return fuMode{{op: '=', affected: fuModeBits, value: v, mentioned: mentioned}}, nil
	}
	var m fuMode
	for _, clause := range strings.Split(s, ",") {
		i := 0
		var affected uint32
	who:
		for ; i < len(clause); i++ {
			switch clause[i] {
			case 'u':
				affected |= 0o4700
			case 'g':
				affected |= 0o2070
			case 'o':
				affected |= 0o1007
			case 'a':
				affected |= fuModeBits
			default:
				break who
			}
		}
		if i == len(clause) {
			return nil, bad
		}
		for i < len(clause) {
			op := clause[i]
			if op != '=' && op != '+' && op != '-' {
				return nil, bad
			}
			i++
			ch := fuModeChange{op: op, affected: affected}
			if i < len(clause) && strings.IndexByte("ugo", clause[i]) >= 0 {
				ch.flag = 'c'
				ch.value = map[byte]uint32{'u': 0o700, 'g': 0o070, 'o': 0o007}[clause[i]]
				i++
			} else {
			perm:
				for ; i < len(clause); i++ {
					switch clause[i] {
					case 'r':
						ch.value |= 0o444
					case 'w':
						ch.value |= 0o222
					case 'x':
						ch.value |= 0o111
					case 'X':
						ch.flag = 'X'
					case 's':
						ch.value |= 0o6000
					case 't':
						ch.value |= 0o1000
					default:
						break perm
					}
				}
			}
			if affected != 0 {
				ch.mentioned = affected & ch.value
			} else {
				ch.mentioned = ch.value
			}
			if ch.flag == 'c' {
				ch.mentioned = affected
				if affected == 0 {
					ch.mentioned = fuModeBits
				}
			}
			m = append(m, ch)
		}
	}
	return m, nil
}

// apply computes the new mode bits from old as GNU's mode_adjust does.
func (m fuMode) apply(old uint32, dir bool, umask uint32) uint32 {
	mode, _ := m.applyBits(old, dir, umask)
	return mode
}

// applyBits is apply that also returns the bits the mode changes.
func (m fuMode) applyBits(old uint32, dir bool, umask uint32) (mode, bits uint32) {
	mode = old & fuModeBits
	for _, ch := range m {
		var omit uint32
		if dir {
			omit = 0o6000 &^ ch.mentioned
		}
		value := ch.value
		switch ch.flag {
		case 'c':
			value &= mode
			if value&0o444 != 0 {
				value |= 0o444
			}
			if value&0o222 != 0 {
				value |= 0o222
			}
			if value&0o111 != 0 {
				value |= 0o111
			}
		case 'X':
			if mode&0o111 != 0 || dir {
				value |= 0o111
			}
		}
		mask := ch.affected
		if mask == 0 {
			mask = ^umask
		}
		value &= mask &^ omit
		switch ch.op {
		case '=':
			preserved := umask
			if ch.affected != 0 {
				preserved = ^ch.affected
			}
			preserved |= omit
			bits |= fuModeBits &^ preserved
			mode = mode&preserved | value
		case '+':
			bits |= value
			mode |= value
		case '-':
			bits |= value
			mode &^= value
		}
	}
	return mode, bits
}

// chmodSplit takes "-w", "-x,u+r" and the like out of args: GNU chmod
// reads them as a mode, not as options.
func chmodSplit(args []string) (modeArg string, rest []string) {
	for i, a := range args {
		if a == "--" {
			return modeArg, append(rest, args[i:]...)
		}
		if modeArg == "" && len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Trim(a[1:], "rwxXstugoa=+-,01234567") == "" {
			modeArg = a
			continue
		}
		rest = append(rest, a)
	}
	return modeArg, rest
}

// chmodCheck refuses, besides unknown options, a mode that could take
// read or write permission from a file's owner, or search permission
// from a directory's (with -R): the isolate tier does not enforce
// permissions, so what follows would succeed where bash's would fail.
func chmodCheck(args []string) error {
	modeArg, rest := chmodSplit(args)
	if err := chmodSpec.check(rest); err != nil {
		return err
	}
	opts, ops, err := chmodSpec.opts.Parse(rest)
	if err != nil {
		return nil // a usage error, which the tool reports as GNU does
	}
	recursive := false
	for _, o := range opts {
		switch o.Key {
		case "recursive":
			recursive = true
		case "reference":
			return fmt.Errorf("chmod --reference (permissions not enforced here): %w", shell.ErrUnsupported)
		}
	}
	if modeArg == "" && len(ops) > 0 {
		modeArg = ops[0]
	}
	if modeArg == "" {
		return nil
	}
	if modeArg == shell.Unknown {
		return fmt.Errorf("chmod with a mode only known at run time: %w", shell.ErrUnsupported)
	}
	m, err := fuParseMode(modeArg)
	if err != nil {
		return nil // GNU's "invalid mode" message
	}
	if !chmodKeepsOwner(m, false) || recursive && !chmodKeepsOwner(m, true) {
		return fmt.Errorf("chmod %s (permissions not enforced here): %w", modeArg, shell.ErrUnsupported)
	}
	return nil
}

// chmodKeepsOwner reports whether m leaves the owner of any file read
// and write permission (and, on a directory, search permission too).
func chmodKeepsOwner(m fuMode, dir bool) bool {
	typ, need := uint32(0o100000), uint32(0o600)
	if dir {
		typ, need = 0o040000, 0o700
	}
	return m.apply(typ|0o777, dir, fuUmask)&need == need
}

func runChmod(ctx context.Context, c *shell.Call) int {
	modeArg, rest := chmodSplit(c.Args[1:])
	diagnose := modeArg != ""
	opts, ops, err := chmodSpec.opts.Parse(rest)
	if err != nil {
		return usage(c, err, 1)
	}
	var recursive, verbose, changes, silent bool
	ref := ""
	for _, o := range opts {
		switch o.Key {
		case "recursive":
			recursive = true
		case "verbose":
			verbose = true
		case "changes":
			changes = true
		case "silent":
			silent = true
		case "reference":
			ref = o.Value
		}
	}
	if ref == "" && modeArg == "" {
		if len(ops) == 0 {
			return usage(c, errors.New("missing operand"), 1)
		}
		modeArg, ops = ops[0], ops[1:]
	}
	if len(ops) == 0 {
		if modeArg != "" || ref != "" {
			return usage(c, fmt.Errorf("missing operand after %s", locQuote(modeArg)), 1)
		}
	}
	var mode fuMode
	if ref != "" {
		st, err := fuStatPath(c, ref)
		if err != nil {
			c.Errorf("failed to get attributes of %s: %s", fuQuote(ref), fuErr(err))
			return 1
		}
		mode = fuMode{{op: '=', affected: fuModeBits, value: st.Mode & fuModeBits, mentioned: fuModeBits}}
	} else {
		mode, err = fuParseMode(modeArg)
		if err != nil {
			c.Errorf("invalid mode: %s", locQuote(modeArg))
			fmt.Fprintf(c.Stderr, "Try '%s --help' for more information.\n", c.Name())
			return 1
		}
	}
	ch := &chmodder{c: c, ctx: ctx, mode: mode, verbose: verbose, changes: changes, silent: silent, diagnose: diagnose, recursive: recursive}
	status := 0
	for _, op := range ops {
		if ch.one(op, true) != 0 {
			status = 1
		}
	}
	return status
}

type chmodder struct {
	c                                                     *shell.Call
	ctx                                                   context.Context
	mode                                                  fuMode
	verbose, changes, silent, diagnose, recursive, failed bool
}

func (ch *chmodder) one(name string, top bool) int {
	c := ch.c
	if ch.ctx.Err() != nil {
		return 1
	}
	lst, err := fuLstat(c, name)
	if err != nil {
		if !ch.silent {
			c.Errorf("cannot access %s: %s", fuQuote(name), fuErr(err))
		}
		return 1
	}
	st := lst
	if lst.isLink() {
		if !top {
			// Symlinks met while recursing are not followed nor changed.
			if ch.verbose {
				fmt.Fprintf(c.Stdout, "neither symbolic link %s nor referent has been changed\n", fuQuote(name))
			}
			return 0
		}
		st, err = fuStatPath(c, name)
		if err != nil {
			if !ch.silent {
				c.Errorf("cannot operate on dangling symlink %s", fuQuote(name))
			}
			return 1
		}
	}
	status := 0
	old := st.Mode & fuModeBits
	nm := ch.mode.apply(st.Mode, st.isDir(), fuUmask)
	if nm != old {
		if err := c.FS.Chmod(c.Abs(name), fuFileMode(nm)); err != nil {
			if !ch.silent {
				c.Errorf("changing permissions of %s: %s", fuQuote(name), fuErr(err))
			}
			return 1
		}
	}
	if ch.verbose || (ch.changes && nm != old) {
		typ := st.Mode &^ fuModeBits
		if nm == old {
			fmt.Fprintf(c.Stdout, "mode of %s retained as %04o (%s)\n", fuQuote(name), old, fuModeString(typ | old)[1:])
		} else {
			fmt.Fprintf(c.Stdout, "mode of %s changed from %04o (%s) to %04o (%s)\n", fuQuote(name), old,
				fuModeString(typ | old)[1:], nm, fuModeString(typ | nm)[1:])
		}
	}
	if ch.diagnose {
		naive := ch.mode.apply(st.Mode, st.isDir(), 0)
		if nm&^naive != 0 {
			c.Errorf("%s: new permissions are %s, not %s", name, fuModeString(st.Mode&^fuModeBits | nm)[1:], fuModeString(st.Mode&^fuModeBits | naive)[1:])
			status = 1
		}
	}
	if ch.recursive && st.isDir() && !lst.isLink() {
		ents, err := c.FS.ReadDir(c.Abs(name))
		if err != nil {
			if !ch.silent {
				c.Errorf("cannot read directory %s: %s", fuQuote(name), fuErr(err))
			}
			return 1
		}
		for _, e := range ents {
			if ch.one(fuJoin(name, e.Name()), false) != 0 {
				status = 1
			}
		}
	}
	return status
}
