package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The attempts on calls the seccomp allow-list must refuse, or must keep
// working (TestContainmentSeccomp):
//
//	escape btrfs DIR        BTRFS_IOC_SUBVOL_CREATE and SNAP_CREATE in DIR
//	escape reflink DIR      FICLONE, FICLONERANGE and FIDEDUPERANGE in DIR
//	escape ioctl CMD...     each command on descriptor -1 (EBADF: it reached the kernel)
//	escape ioctl-sweep      every type and number, counted by answer
//	escape syscall NR...    each call by number, with zero arguments
//	escape keys             add_key, keyctl, request_key
//	escape mount-api        mount, umount2 and the new mount API
//	escape vsock            an AF_VSOCK socket (made, never connected)
//	escape netlink          a NETLINK_ROUTE socket, then a NETLINK_AUDIT one
//	escape spawn            clone, fork, threads and an exec
//	escape personality      the query, ASLR off, READ_IMPLIES_EXEC
func kernelAttempt(args []string) (string, bool) {
	switch args[0] {
	case "btrfs":
		return btrfs(args[1]), true
	case "reflink":
		return reflink(args[1]), true
	case "ioctl":
		var out []string
		for _, a := range args[1:] {
			cmd, err := strconv.ParseUint(a, 0, 64)
			if err != nil {
				return err.Error(), true
			}
			_, _, errno := unix.Syscall(unix.SYS_IOCTL, ^uintptr(0), uintptr(cmd), 0)
			out = append(out, errnoName(errno))
		}
		return strings.Join(out, " "), true
	case "ioctl-sweep":
		return ioctlSweep(), true
	case "syscall":
		var out []string
		for _, a := range args[1:] {
			nr, err := strconv.ParseUint(a, 0, 64)
			if err != nil {
				return err.Error(), true
			}
			_, _, errno := unix.Syscall6(uintptr(nr), 0, 0, 0, 0, 0, 0)
			out = append(out, errnoName(errno))
		}
		return strings.Join(out, " "), true
	case "keys":
		return keys(), true
	case "mount-api":
		return mountAPI(), true
	case "vsock":
		fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0)
		if err != nil {
			return errnoName(err), true
		}
		unix.Close(fd)
		return "escaped: made an AF_VSOCK socket", true
	case "netlink":
		var out []string
		for _, proto := range []int{unix.NETLINK_ROUTE, unix.NETLINK_AUDIT} {
			fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
			if err != nil {
				out = append(out, errnoName(err))
				continue
			}
			unix.Close(fd)
			out = append(out, "ok")
		}
		return strings.Join(out, " "), true
	case "spawn":
		return spawn(), true
	case "personality":
		return personality(), true
	case "exit7":
		os.Exit(7)
	}
	return "", false
}

// btrfsVolArgs is struct btrfs_ioctl_vol_args.
type btrfsVolArgs struct {
	fd   int64
	name [4088]byte
}

const (
	btrfsIocSnapCreate   = 0x50009401 // _IOW(0x94, 1, struct btrfs_ioctl_vol_args)
	btrfsIocSubvolCreate = 0x5000940e // _IOW(0x94, 14, struct btrfs_ioctl_vol_args)
)

// btrfs makes a subvolume DIR/sub and a snapshot DIR/snap of the
// subvolume DIR is in: neither needs a privilege, and each escapes the
// sandbox's disk quota.
func btrfs(dir string) string {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err.Error()
	}
	defer unix.Close(fd)
	try := func(cmd uintptr, name string) string {
		var a btrfsVolArgs
		a.fd = int64(fd)
		copy(a.name[:], name)
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), cmd, uintptr(unsafe.Pointer(&a)))
		if errno == 0 {
			return "escaped:" + name
		}
		return errnoName(errno)
	}
	return try(btrfsIocSubvolCreate, "sub") + " " + try(btrfsIocSnapCreate, "snap")
}

// reflink shares a file's extents with two others (FICLONE, FICLONERANGE)
// and deduplicates them (FIDEDUPERANGE), then checks the copies read the
// same: what `cp --reflink` and deduplication tools do.
func reflink(dir string) string {
	data := bytes.Repeat([]byte("rung"), 16<<10) // 64 KiB, whole blocks
	src := filepath.Join(dir, "reflink-src")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		return err.Error()
	}
	in, err := os.Open(src)
	if err != nil {
		return err.Error()
	}
	defer in.Close()
	var dst [3]*os.File
	for i := range dst {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint("reflink-", i)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err.Error()
		}
		defer f.Close()
		dst[i] = f
	}
	clone, cloneRange, dedupe := dst[0], dst[1], dst[2]
	out := []string{errnoName(unix.IoctlFileClone(int(clone.Fd()), int(in.Fd())))}
	out = append(out, errnoName(unix.IoctlFileCloneRange(int(cloneRange.Fd()), &unix.FileCloneRange{
		Src_fd: int64(in.Fd()), Src_length: uint64(len(data)),
	})))
	if _, err := dedupe.Write(data); err != nil {
		return err.Error()
	}
	r := &unix.FileDedupeRange{Src_length: uint64(len(data)), Info: []unix.FileDedupeRangeInfo{{Dest_fd: int64(dedupe.Fd())}}}
	out = append(out, errnoName(unix.IoctlFileDedupeRange(int(in.Fd()), r)))
	for _, f := range dst {
		if got, err := os.ReadFile(f.Name()); err != nil || !bytes.Equal(got, data) {
			out = append(out, "differs:"+filepath.Base(f.Name()))
		}
	}
	return strings.Join(out, " ")
}

