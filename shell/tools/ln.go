package tools

import (
	"context"
	"errors"
	"fmt"

	"rung.dev/rung/shell"
)

// ln makes hard and symbolic links like GNU ln. Backups and -i are
// refused. Hard links to symlinks link the symlink itself (GNU's -P
// default); -L is refused.

var lnSpec = fuNewSpec([]string{
	"s,symbolic", "f,force", "n,no-dereference", "v,verbose", "r,relative",
	"T,no-target-directory", "t,target-directory=", "P,physical",
}, "i,interactive", "b", "backup=?", "S,suffix=", "L,logical", "d,F,directory", "help", "version")

func runLn(ctx context.Context, c *shell.Call) int {
	opts, ops, status, ok := lnSpec.parse(c, 1)
	if !ok {
		return status
	}
	var sym, force, noDeref, verbose, relative, noTarget bool
	targetDir := ""
	for _, o := range opts {
		switch o.Key {
		case "symbolic":
			sym = true
		case "force":
			force = true
		case "no-dereference":
			noDeref = true
		case "verbose":
			verbose = true
		case "relative":
			relative = true
		case "no-target-directory":
			noTarget = true
		case "target-directory":
			targetDir = o.Value
		}
	}
	if relative && !sym {
		c.Errorf("cannot do --relative without --symbolic")
		return 1
	}
	var pairs [][2]string
	switch {
	case len(ops) == 0:
		return usage(c, errors.New("missing file operand"), 1)
	case len(ops) == 1 && targetDir == "" && !noTarget:
		pairs = [][2]string{{ops[0], fuBase(ops[0])}}
	case targetDir == "" && !noTarget && len(ops) == 2:
		last := ops[1]
		isDir := false
		if st, err := fuLstat(c, last); err == nil {
			isDir = st.isDir()
			if st.isLink() && !noDeref {
				if t, err := fuStatPath(c, last); err == nil {
					isDir = t.isDir()
				}
			}
		}
		if isDir {
			pairs = [][2]string{{ops[0], fuJoin(last, fuBase(ops[0]))}}
		} else {
			pairs = [][2]string{{ops[0], last}}
		}
	default:
		var ok bool
		if pairs, ok = fuTargets(c, ops, targetDir, noTarget); !ok {
			return 1
		}
	}
	for _, p := range pairs {
		if ctx.Err() != nil {
			return 130
		}
		if !lnOne(c, p[0], p[1], lnOpts{sym, force, verbose, relative}) {
			status = 1
		}
	}
	return status
}

type lnOpts struct{ sym, force, verbose, relative bool }

func lnOne(c *shell.Call, target, link string, o lnOpts) bool {
	kind := "hard link"
	if o.sym {
		kind = "symbolic link"
	} else {
		st, err := fuLstat(c, target)
		if err != nil {
			c.Errorf("failed to access %s: %s", fuQuote(target), fuErr(err))
			return false
		}
		if st.isDir() {
			c.Errorf("%s: hard link not allowed for directory", target)
			return false
		}
	}
	value := target
	if o.relative {
		t, err := fuCanon(c, target, canonMode{exist: 'm'})
		if err == nil {
			var d string
			if d, err = fuCanon(c, fuParentOf(link), canonMode{exist: 'm'}); err == nil {
				value = fuRel(d, t)
			}
		}
	}
	if o.force {
		if lst, err := fuLstat(c, link); err == nil {
			if tst, err := fuLstat(c, target); err == nil && !o.sym && tst.Dev == lst.Dev && tst.Ino == lst.Ino {
				c.Errorf("%s and %s are the same file", fuQuote(target), fuQuote(link))
				return false
			}
			if lst.isDir() {
				c.Errorf("%s: cannot overwrite directory", fuQuotef(link))
				return false
			}
			c.FS.Remove(c.Abs(link))
		}
	}
	var err error
	if o.sym {
		err = c.FS.Symlink(value, c.Abs(link))
	} else {
		err = c.FS.Link(c.Abs(target), c.Abs(link))
	}
	if err != nil {
		c.Errorf("failed to create %s %s: %s", kind, fuQuote(link), fuErr(err))
		return false
	}
	if o.verbose {
		arrow := "=>"
		if o.sym {
			arrow = "->"
		}
		fmt.Fprintf(c.Stdout, "%s %s %s\n", fuQuote(link), arrow, fuQuote(value))
	}
	return true
}
