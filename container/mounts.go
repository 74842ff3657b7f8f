package container

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"rung.dev/rung"
)

// What a container sees of the host's file system is its own files: the
// image layers and its subvolume through the overlay, /workspace and /tmp,
// and the agent binary. The mounts below are made so that no host path of
// the daemon's data directory shows in the container's
// /proc/self/mountinfo: the overlay's options name its directories
// relative to a private working directory, and the agent binary and
// (under runsc) the agent's socket directory are the roots of small tmpfs
// mounts, whose mountinfo root is "/". (/workspace and /tmp show their
// path inside the pool's file system, /sandboxes/<id>/fs/..., which names
// nothing outside it.)

// mountRootfs mounts c's root file system: the image's layers under the
// sandbox's own upper directory, so root filesystem changes live in its
// subvolume. The layer, upper and work directories are given to overlayfs
// as short names of symlinks in c's state directory, resolved from a
// thread whose working directory is that directory; overlayfs keeps the
// names as given, so the container's mountinfo shows "lowerdir=0:1,
// upperdir=u,workdir=w" rather than host paths.
func (m *Manager) mountRootfs(req StartRequest, c *Container) error {
	lower := m.cfg.Images.LowerDirs(req.Image)
	if len(lower) == 0 {
		return rung.Errorf(rung.ErrInvalid, "image %s has no layers", req.Image.Name)
	}
	links := filepath.Join(c.dir, "layers")
	if err := os.RemoveAll(links); err != nil {
		return fmt.Errorf("mount overlay: %w", err)
	}
	if err := os.Mkdir(links, 0o700); err != nil {
		return fmt.Errorf("mount overlay: %w", err)
	}
	// Resolved once, at mount time: the links can go right after.
	defer os.RemoveAll(links)
	names := make([]string, len(lower))
	for i, dir := range lower {
		names[i] = strconv.Itoa(i)
		if err := os.Symlink(dir, filepath.Join(links, names[i])); err != nil {
			return fmt.Errorf("mount overlay: %w", err)
		}
	}
	for name, dir := range map[string]string{"u": "upper", "w": "work"} {
		if err := os.Symlink(filepath.Join(req.Subvolume, "rootfs", dir), filepath.Join(links, name)); err != nil {
			return fmt.Errorf("mount overlay: %w", err)
		}
	}
	opts := "lowerdir=" + strings.Join(names, ":") + ",upperdir=u,workdir=w"
	err := inDir(links, func() error {
		return unix.Mount("overlay", c.rootfs, "overlay", unix.MS_NODEV, opts)
	})
	if err != nil {
		return fmt.Errorf("mount overlay: %w", err)
	}
	return nil
}

// inDir runs fn on a thread of its own whose working directory is dir,
// leaving the process's working directory alone. The thread has its own
// file system context (CLONE_FS) and is not handed back to the Go
// scheduler: it exits with the goroutine.
func inDir(dir string, fn func() error) error {
	errc := make(chan error, 1)
	go func() { // ends when fn returns; its thread exits with it
		runtime.LockOSThread() // never unlocked: see above
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			errc <- fmt.Errorf("unshare fs: %w", err)
			return
		}
		if err := unix.Chdir(dir); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// runDirBytes bounds the tmpfs that holds the agent's socket under runsc:
// the directory is shared with the container, whose writes there would
// otherwise land on the host's disk, outside every quota.
const runDirBytes = 64 << 10

// mountRunDir mounts a small tmpfs on dir, the agent's socket directory
// that runsc shares with the container.
func mountRunDir(dir string) error {
	opts := "size=" + strconv.Itoa(runDirBytes) + ",nr_inodes=64,mode=0700"
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
		return fmt.Errorf("mount run directory: %w", err)
	}
	return nil
}

// unmountAll lazily unmounts whatever is mounted on dir, however many
// mounts are stacked there (a crash can leave one below a new one).
func unmountAll(dir string) error {
	for range 16 {
		err := unix.Unmount(dir, unix.MNT_DETACH)
		if err == unix.EINVAL || err == unix.ENOENT {
			return nil // not a mount point (any more)
		}
		if err != nil {
			return fmt.Errorf("unmount %s: %w", filepath.Base(dir), err)
		}
	}
	return fmt.Errorf("unmount %s: too many mounts", filepath.Base(dir))
}

