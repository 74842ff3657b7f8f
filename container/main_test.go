package container

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestMain lets the test binary double as a child that loads a seccomp
// program and exits (see loadInChild): a filter, once installed, stays
// with the process.
func TestMain(m *testing.M) {
	if path := os.Getenv("RUNG_SECCOMP_LOAD_CHECK"); path != "" {
		if err := loadFilter(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	for _, f := range AfterTests {
		f()
	}
	os.Exit(code)
}

// AfterTests run once every test of the binary is done: the external
// tests' static builds (the rung binary is about 50 MB) would otherwise
// pile up in the temporary directory run after run.
var AfterTests []func()

// loadInChild has a child process install prog with seccomp(2), so that
// the kernel's checker judges it (jumps in range, a return on every path).
func loadInChild(prog []sockFilter) error {
	f, err := os.CreateTemp("", "rung-bpf-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	f.Write(encodeFilter(prog))
	f.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "RUNG_SECCOMP_LOAD_CHECK="+f.Name())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// loadFilter installs the program in file path in this process.
func loadFilter(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	filters := make([]unix.SockFilter, len(b)/8)
	if err := binary.Read(bytes.NewReader(b), binary.LittleEndian, filters); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(filters)), Filter: &filters[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("seccomp(SET_MODE_FILTER): %w", errno)
	}
	return nil
}
