package e2b

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

// Files outside /workspace and /tmp. envd runs as root and reaches the
// whole file system, leaving what it makes to the request's user; rung's
// file view holds only /workspace and /tmp. A /files read or write, or a
// Stat, of any other path is done in the sandbox's container instead (it
// starts if it is not running), by a command run there as root that
// leaves what it makes to the user, as envd does. Each is an exec of the
// sandbox like any other: journaled, bounded, refused for a sandbox
// without a container tier. Its size is bounded by the exec's output
// limit (reads) and maxOutsideFile (writes). The other file RPCs keep to
// the file view.

// maxOutsideFile bounds a write outside the file view: its bytes go to
// the container as an exec's stdin, held in memory.
const maxOutsideFile = 16 << 20

// inView reports whether controller path p is in the file view.
func inView(p string) bool {
	_, ws := within(p, workspace)
	_, tmp := within(p, "/tmp")
	return ws || tmp
}

// userPath is sandboxPath for a request made as user: root's relative
// paths resolve against /root, everyone else's against the home.
func userPath(p, user string) string {
	if user == "root" && !strings.HasPrefix(p, "/") {
		switch {
		case p == "" || p == "~":
			return "/root"
		case strings.HasPrefix(p, "~/"):
			return path.Clean("/root/" + p[2:])
		}
		return path.Clean("/root/" + p)
	}
	return sandboxPath(p)
}

// inContainer runs script as root in the sandbox's container with stdin
// and returns its output; a non-zero exit is an error made from its
// stderr (a missing path is not_found).
func (s *Server) inContainer(ctx context.Context, c caller, script string, stdin []byte) ([]byte, error) {
	res, err := s.ctrl.Exec(ctx, c.tenant, c.sandbox, rung.ExecRequest{Command: script, Stdin: stdin, Backend: rung.BackendContainer, User: "root"}, controller.ExecOptions{})
	if err != nil {
		return nil, err
	}
	if res.Truncated || res.Limit == rung.LimitOutputBytes {
		return nil, rung.Errorf(rung.ErrTooLarge, "the file is larger than an exec's output limit: read it from /workspace or /tmp")
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(string(res.Stderr))
		switch {
		case strings.Contains(msg, "No such file or directory"), strings.Contains(msg, "Not a directory"):
			return nil, rung.Errorf(rung.ErrNotFound, "%s", msg)
		case msg == "":
			return nil, rung.Errorf(rung.ErrInvalid, "exit status %d", res.ExitCode)
		}
		return nil, rung.Errorf(rung.ErrInvalid, "%s", msg)
	}
	return res.Stdout, nil
}

// readOutside reads file p (outside the file view) in the container.
func (s *Server) readOutside(ctx context.Context, c caller, p string) ([]byte, error) {
	q := shellQuote(p)
	return s.inContainer(ctx, c, "if [ -d "+q+" ]; then echo \"cat: "+p+": Is a directory\" >&2; exit 1; fi; exec cat -- "+q, nil)
}

// writeOutside writes data to file p (outside the file view) in the
// container: missing directories made (0755) and, with the file (0644),
// given to user.
func (s *Server) writeOutside(ctx context.Context, c caller, p, user string, data []byte) error {
	if user == "" {
		user = sandboxUser
	}
	script := `set -e
p=` + shellQuote(p) + `; u=` + shellQuote(user) + `
d=$(dirname -- "$p"); top=
while [ ! -e "$d" ]; do top=$d; d=$(dirname -- "$d"); done
if [ -n "$top" ]; then mkdir -p -m 0755 -- "$(dirname -- "$p")"; fi
if [ -d "$p" ]; then echo "$p: Is a directory" >&2; exit 1; fi
(umask 022; cat > "$p")
chown -- "$u:" "$p"
if [ -n "$top" ]; then chown -R -- "$u:" "$top"; fi`
	_, err := s.inContainer(ctx, c, script, data)
	return err
}

// statOutside describes p (outside the file view), not following a final
// symlink, from the container.
func (s *Server) statOutside(ctx context.Context, c caller, p string) (controller.FileInfo, error) {
	q := shellQuote(p)
	out, err := s.inContainer(ctx, c, "stat -c '%F|%s|%a|%.9Y' -- "+q+" && if [ -L "+q+" ]; then readlink -- "+q+"; fi", nil)
	if err != nil {
		return controller.FileInfo{}, err
	}
	line, target, _ := bytes.Cut(out, []byte("\n"))
	f := strings.Split(string(line), "|")
	if len(f) != 4 {
		return controller.FileInfo{}, fmt.Errorf("stat %s in the container: unexpected output %q", p, line)
	}
	fi := controller.FileInfo{Path: p, Name: path.Base(p), Type: "other", Target: strings.TrimSuffix(string(target), "\n")}
	switch f[0] {
	case "regular file", "regular empty file":
		fi.Type = "file"
	case "directory":
		fi.Type = "dir"
	case "symbolic link":
		fi.Type = "symlink"
	}
	fi.Size, _ = strconv.ParseInt(f[1], 10, 64)
	perm, _ := strconv.ParseUint(f[2], 8, 32)
	fi.Mode = fmt.Sprintf("%04o", perm)
	sec, frac, _ := strings.Cut(f[3], ".")
	secs, _ := strconv.ParseInt(sec, 10, 64)
	nanos, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
	fi.ModTime = time.Unix(secs, nanos).UTC()
	return fi, nil
}

// writeOutsideFrom is one /files upload to p, outside the file view.
func (s *Server) writeOutsideFrom(ctx context.Context, c caller, p, user string, md map[string]string, src io.Reader, out *[]writtenEntry) error {
	if len(md) > 0 {
		return rung.Errorf(rung.ErrInvalid, "metadata on %s: only files in /workspace (the home) and /tmp keep metadata", p)
	}
	data, err := io.ReadAll(io.LimitReader(src, maxOutsideFile+1))
	if err != nil {
		return rung.Errorf(rung.ErrInvalid, "read the upload: %v", err)
	}
	if len(data) > maxOutsideFile {
		return rung.Errorf(rung.ErrTooLarge, "%s: a file outside /workspace (the home) and /tmp is written in the container, at most %d bytes at once", p, maxOutsideFile)
	}
	if err := s.writeOutside(ctx, c, p, user, data); err != nil {
		return err
	}
	*out = append(*out, writtenEntry{Name: path.Base(p), Type: "file", Path: p})
	return nil
}
