package network

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// inNamespace runs f in the network namespace open as nsFD, on a goroutine
// of its own locked to its thread, and waits for it. Sockets f makes stay in
// that namespace after it returns (a netlink handle for the namespace, say).
func inNamespace(nsFD int, f func() error) error {
	errc := make(chan error, 1)
	go func() { // ends when f returns
		runtime.LockOSThread()
		self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open own network namespace: %w", err)
			return
		}
		defer unix.Close(self)
		if err := unix.Setns(nsFD, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter network namespace: %w", err)
			return
		}
		ferr := f()
		if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
			// The thread stays locked, so it ends with this goroutine
			// and nothing else ever runs in the sandbox's namespace.
			errc <- errors.Join(ferr, fmt.Errorf("return from network namespace: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// createNamespace makes a new network namespace that outlives every
// process: an nsfs bind mount on a new file at path (as `ip netns add`
// does). Only loopback is in it, down.
func createNamespace(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return fmt.Errorf("create network namespace: %w", err)
	}
	f.Close()
	errc := make(chan error, 1)
	go func() { // ends once the namespace is mounted
		runtime.LockOSThread()
		self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer unix.Close(self)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		merr := unix.Mount("/proc/thread-self/ns/net", path, "", unix.MS_BIND, "")
		if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(merr, fmt.Errorf("return from new network namespace: %w", err)) // thread ends locked, as in inNamespace
			return
		}
		runtime.UnlockOSThread()
		errc <- merr
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return fmt.Errorf("create network namespace: %w", err)
	}
	return nil
}

// removeNamespace unmounts and removes a namespace createNamespace made;
// the kernel frees it once no process is in it. A path that is gone, or no
// longer a mount (after a reboot), is fine.
func removeNamespace(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
		return fmt.Errorf("unmount network namespace: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove network namespace: %w", err)
	}
	return nil
}

// openNamespace opens the network namespace at path (/proc/PID/ns/net or a
// bind mount of one). It refuses anything else, and the daemon's own
// namespace: the link's guest end would land on the host.
func openNamespace(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open network namespace: %w", err)
	}
	typ, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE)
	if err != nil || typ != unix.CLONE_NEWNET {
		unix.Close(fd)
		return -1, fmt.Errorf("%s is not a network namespace", path)
	}
	var ns, own unix.Stat_t
	if err := unix.Fstat(fd, &ns); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Stat("/proc/self/ns/net", &own); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if ns.Dev == own.Dev && ns.Ino == own.Ino {
		unix.Close(fd)
		return -1, fmt.Errorf("%s is the daemon's own network namespace", path)
	}
	return fd, nil
}

// writeSysctl writes value to the sysctl file path under /proc/sys, in
// the calling thread's network namespace for net/ paths. A missing file
// (IPv6 off at boot) is fine: what it would turn off is not there.
func writeSysctl(path, value string) error {
	err := os.WriteFile("/proc/sys/"+path, []byte(value), 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
