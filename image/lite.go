package image

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

// BusyboxPath is where Debian's busybox-static installs its binary.
const BusyboxPath = "/bin/busybox"

// epoch is the fixed modification time of generated files, so that the
// same busybox binary always gives the same layer digest.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// BuildLite builds the built-in "lite" image from the host's static
// busybox (package busybox-static): one layer holding busybox, a link for
// each applet, and the files a shell expects (/etc/passwd, /tmp, ...).
func (s *Store) BuildLite(ctx context.Context, progress func(string)) (Image, error) {
	if progress == nil {
		progress = func(string) {}
	}
	bin, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return Image{}, fmt.Errorf("build lite: %w (install busybox-static)", err)
	}
	progress("listing busybox applets")
	list, err := exec.CommandContext(ctx, BusyboxPath, "--list-full").Output()
	if err != nil {
		return Image{}, fmt.Errorf("build lite: busybox --list-full: %w", err)
	}
	progress("writing the layer")
	layer, err := liteLayer(bin, strings.Fields(string(list)))
	if err != nil {
		return Image{}, fmt.Errorf("build lite: %w", err)
	}
	digest, size, err := s.AddLayer(ctx, bytes.NewReader(layer))
	if err != nil {
		return Image{}, fmt.Errorf("build lite: %w", err)
	}
	cfg := Config{
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"},
		WorkingDir: "/workspace",
		Shell:      "/bin/sh",
	}
	progress("done")
	return s.Put("lite", []string{digest}, cfg, size)
}

func liteLayer(busybox []byte, applets []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := []string{"bin", "dev", "etc", "home", "proc", "root", "run", "sbin", "sys", "tmp",
		"usr", "usr/bin", "usr/sbin", "usr/local", "usr/local/bin", "var", "var/tmp", "workspace"}
	for _, d := range dirs {
		mode := int64(0o755)
		if d == "tmp" || d == "var/tmp" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	// lite runs commands as root, but lists the same unprivileged user as
	// the Debian images, so `user: "user"` works on it too (and tests of
	// who commands run as need no Debian build).
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "home/user/", Mode: 0o755, Uid: 1000, Gid: 1000, ModTime: epoch}); err != nil {
		return nil, err
	}
	files := map[string]string{
		"etc/passwd":   "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
		"etc/group":    "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n",
		"etc/hosts":    "127.0.0.1\tlocalhost\n::1\tlocalhost\n",
		"etc/hostname": "rung\n",
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := writeFile(tw, n, []byte(files[n]), 0o644); err != nil {
			return nil, err
		}
	}
	if err := writeFile(tw, "bin/busybox", busybox, 0o755); err != nil {
		return nil, err
	}
	sort.Strings(applets)
	for _, a := range applets {
		a = strings.TrimPrefix(a, "/")
		if a == "bin/busybox" || strings.Contains(a, "..") {
			continue
		}
		hdr := &tar.Header{Typeflag: tar.TypeSymlink, Name: a, Linkname: "/bin/busybox", Mode: 0o777, ModTime: epoch}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeFile(tw *tar.Writer, name string, data []byte, mode int64) error {
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := io.Copy(tw, bytes.NewReader(data))
	return err
}
