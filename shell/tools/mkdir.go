package tools

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"syscall"

	"rung.dev/rung/shell"
)

// mkdir makes directories like GNU mkdir. The umask is taken to be 022,
// the container's default (a tool cannot see the interpreter's umask).

var mkdirSpec = fuNewSpec([]string{"p,parents", "m,mode=", "v,verbose"},
	"Z", "context=?", "help", "version")

// fuUmask is the file-creation mask assumed for sandbox processes.
const fuUmask = 0o022

func runMkdir(ctx context.Context, c *shell.Call) int {
	opts, args, status, ok := mkdirSpec.parse(c, 1)
	if !ok {
		return status
	}
	var parents, verbose bool
	modeSpec := ""
	for _, o := range opts {
		switch o.Key {
		case "parents":
			parents = true
		case "mode":
			modeSpec = o.Value
		case "verbose":
			verbose = true
		}
	}
	if len(args) == 0 {
		return usage(c, errors.New("missing operand"), 1)
	}
	mode := uint32(0o777 &^ fuUmask)
	explicit := false
	if modeSpec != "" {
		m, err := fuParseMode(modeSpec)
		if err != nil {
			c.Errorf("invalid mode %s", locQuote(modeSpec))
			return 1
		}
		// As gnulib's mkdir-p: the new directory gets the default mode
		// with the bits the mode mentions replaced.
		m2, bits := m.applyBits(0o777, true, fuUmask)
		mode = mode&^bits | m2&bits
		explicit = true
	}
	for _, a := range args {
		if ctx.Err() != nil {
			return 130
		}
		if a == "" {
			c.Errorf("cannot create directory %s: No such file or directory", locQuote(a))
			status = 1
			continue
		}
		if parents {
			if err := mkdirParents(c, a, verbose); err != nil {
				c.Errorf("cannot create directory %s: %s", locQuote(fuErrPath(err, a)), fuErr(err))
				status = 1
				continue
			}
			fi, err := c.FS.Lstat(c.Abs(a))
			if err == nil && fi.IsDir() {
				if explicit {
					c.FS.Chmod(c.Abs(a), fuFileMode(mode))
				}
				continue
			}
		}
		if err := c.FS.Mkdir(c.Abs(a), 0o777); err != nil {
			if parents && errors.Is(err, fs.ErrExist) {
				if fi, serr := c.FS.Stat(c.Abs(a)); serr == nil && fi.IsDir() {
					continue
				}
			}
			c.Errorf("cannot create directory %s: %s", locQuote(a), fuErr(err))
			status = 1
			continue
		}
		if verbose {
			fuVerbose(c, "created directory %s", fuQuote(a))
		}
		// Set the mode explicitly: the daemon's umask need not be the
		// sandbox's.
		c.FS.Chmod(c.Abs(a), fuFileMode(mode))
	}
	return status
}

// mkdirParents creates every missing ancestor of a (not a itself).
func mkdirParents(c *shell.Call, a string, verbose bool) error {
	trimmed := strings.TrimRight(a, "/")
	var prefix string
	parts := strings.Split(trimmed, "/")
	for i, p := range parts[:len(parts)-1] {
		if i > 0 || strings.HasPrefix(a, "/") {
			prefix += "/"
		}
		prefix += p
		if p == "" || p == "." || p == ".." {
			continue
		}
		err := c.FS.Mkdir(c.Abs(prefix), 0o777)
		if err == nil {
			c.FS.Chmod(c.Abs(prefix), fuFileMode(0o777&^fuUmask|0o300))
			if verbose {
				fuVerbose(c, "created directory %s", fuQuote(prefix))
			}
			continue
		}
		if errors.Is(err, fs.ErrExist) {
			if fi, serr := c.FS.Stat(c.Abs(prefix)); serr == nil && fi.IsDir() {
				continue
			}
			return &fs.PathError{Op: "mkdir", Path: prefix, Err: syscall.ENOTDIR}
		}
		return &fs.PathError{Op: "mkdir", Path: prefix, Err: fuErrnoOr(err)}
	}
	return nil
}

func fuErrnoOr(err error) error {
	if e := fuErrno(err); e != 0 {
		return e
	}
	return err
}

// fuErrPath returns the path inside a PathError, or def.
func fuErrPath(err error, def string) string {
	var pe *fs.PathError
	if errors.As(err, &pe) && !strings.HasPrefix(pe.Path, "/") {
		return pe.Path
	}
	return def
}

// fuFileMode converts st_mode permission bits into an fs.FileMode.
func fuFileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
