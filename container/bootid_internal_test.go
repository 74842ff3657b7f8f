package container

import (
	"slices"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// The boot id's mount is a runc hook and, under crun and runsc, a mount of
// the spec listed in readonlyPaths after /proc/sys (whose remount would
// otherwise leave crun's copy of it writable). crun gets no hook: it fails
// a start when a hook exits before it has written the container's state
// to the hook's input, which mount(8) does when it is quick.
func TestBootIDSpec(t *testing.T) {
	in := plainSpecInput()
	in.BootID = "/ids/sbx"
	spec := buildSpec(in) // crun, runsc
	if spec.Hooks != nil {
		t.Errorf("hooks %+v without mount(8): want none", spec.Hooks)
	}
	if !slices.ContainsFunc(spec.Mounts, func(m specs.Mount) bool { return m.Destination == BootIDPath && m.Source == in.BootID }) {
		t.Error("no mount of the boot id in the spec")
	}
	ro := spec.Linux.ReadonlyPaths
	if i, j := slices.Index(ro, "/proc/sys"), slices.Index(ro, BootIDPath); i < 0 || j < i {
		t.Errorf("readonlyPaths %q: want the boot id after /proc/sys", ro)
	}

	in.MountBin = "/usr/bin/mount" // runc
	spec = buildSpec(in)
	if spec.Hooks == nil || len(spec.Hooks.CreateContainer) != 1 || spec.Hooks.CreateContainer[0].Path != in.MountBin {
		t.Errorf("hooks %+v, want mount(8) as the one createContainer hook", spec.Hooks)
	}
	if slices.ContainsFunc(spec.Mounts, func(m specs.Mount) bool { return m.Destination == BootIDPath }) || slices.Contains(spec.Linux.ReadonlyPaths, BootIDPath) {
		t.Error("a spec mount of the boot id under runc, which refuses mounts under /proc")
	}
}
