package shell

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// NewWithoutScheduler is New for execs that run outside any scheduler,
// with no CPU budget: the baseline of the scheduler's benchmarks.
func NewWithoutScheduler(cfg Config) *Shell {
	s := New(cfg)
	s.noSched = true
	return s
}

// SetSettledAfter sets how old a startup file's change time must be for
// its text to be kept, until the test ends.
func SetSettledAfter(t testing.TB, d time.Duration) {
	old := settledAfter
	settledAfter = d
	t.Cleanup(func() { settledAfter = old })
}

// Settled is settled, for tests of its bound.
func Settled(ctime, now time.Time) bool {
	return settled(unix.NsecToTimespec(ctime.UnixNano()), now)
}
