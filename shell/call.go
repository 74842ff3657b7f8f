package shell

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// Name returns the command name as invoked (argv[0]'s last element).
func (c *Call) Name() string { return path.Base(c.Args[0]) }

// Getenv returns the value of the exported variable name, or "".
func (c *Call) Getenv(name string) string {
	v, _ := c.LookupEnv(name)
	return v
}

// LookupEnv is like os.LookupEnv over c.Env.
func (c *Call) LookupEnv(name string) (string, bool) {
	for i := len(c.Env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(c.Env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// Abs returns name as an absolute sandbox path, joined to c.Dir when
// relative. It does not clean ".." lexically (see [storage.FS]).
func (c *Call) Abs(name string) string {
	if strings.HasPrefix(name, "/") {
		return name
	}
	if name == "" {
		return c.Dir
	}
	if c.Dir == "/" {
		return "/" + name
	}
	return c.Dir + "/" + name
}

// Errorf writes "name: message\n" to c.Stderr, as GNU tools do.
func (c *Call) Errorf(format string, args ...any) {
	fmt.Fprintf(c.Stderr, "%s: %s\n", c.Name(), fmt.Sprintf(format, args...))
}

// Fail records that the tool cannot do what it was asked faithfully (an
// unimplemented flag, say), writes a message naming it, and returns
// [ExitUnsupported]. Call it before writing anything.
func (c *Call) Fail(what string) int {
	c.Unsupported = fmt.Errorf("%s: %s: %w", c.Name(), what, ErrUnsupported)
	fmt.Fprintf(c.Stderr, "%s: %s is not supported in the isolate tier\n", c.Name(), what)
	return ExitUnsupported
}

// Open opens name for reading: "-" and /dev/stdin are c.Stdin, /dev/null is
// empty, /dev/zero is endless zero bytes, /dev/fd/N is descriptor N;
// /etc/passwd and /etc/group, in a view without the container's root,
// are the container's (see [Config].RootFile); anything else is a file
// in c.FS. The caller closes the result.
func (c *Call) Open(name string) (io.ReadCloser, error) {
	switch name {
	case "-", "/dev/stdin", "/dev/fd/0":
		return io.NopCloser(c.Stdin), nil
	case "/dev/null":
		return io.NopCloser(bytes.NewReader(nil)), nil
	case "/dev/zero":
		return io.NopCloser(zeroReader{}), nil
	}
	if n, ok := devFD(name); ok {
		if r, ok := c.FDs[n].(io.Reader); ok {
			return io.NopCloser(r), nil
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EBADF}
	}
	if t, ok := c.FS.(*trackFS); ok {
		if b, ok, err := t.rootFile(c.Abs(name)); ok {
			if err != nil {
				return nil, err
			}
			return io.NopCloser(bytes.NewReader(b)), nil
		}
	}
	return c.FS.OpenFile(c.Abs(name), os.O_RDONLY, 0)
}

// Stat is like c.FS.Stat on c.Abs(name), except that the virtual devices
// [Call.Open] knows answer for themselves: /dev/null, /dev/zero and
// /dev/stdin|stdout|stderr are character devices, an open /dev/fd/N is a
// pipe (as a process substitution is in bash) and a closed one does not
// exist. Tools stat their operands through it so /dev/fd/63 works.
func (c *Call) Stat(name string) (fs.FileInfo, error) {
	switch name {
	case "/dev/null", "/dev/zero", "/dev/stdin", "/dev/stdout", "/dev/stderr":
		return devInfo{name: name[5:], mode: fs.ModeDevice | fs.ModeCharDevice | 0o666}, nil
	}
	if n, ok := devFD(name); ok {
		if n <= 2 || c.FDs[n] != nil {
			return devInfo{name: name[8:], mode: fs.ModeNamedPipe | 0o600}, nil
		}
		return nil, &fs.PathError{Op: "stat", Path: name, Err: syscall.ENOENT}
	}
	return c.FS.Stat(c.Abs(name))
}

// IsDevice reports whether name is one of the virtual devices [Call.Open]
// and [Call.Create] serve without touching c.FS.
func IsDevice(name string) bool {
	switch name {
	case "/dev/null", "/dev/zero", "/dev/stdin", "/dev/stdout", "/dev/stderr":
		return true
	}
	_, ok := devFD(name)
	return ok
}

// Create opens name for writing with flag (os.O_WRONLY|os.O_CREATE|...)
// and perm: /dev/null discards, /dev/stdout, /dev/stderr and /dev/fd/N are
// the call's streams; anything else is a file in c.FS.
func (c *Call) Create(name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
	switch name {
	case "/dev/null":
		return nopWriteCloser{io.Discard}, nil
	case "/dev/stdout", "/dev/fd/1":
		return nopWriteCloser{c.Stdout}, nil
	case "/dev/stderr", "/dev/fd/2":
		return nopWriteCloser{c.Stderr}, nil
	}
	if n, ok := devFD(name); ok {
		if w, ok := c.FDs[n].(io.Writer); ok {
			return nopWriteCloser{w}, nil
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EBADF}
	}
	return c.FS.OpenFile(c.Abs(name), flag, perm)
}

func devFD(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "/dev/fd/")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// ErrText returns the text GNU tools print for a file error, such as "No
// such file or directory", from an *fs.PathError or a syscall.Errno.
func ErrText(err error) string {
	var pe *fs.PathError
	if errorsAs(err, &pe) {
		err = pe.Err
	}
	if errno, ok := err.(syscall.Errno); ok {
		s := errno.Error()
		if s != "" {
			return strings.ToUpper(s[:1]) + s[1:]
		}
	}
	return err.Error()
}
