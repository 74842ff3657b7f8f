// Package testenv lets tests declare what real parts of the host they need
// (root, btrfs, runc, bash). A missing part skips the test on a laptop and
// fails it when RUNG_REQUIRE_ALL=1 (CI), so CI never passes by skipping.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// Require skips t (or fails it under RUNG_REQUIRE_ALL=1) unless every
// named part is present. Parts: "root", and any executable name on PATH
// ("btrfs", "runc", "runsc", "crun", "bash", "git", "busybox").
func Require(t testing.TB, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if ok, why := have(p); !ok {
			if os.Getenv("RUNG_REQUIRE_ALL") == "1" {
				t.Fatalf("required part %s missing: %s (RUNG_REQUIRE_ALL=1)", p, why)
			}
			t.Skipf("skipping: %s missing: %s", p, why)
		}
	}
}

func have(part string) (bool, string) {
	switch part {
	case "root":
		if os.Geteuid() != 0 {
			return false, "not running as root"
		}
		return true, ""
	default:
		if _, err := exec.LookPath(part); err != nil {
			return false, err.Error()
		}
		return true, ""
	}
}

// ImageCache is the image store tests share across packages and runs
// (container/, cmd/rung): the Debian images it holds (base, debian-full,
// ...) are built there once, with debootstrap from Debian's mirror, and
// image.Store.Ensure makes concurrent test binaries wait for one build
// rather than each run their own.
const ImageCache = "/var/cache/rung-test/images"
