package image

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// DebianPackages are installed on top of Debian's minbase in the built-in
// "debian" image: what coding agents reach for first, and sudo for its
// unprivileged user.
var DebianPackages = []string{
	"git", "python3", "python3-pip", "python3-venv", "nodejs", "npm", "build-essential",
	"ca-certificates", "curl", "procps", "sudo", "bsdextrautils",
}

// DefaultUser is the unprivileged account the built-in Debian images make
// and run commands as: uid and gid 1000, home /home/user, shell
// /bin/bash, passwordless sudo (as E2B's and Daytona's images have).
const DefaultUser = "user"

// DebianConfig says what a debootstrap-built image holds.
type DebianConfig struct {
	Name     string   // image name; default "debian"
	Packages []string // default DebianPackages
	Suite    string   // default "bookworm"
	Mirror   string   // default http://deb.debian.org/debian
	// User is the account made for commands to run as (see [DefaultUser])
	// and recorded as the image's Config.User; default DefaultUser.
	// "root" makes none.
	User string
}

// Lines a Debian build writes to its progress function between the
// tools' own output, one at the start of each stage ([ProgressTracker]
// reads them).
const (
	stageDebootstrap = "== debootstrap"
	stageApt         = "== apt-get install"
	stageSetup       = "== setup"
	stageLayer       = "== storing the layer"
)

// BuildDebian builds a Debian image with debootstrap: minbase, then
// cfg.Packages installed by apt inside it, then the user account. It
// takes minutes; progress receives every output line of debootstrap,
// apt and dpkg, and a line starting with "== " at each stage (feed them
// to a [ProgressTracker] for a progress display). Downloaded packages
// are kept in the store's debootstrap-cache, so a retry fetches only
// what it lacks.
func (s *Store) BuildDebian(ctx context.Context, cfg DebianConfig, progress func(string)) (Image, error) {
	if progress == nil {
		progress = func(string) {}
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return Image{}, fmt.Errorf("build %s: debootstrap not installed (apt-get install debootstrap)", cmpOr(cfg.Name, "debian"))
	}
	cfg = cfg.withDefaults()
	tmp, err := os.MkdirTemp(filepath.Join(s.dir, "layers"), ".tmp-debootstrap-")
	if err != nil {
		return Image{}, err
	}
	defer os.RemoveAll(tmp)
	rootfs := filepath.Join(tmp, "rootfs")
	// debootstrap's own resolver mishandles virtual packages (npm's
	// dependencies fail to configure with --include), so it lays down
	// minbase only and apt, inside the new root, installs the rest.
	progress(stageDebootstrap + " " + cfg.Suite + " (minbase)")
	cache := filepath.Join(s.dir, "debootstrap-cache")
	os.MkdirAll(cache, 0o755)
	if err := runContained(ctx, progress, "debootstrap", "--variant=minbase", "--cache-dir="+cache, cfg.Suite, rootfs, cfg.Mirror); err != nil {
		return Image{}, fmt.Errorf("build %s: debootstrap: %w", cfg.Name, err)
	}
	if len(cfg.Packages) > 0 {
		progress(stageApt + " " + strings.Join(cfg.Packages, " "))
		if err := inChroot(ctx, progress, rootfs, aptScript, cfg.Packages...); err != nil {
			return Image{}, fmt.Errorf("build %s: apt-get install: %w", cfg.Name, err)
		}
	}
	progress(stageSetup + " (user " + cfg.User + ", /etc/hosts)")
	if err := inChroot(ctx, progress, rootfs, setupScript, cfg.User); err != nil {
		return Image{}, fmt.Errorf("build %s: setup: %w", cfg.Name, err)
	}
	// apt's caches are not part of the image.
	os.RemoveAll(filepath.Join(rootfs, "var/cache/apt/archives"))
	os.MkdirAll(filepath.Join(rootfs, "var/cache/apt/archives/partial"), 0o755)
	os.MkdirAll(filepath.Join(rootfs, "workspace"), 0o755)
	progress(stageLayer)
	digest, size, err := s.addDirLayer(ctx, rootfs)
	if err != nil {
		return Image{}, fmt.Errorf("build %s: %w", cfg.Name, err)
	}
	user := cfg.User
	if user == "root" {
		user = ""
	}
	return s.Put(cfg.Name, []string{digest}, Config{
		// HOME is root's, the image's default for a command that names
		// no user; the controller sets HOME, USER and LOGNAME for the
		// user each command runs as.
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8"},
		WorkingDir: "/workspace",
		Shell:      "/bin/bash",
		User:       user,
	}, size)
}