// ioctlSweep calls every ioctl type and number (size and direction 0) on
// descriptor -1 and counts the answers, for btrfs's type (0x94) and the
// others: EBADF means the call reached the kernel.
func ioctlSweep() string {
	counts := map[string]map[string]int{"btrfs": {}, "other": {}}
	for cmd := range uintptr(1 << 16) {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, ^uintptr(0), cmd, 0)
		group := "other"
		if cmd>>8 == 0x94 {
			group = "btrfs"
		}
		counts[group][errnoName(errno)]++
	}
	var out []string
	for _, group := range []string{"other", "btrfs"} {
		var answers []string
		for name, n := range counts[group] {
			answers = append(answers, fmt.Sprintf("%s=%d", name, n))
		}
		sort.Strings(answers)
		out = append(out, group+" "+strings.Join(answers, " "))
	}
	return strings.Join(out, "; ")
}

// keys tries the three keyring calls: keyrings are not namespaced, so a
// key added here would sit in the host's root user keyrings.
func keys() string {
	_, err := unix.AddKey("user", "rung-escape", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
	out := []string{errnoName(err)}
	_, err = unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 0, 0, 0)
	out = append(out, errnoName(err))
	_, err = unix.RequestKey("user", "rung-escape", "", 0)
	return strings.Join(append(out, errnoName(err)), " ")
}

// mountAPI tries mount(2), umount2 and each call of the new mount API.
func mountAPI() string {
	var out []string
	add := func(err error) { out = append(out, errnoName(err)) }
	add(unix.Mount("none", "/tmp", "tmpfs", 0, ""))
	add(unix.Unmount("/tmp", unix.MNT_DETACH))
	fd, err := unix.Fsopen("tmpfs", 0)
	add(err)
	if err == nil {
		unix.Close(fd)
	}
	fd, err = unix.Fspick(unix.AT_FDCWD, "/tmp", 0)
	add(err)
	if err == nil {
		unix.Close(fd)
	}
	fd, err = unix.OpenTree(unix.AT_FDCWD, "/tmp", unix.OPEN_TREE_CLONE)
	add(err)
	if err == nil {
		unix.Close(fd)
	}
	add(unix.MoveMount(unix.AT_FDCWD, "/tmp", unix.AT_FDCWD, "/workspace", 0))
	add(unix.MountSetattr(unix.AT_FDCWD, "/tmp", 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}))
	return strings.Join(out, " ")
}

// spawn makes a process with a bare clone and with fork (each child exits
// 7 at once, as Go's own fork does, with raw calls only), four threads at
// once, and runs a program, printing what each gave.
func spawn() string {
	var out []string
	for _, call := range []struct {
		name     string
		nr, flag uintptr
	}{{"clone", unix.SYS_CLONE, uintptr(unix.SIGCHLD)}, {"fork", unix.SYS_FORK, 0}} {
		pid, _, errno := unix.RawSyscall6(call.nr, call.flag, 0, 0, 0, 0, 0)
		if errno != 0 {
			out = append(out, call.name+" "+errnoName(errno))
			continue
		}
		if pid == 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 7, 0, 0)
		}
		var ws unix.WaitStatus
		if _, err := unix.Wait4(int(pid), &ws, 0, nil); err != nil {
			out = append(out, call.name+" wait "+errnoName(err))
			continue
		}
		out = append(out, fmt.Sprintf("%s %d", call.name, ws.ExitStatus()))
	}
	// Each goroutine holds its own OS thread until all four have one.
	var started, done sync.WaitGroup
	var mu sync.Mutex
	tids := map[int]bool{}
	started.Add(4)
	done.Add(4)
	release := make(chan struct{})
	for range 4 {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			mu.Lock()
			tids[unix.Gettid()] = true
			mu.Unlock()
			started.Done()
			<-release
		}()
	}
	started.Wait()
	close(release)
	done.Wait()
	out = append(out, fmt.Sprintf("threads %d", len(tids)))
	err := exec.Command("/proc/self/exe", "exit7").Run()
	if ee, ok := err.(*exec.ExitError); ok {
		out = append(out, fmt.Sprintf("exec %d", ee.ExitCode()))
	} else {
		out = append(out, fmt.Sprintf("exec %v", err))
	}
	return strings.Join(out, " ")
}

// personality reads the personality, turns ASLR off for itself and back
// on, and tries READ_IMPLIES_EXEC.
func personality() string {
	call := func(p uintptr) (uintptr, string) {
		r, _, errno := unix.Syscall(unix.SYS_PERSONALITY, p, 0, 0)
		return r, errnoName(errno)
	}
	old, query := call(0xffffffff)
	_, noASLR := call(old | 0x0040000)
	call(old)
	_, readExec := call(old | 0x0400000)
	call(old)
	return strings.Join([]string{query, noASLR, readExec}, " ")
}