// checkBindSources makes sure the subvolume's fs/workspace and fs/tmp,
// which the runtime bind-mounts by path as root on the host, are real
// directories and not symlinks: a symlink there would put a host
// directory inside the container. The isolate tier's file view refuses
// to remove or rename them (storage.Root), so this only guards against
// anything else that might have written the subvolume.
func checkBindSources(subvol string) error {
	for _, dir := range []string{"workspace", "tmp"} {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(subvol, "fs", dir), &st); err != nil {
			return fmt.Errorf("check /%s: %w", dir, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return rung.Errorf(rung.ErrConflict, "the sandbox's /%s is not a directory", dir)
		}
	}
	return nil
}

// prepareAgentDir puts a copy of the agent binary on a read-only tmpfs
// mounted at the manager's agent directory, once: every container
// bind-mounts that directory at [AgentDir]. The copy shields running
// containers from a rebuilt binary, and being the root of its own mount
// keeps the host path out of the containers' mountinfo.
func (m *Manager) prepareAgentDir() error {
	m.agentMu.Lock()
	defer m.agentMu.Unlock()
	if m.agentReady {
		return nil
	}
	fi, err := os.Stat(m.cfg.AgentBinary)
	if err != nil {
		return fmt.Errorf("agent binary: %w", err)
	}
	opts := "size=" + strconv.FormatInt(fi.Size()+1<<20, 10) + ",nr_inodes=16,mode=0755"
	if err := freshTmpfs(m.agentDir, 0o755, unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("agent binary: %w", err)
	}
	if err := copyFile(m.cfg.AgentBinary, filepath.Join(m.agentDir, agentBinName)); err != nil {
		unmountAll(m.agentDir)
		return fmt.Errorf("agent binary: %w", err)
	}
	if err := unix.Mount("", m.agentDir, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		unmountAll(m.agentDir)
		return fmt.Errorf("agent binary: remount read-only: %w", err)
	}
	m.agentReady = true
	return nil
}

// bootIDBytes and bootIDFiles bound the boot id tmpfs: a file (one
// page) per running container.
const (
	bootIDFiles = 1 << 16
	bootIDBytes = bootIDFiles * 4096
)

// prepareBootIDDir mounts the tmpfs that holds each container's boot id
// (Manager.writeBootID), once: a bind mount of a file there shows the
// container only "/<sandbox id>" as its source in mountinfo, where a
// file of the state directory would show the host's path to it. A tmpfs
// an earlier daemon left is replaced: its containers' mounts keep it.
func (m *Manager) prepareBootIDDir() error {
	m.agentMu.Lock()
	defer m.agentMu.Unlock()
	if m.bootIDReady {
		return nil
	}
	opts := "size=" + strconv.Itoa(bootIDBytes) + ",nr_inodes=" + strconv.Itoa(bootIDFiles) + ",mode=0700"
	if err := freshTmpfs(m.bootIDDir, 0o700, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
		return fmt.Errorf("boot id: %w", err)
	}
	m.bootIDReady = true
	return nil
}

// freshTmpfs mounts a new tmpfs on dir (made with perm if missing),
// with flags and opts, in place of whatever was mounted there.
func freshTmpfs(dir string, perm os.FileMode, flags uintptr, opts string) error {
	if err := unmountAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, opts); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	return nil
}

// releaseBootIDDir unmounts the boot id tmpfs; running containers keep
// their own bind mounts of their files.
func (m *Manager) releaseBootIDDir() error {
	m.agentMu.Lock()
	defer m.agentMu.Unlock()
	m.bootIDReady = false
	return unmountAll(m.bootIDDir)
}

// releaseAgentDir unmounts the agent directory's tmpfs. Running
// containers keep their own bind mounts of it.
func (m *Manager) releaseAgentDir() error {
	m.agentMu.Lock()
	defer m.agentMu.Unlock()
	m.agentReady = false
	return unmountAll(m.agentDir)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