func (c DebianConfig) withDefaults() DebianConfig {
	c.Name = cmpOr(c.Name, "debian")
	if c.Packages == nil {
		c.Packages = DebianPackages
	}
	c.Suite = cmpOr(c.Suite, "bookworm")
	c.Mirror = cmpOr(c.Mirror, "http://deb.debian.org/debian")
	c.User = cmpOr(c.User, DefaultUser)
	return c
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// aptScript installs its arguments with apt inside the chroot.
// dpkg's unsafe-io skips the fsync of every file it unpacks, which took
// most of base's build here (218 s to set up 478 packages with them): a
// crash mid-build loses only the temporary root, which the store copies
// into a layer once the build is over.
const aptScript = `apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-unsafe-io "$@" && apt-get clean`

// setupScript finishes the image inside the chroot. $1 is the user to
// make (none for root): uid and gid 1000 so that files keep their owner
// across images, a home from /etc/skel, bash, and sudo without a password
// when sudo is installed (commands have no terminal to type one). The
// hostname "rung", which every container has, resolves: sudo looks it up
// and warns on every call otherwise.
const setupScript = `set -e
user=$1
if [ "$user" != root ]; then
	useradd --uid 1000 --user-group --create-home --shell /bin/bash "$user"
	if [ -d /etc/sudoers.d ]; then
		printf '%s ALL=(ALL:ALL) NOPASSWD: ALL\n' "$user" > "/etc/sudoers.d/90-rung-$user"
		chmod 0440 "/etc/sudoers.d/90-rung-$user"
	fi
fi
printf '127.0.0.1\tlocalhost\n127.0.1.1\trung\n::1\tlocalhost ip6-localhost ip6-loopback\n' > /etc/hosts
echo rung > /etc/hostname`

// inChroot runs script under sh -c inside rootfs, with args as $1...,
// and /proc mounted there for its duration (dpkg's maintainer scripts
// read it), logging its output to progress.
func inChroot(ctx context.Context, progress func(string), rootfs, script string, args ...string) error {
	outer := `set -e; root=$1; script=$2; shift 2; mount -t proc proc "$root/proc"; trap 'umount "$root/proc"' EXIT
chroot "$root" sh -c "$script" sh "$@"`
	return runContained(ctx, progress, "sh", append([]string{"-c", outer, "sh", rootfs, script}, args...)...)
}

// runContained runs a build command (debootstrap, or a script in the new
// root) in mount and pid namespaces of its own: the proc and sys mounts
// debootstrap and the scripts make in the new root never reach the
// host's mount table, and when the command is killed (the build's ctx
// canceled) or rung itself dies (unshare gets SIGKILL with its parent,
// and --kill-child passes it on to the namespace's init), every process
// of the build dies with it and its mounts go with the namespace. Killed
// in the host's namespace, debootstrap left proc and sys mounted in the
// temporary root (found when a test's daemon was killed mid-build).
func runContained(ctx context.Context, progress func(string), name string, args ...string) error {
	argv := append([]string{"--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--mount-proc", name}, args...)
	return runLogged(ctx, progress, "unshare", argv...)
}

// runLogged runs a command, passing each output line to progress, and on
// failure returns its last lines.
func runLogged(ctx context.Context, progress func(string), name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return err
	}
	var last []string
	scanned := make(chan struct{})
	go func() { // ends when the pipe closes after the command exits
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			progress(line)
			last = append(last, line)
			if len(last) > 20 {
				last = last[1:]
			}
		}
		io.Copy(io.Discard, pr) // a line too long for the scanner must not block the command
	}()
	err := cmd.Wait()
	pw.Close()
	<-scanned
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.Join(last, "\n"))
	}
	return nil
}
