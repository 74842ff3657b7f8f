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
)

// DebianPackages are installed on top of Debian's minbase in the built-in
// "debian" image: what coding agents reach for first.
var DebianPackages = []string{
	"git", "python3", "python3-pip", "python3-venv", "nodejs", "npm", "build-essential",
	"ca-certificates", "curl", "procps",
}

// DebianConfig says where the debian image comes from.
type DebianConfig struct {
	Name     string   // image name; default "debian"
	Packages []string // default DebianPackages
	Suite    string   // default "bookworm"
	Mirror   string   // default the first deb.debian.org-style URI in /etc/apt, else http://deb.debian.org/debian
}

// BuildDebian builds the built-in "debian" image with debootstrap
// (minbase plus [DebianPackages], or cfg's choice). It takes minutes;
// progress receives debootstrap's status lines.
func (s *Store) BuildDebian(ctx context.Context, cfg DebianConfig, progress func(string)) (Image, error) {
	if progress == nil {
		progress = func(string) {}
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return Image{}, fmt.Errorf("build debian: debootstrap not installed (apt-get install debootstrap)")
	}
	if cfg.Name == "" {
		cfg.Name = "debian"
	}
	if cfg.Packages == nil {
		cfg.Packages = DebianPackages
	}
	if cfg.Suite == "" {
		cfg.Suite = "bookworm"
	}
	if cfg.Mirror == "" {
		cfg.Mirror = "http://deb.debian.org/debian"
	}
	tmp, err := os.MkdirTemp(filepath.Join(s.dir, "layers"), ".tmp-debootstrap-")
	if err != nil {
		return Image{}, err
	}
	defer os.RemoveAll(tmp)
	rootfs := filepath.Join(tmp, "rootfs")
	// debootstrap's own resolver mishandles virtual packages (npm's
	// dependencies fail to configure with --include), so it lays down
	// minbase only and apt, inside the new root, installs the rest.
	progress("debootstrap " + cfg.Suite + " (minbase)")
	// Downloaded packages are kept, so a rebuild or a retry after a
	// failure does not fetch them again.
	cache := filepath.Join(s.dir, "debootstrap-cache")
	os.MkdirAll(cache, 0o755)
	if err := runLogged(ctx, progress, "debootstrap", "--variant=minbase", "--cache-dir="+cache, cfg.Suite, rootfs, cfg.Mirror); err != nil {
		return Image{}, fmt.Errorf("build debian: debootstrap: %w", err)
	}
	if len(cfg.Packages) > 0 {
		progress("apt-get install " + strings.Join(cfg.Packages, " "))
		script := `set -e; root=$0; mount -t proc proc "$root/proc"; trap 'umount "$root/proc"' EXIT; shift
chroot "$root" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" && apt-get clean' sh "$@"`
		args := append([]string{"--mount", "--propagation", "private", "sh", "-c", script, rootfs, rootfs}, cfg.Packages...)
		if err := runLogged(ctx, progress, "unshare", args...); err != nil {
			return Image{}, fmt.Errorf("build debian: apt-get install: %w", err)
		}
	}
	// apt's caches are not part of the image.
	os.RemoveAll(filepath.Join(rootfs, "var/cache/apt/archives"))
	os.MkdirAll(filepath.Join(rootfs, "var/cache/apt/archives/partial"), 0o755)
	os.MkdirAll(filepath.Join(rootfs, "workspace"), 0o755)
	progress("storing the layer")
	// One version only: the layer, then the image with debian's config.
	digest, size, err := s.addDirLayer(ctx, rootfs)
	if err != nil {
		return Image{}, fmt.Errorf("build debian: %w", err)
	}
	return s.Put(cfg.Name, []string{digest}, Config{
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8"},
		WorkingDir: "/workspace",
		Shell:      "/bin/bash",
	}, size)
}

// runLogged runs a command, passing each output line to progress, and on
// failure returns its last lines.
func runLogged(ctx context.Context, progress func(string), name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
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
	}()
	err := cmd.Wait()
	pw.Close()
	<-scanned
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.Join(last, "\n"))
	}
	return nil
}
