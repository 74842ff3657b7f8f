package tools

import (
	"context"
	"fmt"
	"strings"

	"rung.dev/rung/shell"
)

// cp copies files and trees like GNU cp 9.1 (see [copier] for what the
// file view cannot recreate). Standard input is never a terminal, so cp
// never prompts; -i is refused. Preserved timestamps are not applied to
// copied symlinks themselves (the file view cannot set a link's times).

var cpSpec = fuNewSpec([]string{
	"a,archive", "r,R,recursive", "p", "f,force", "n,no-clobber", "v,verbose",
	"L,dereference", "P,no-dereference", "d", "l,link", "s,symbolic-link", "u,update=?",
	"T,no-target-directory", "t,target-directory=", "preserve=?", "no-preserve=",
	"remove-destination", "H", "strip-trailing-slashes",
}, "i,interactive", "b", "backup=?", "S,suffix=", "sparse=", "reflink=?", "attributes-only",
	"copy-contents", "x,one-file-system", "Z", "context=?", "parents", "keep-directory-symlink",
	"debug", "help", "version")

func runCp(ctx context.Context, c *shell.Call) int {
	opts, ops, status, ok := cpSpec.parse(c, 1)
	if !ok {
		return status
	}
	cp := &copier{c: c, ctx: ctx}
	var derefSet, noDeref, noTarget, strip bool
	targetDir := ""
	for _, o := range opts {
		switch o.Key {
		case "archive":
			cp.recursive, noDeref, derefSet = true, true, true
			cp.preserveMode, cp.preserveTime, cp.preserveLinks = true, true, true
		case "recursive":
			cp.recursive = true
		case "p":
			cp.preserveMode, cp.preserveTime = true, true
		case "force":
			cp.force = true
		case "no-clobber":
			cp.noClobber = true
		case "verbose":
			cp.verbose = true
		case "dereference":
			cp.derefAll, noDeref, derefSet = true, false, true
		case "no-dereference":
			cp.derefAll, noDeref, derefSet = false, true, true
		case "H":
			cp.derefTop, derefSet = true, true
		case "d":
			noDeref, derefSet, cp.preserveLinks = true, true, true
		case "link":
			cp.hardlink = true
		case "symbolic-link":
			cp.symlink = true
		case "update":
			switch o.Value {
			case "", "older":
				cp.update = true
			case "all":
			case "none":
				cp.noClobber = true
			default:
				return c.Fail("option --update=" + o.Value)
			}
		case "no-target-directory":
			noTarget = true
		case "target-directory":
			targetDir = o.Value
		case "remove-destination":
			cp.removeDst = true
		case "strip-trailing-slashes":
			strip = true
		case "preserve":
			if !cpPreserve(cp, o.Value, true) {
				return c.Fail("option --preserve=" + o.Value)
			}
		case "no-preserve":
			if !cpPreserve(cp, o.Value, false) {
				return c.Fail("option --no-preserve=" + o.Value)
			}
		}
	}
	// GNU follows symlinks when not copying recursively (or with -l).
	if !derefSet {
		cp.derefAll = !cp.recursive || cp.hardlink
	}
	if noDeref {
		cp.derefAll = false
	}
	if strip {
		for i, s := range ops {
			if t := strings.TrimRight(s, "/"); t != "" {
				ops[i] = t
			}
		}
	}
	pairs, ok := fuTargets(c, ops, targetDir, noTarget)
	if !ok {
		return 1
	}
	for _, p := range pairs {
		if s := cp.special(p[0], true); s != "" {
			return c.Fail("copying a FIFO, socket or device (" + s + ")")
		}
	}
	for _, p := range pairs {
		if ctx.Err() != nil {
			return 130
		}
		if !cp.copy(p[0], p[1], true) {
			status = 1
		}
	}
	return status
}

// cpPreserve applies a --preserve or --no-preserve list; false means an
// attribute we cannot handle (xattr, context).
func cpPreserve(cp *copier, list string, on bool) bool {
	if list == "" {
		list = "mode,ownership,timestamps"
	}
	for _, a := range strings.Split(list, ",") {
		switch a {
		case "mode":
			cp.preserveMode, cp.noPreserveMode = on, !on
		case "timestamps":
			cp.preserveTime = on
		case "links":
			cp.preserveLinks = on
		case "ownership":
			// Everything in the sandbox is owned by the same ids.
		case "all":
			cp.preserveMode, cp.preserveTime, cp.preserveLinks = on, on, on
		default:
			return false
		}
	}
	return true
}

// cpCheck is cp's Check: flags, plus --preserve/--no-preserve lists and
// --update values that run time would refuse.
func cpCheck(args []string) error {
	if err := cpSpec.check(args); err != nil {
		return err
	}
	opts, _, _ := cpSpec.opts.Parse(args)
	for _, o := range opts {
		ok := true
		switch o.Key {
		case "preserve", "no-preserve":
			ok = cpPreserve(&copier{}, o.Value, o.Key == "preserve")
		case "update":
			ok = o.Value == "" || o.Value == "older" || o.Value == "all" || o.Value == "none"
		}
		if !ok {
			return fmt.Errorf("option %s=%s: %w", o.Name, o.Value, shell.ErrUnsupported)
		}
	}
	return nil
}
