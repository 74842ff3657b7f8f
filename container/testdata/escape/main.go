// Command escape tries, from inside a container, the escapes that the
// container's seccomp profile and namespaces must stop. TestContainment
// copies it into a sandbox's workspace and runs it there; busybox alone
// cannot make these system calls.
//
// Each attempt prints one line: the errno name of each refused call
// (such as "EPERM"), or a line starting with "escaped" when it worked.
//
//	escape clone-userns    clone(CLONE_NEWUSER|CLONE_NEWUTS); the child sets the hostname
//	escape clone3-userns   the same through clone3
//	escape io-uring        io_uring_setup, io_uring_enter, io_uring_register
//	escape ptrace PID      PTRACE_ATTACH to PID
//	escape ptrace-child    PTRACE_ATTACH to a child of its own
//	escape tcp ADDR:PORT   connect, for the network policy's refusals
//	escape udp ADDR:PORT   connect, send and wait for an answer or an error
//
// and the calls of kernel.go. sethostname, pause and exit7 are what its
// children run.
package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "clone-userns":
		fmt.Println(newUserNamespace(0))
	case "clone3-userns":
		// Go's os/exec switches to clone3 for CLONE_NEWTIME, a flag clone
		// cannot carry (it overlaps clone's exit-signal byte).
		fmt.Println(newUserNamespace(unix.CLONE_NEWTIME))
	case "io-uring":
		fmt.Println(ioURing())
	case "ptrace":
		pid, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(attach(pid))
	case "ptrace-child":
		fmt.Println(attachChild())
	case "sethostname":
		// The child of clone-userns: hostname is guarded by CAP_SYS_ADMIN
		// over the UTS namespace, which it holds only if the escape worked.
		if err := unix.Sethostname([]byte("escaped")); err != nil {
			fmt.Println("sethostname in the new namespace:", errnoName(err))
			os.Exit(1)
		}
		fmt.Println("sethostname in the new namespace worked")
	case "pause":
		select {}
	case "tcp", "udp":
		// escape tcp|udp ADDR:PORT: connect (and for UDP send one
		// datagram and wait for an answer), printing the errno; a wait
		// that times out (10 s) prints ETIMEDOUT or EAGAIN.
		fmt.Println(probe(os.Args[1], os.Args[2]))
	default:
		out, ok := kernelAttempt(os.Args[1:])
		if !ok {
			usage()
		}
		fmt.Println(out)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: escape clone-userns|clone3-userns|io-uring|ptrace PID|ptrace-child|btrfs DIR|reflink DIR|ioctl CMD...|ioctl-sweep|syscall NR...|keys|mount-api|vsock|netlink|spawn|personality")
	os.Exit(2)
}

// newUserNamespace starts this program again in new user and UTS
// namespaces (plus extra clone flags), as root inside them so that it
// keeps its capabilities across exec, and has it set the hostname.
func newUserNamespace(extra uintptr) string {
	cmd := exec.Command("/proc/self/exe", "sethostname")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	// Inside root maps to 65534, not 0: mapping the parent's root needs
	// CAP_SETFCAP, which containers lack, and this attempt must fail only
	// on the clone. The child then becomes that root with setuid(0).
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWUTS | extra,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 65534, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 65534, Size: 1}},
		Credential:  &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true},
	}
	if err := cmd.Start(); err != nil {
		return errnoName(err)
	}
	cmd.Wait()
	return "escaped: clone worked; " + strings.TrimSpace(out.String())
}

// ioURing calls all three io_uring system calls. enter and register get
// a bad descriptor: without a filter they fail with EBADF, which still
// tells that the call reached the kernel.
func ioURing() string {
	var params [120]byte // struct io_uring_params
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
	setup := "escaped: io_uring_setup"
	if errno != 0 {
		setup = errnoName(errno)
	} else {
		unix.Close(int(fd))
	}
	_, _, enter := unix.Syscall6(unix.SYS_IO_URING_ENTER, ^uintptr(0), 0, 0, 0, 0, 0)
	_, _, register := unix.Syscall6(unix.SYS_IO_URING_REGISTER, ^uintptr(0), 0, 0, 0, 0, 0)
	return strings.Join([]string{setup, errnoName(enter), errnoName(register)}, " ")
}

func attach(pid int) string {
	// ptrace requests after the attach must come from the same thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.PtraceAttach(pid); err != nil {
		return errnoName(err)
	}
	var ws unix.WaitStatus
	unix.Wait4(pid, &ws, unix.WALL, nil)
	unix.PtraceDetach(pid)
	return fmt.Sprintf("escaped: attached to pid %d", pid)
}

func attachChild() string {
	cmd := exec.Command("/proc/self/exe", "pause")
	if err := cmd.Start(); err != nil {
		return "start child: " + err.Error()
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	if got := attach(cmd.Process.Pid); !strings.HasPrefix(got, "escaped") {
		return got
	}
	return "attached"
}

func probe(network, addr string) string {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return err.Error()
	}
	typ := unix.SOCK_STREAM
	if network == "udp" {
		typ = unix.SOCK_DGRAM
	}
	fd, err := unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return errnoName(err)
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 10}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
	if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}); err != nil || network == "tcp" {
		return errnoName(err)
	}
	if _, err := unix.Write(fd, []byte("probe")); err != nil {
		return errnoName(err)
	}
	_, err = unix.Read(fd, make([]byte, 64))
	return errnoName(err)
}

func errnoName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	if errno == 0 {
		return "ok"
	}
	if name := unix.ErrnoName(errno); name != "" {
		return name
	}
	return errno.Error()
}
