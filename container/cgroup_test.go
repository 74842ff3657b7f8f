package container

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"rung.dev/rung/internal/testenv"
)

// The primer must take the lock without moving the daemon anywhere.
func TestTakeCgroupLockMovesNothing(t *testing.T) {
	testenv.Require(t, "root")
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		t.Skip("no cgroup v1 memory hierarchy")
	}
	before, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if err := takeCgroupLock(); err != nil {
		t.Fatalf("takeCgroupLock: %v", err)
	}
	after, _ := os.ReadFile("/proc/self/cgroup")
	if diff := cmp.Diff(string(before), string(after)); diff != "" {
		t.Errorf("the process moved (-before +after):\n%s", diff)
	}
}
