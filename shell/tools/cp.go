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
	"L,dereference", "P,no-dereference", "d", "l,link", "s,symbolic-link", "u,update=*",
	"T,no-target-directory", "t,target-directory=", "preserve=?", "no-preserve=",
	"remove-destination", "H", "strip-trailing-slashes", "parents",
	"i,interactive",
}, "b", "backup=?", "S,suffix=", "sparse=", "reflink=?", "attributes-only",
	"copy-contents", "x,one-file-system", "Z", "context=?", "keep-directory-symlink",
	"debug", "help", "version")

func runCp(ctx context.Context, c *shell.Call) int {
	opts, ops, status, ok := cpSpec.parse(c, 1)
	if !ok {
		return status
	}
	cp := &copier{c: c, ctx: ctx}
	var derefSet, noDeref, noTarget, strip, parents bool
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
			cp.noClobber, cp.interactive = true, false
		case "interactive":
			cp.interactive, cp.noClobber = true, false
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
		case "parents":
			parents = true
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
	var pairs [][2]string
	if parents {
		if pairs, ok = cpParentsTargets(c, ops, targetDir); !ok {
			return 1
		}
	} else if pairs, ok = fuTargets(c, ops, targetDir, noTarget); !ok {
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
		if parents && !cpMakeParents(cp, p[0], p[1]) {
			status = 1
			continue
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

// cpParentsTargets pairs sources for --parents: each source's whole name
// is appended to the target directory.
func cpParentsTargets(c *shell.Call, ops []string, targetDir string) ([][2]string, bool) {
	if targetDir == "" {
		if len(ops) < 2 {
			return fuTargets(c, ops, "", false)
		}
		targetDir, ops = ops[len(ops)-1], ops[:len(ops)-1]
	}
	if st, err := fuStatPath(c, targetDir); err != nil || !st.isDir() {
		usage(c, fmt.Errorf("with --parents, the destination must be a directory"), 1)
		return nil, false
	}
	var pairs [][2]string
	for _, s := range ops {
		pairs = append(pairs, [2]string{s, fuJoin(targetDir, strings.TrimLeft(s, "/"))})
	}
	return pairs, true
}

// cpMakeParents creates dst's missing ancestors, mirroring src's
// directory components (GNU prints each as "a -> dst/a" with -v).
func cpMakeParents(cp *copier, src, dst string) bool {
	c := cp.c
	comps := strings.Split(strings.TrimRight(src, "/"), "/")
	base := strings.TrimSuffix(dst, strings.TrimLeft(src, "/"))
	srcPre, dstPre := "", strings.TrimSuffix(base, "/")
	if strings.HasPrefix(src, "/") {
		srcPre = "/"
	}
	for i, comp := range comps[:len(comps)-1] {
		if comp == "" {
			continue
		}
		if i > 0 && !strings.HasSuffix(srcPre, "/") {
			srcPre += "/"
		}
		srcPre += comp
		dstPre += "/" + comp
		if st, err := fuStatPath(c, dstPre); err == nil {
			if !st.isDir() {
				c.Errorf("%s exists but is not a directory", fuQuote(dstPre))
				return false
			}
			continue
		}
		sst, err := fuStatPath(c, srcPre)
		if err != nil {
			c.Errorf("failed to get attributes of %s: %s", fuQuote(srcPre), fuErr(err))
			return false
		}
		if err := c.FS.Mkdir(c.Abs(dstPre), 0o700); err != nil {
			c.Errorf("cannot make directory %s: %s", fuQuote(dstPre), fuErr(err))
			return false
		}
		mode := sst.Mode & 0o777 &^ fuUmask
		if cp.preserveMode {
			mode = sst.Mode & 0o7777
		}
		c.FS.Chmod(c.Abs(dstPre), fuFileMode(mode))
		if cp.verbose {
			fmt.Fprintf(c.Stdout, "%s -> %s\n", srcPre, dstPre)
		}
	}
	return true
}
