package shell

// NewWithoutScheduler is New for execs that run outside any scheduler,
// with no CPU budget: the baseline of the scheduler's benchmarks.
func NewWithoutScheduler(cfg Config) *Shell {
	s := New(cfg)
	s.noSched = true
	return s
}
