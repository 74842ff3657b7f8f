package container

import (
	"debug/elf"
	"fmt"
)

// CheckStatic returns nil when path is a statically linked ELF binary,
// which the agent must be: it runs inside images that may have no libc
// (lite is busybox alone). `make build` builds rung with CGO_ENABLED=0.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("agent binary %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("agent binary %s is dynamically linked; build rung with CGO_ENABLED=0", path)
		}
	}
	return nil
}
