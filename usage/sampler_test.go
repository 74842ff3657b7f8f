package usage_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"rung.dev/rung"
	"rung.dev/rung/usage"
)

// fakeSource reports what its test sets: a reading per running sandbox.
type fakeSource struct {
	mu       sync.Mutex
	readings map[rung.SandboxID]usage.Reading
	calls    int
}

func (f *fakeSource) set(r usage.Reading) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readings == nil {
		f.readings = map[rung.SandboxID]usage.Reading{}
	}
	f.readings[r.Sandbox] = r
}

func (f *fakeSource) stop(id rung.SandboxID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.readings, id)
}

func (f *fakeSource) read(_ context.Context, dst []usage.Reading) []usage.Reading {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	for _, r := range f.readings {
		dst = append(dst, r)
	}
	return dst
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	sbA = rung.SandboxID("sbx_aaaaaaaaaaaaaaaaaaaaaaaaaa")
	sbB = rung.SandboxID("sbx_bbbbbbbbbbbbbbbbbbbbbbbbbb")
)

// The tests below drive Sample with the times they choose: the sampler's
// clock is the caller's.

func TestSampleCPUPercent(t *testing.T) {
	t.Parallel()
	src := &fakeSource{}
	s := usage.New(usage.Config{Source: src.read, Interval: 5 * time.Second})
	steps := []struct {
		cpu  time.Duration
		want float64
	}{
		{2 * time.Second, 0},                          // first sample: no rate
		{2*time.Second + 2500*time.Millisecond, 50},   // 2.5 s in 5 s
		{2*time.Second + 12500*time.Millisecond, 200}, // 10 s in 5 s: two cores
		{1 * time.Second, 20},                         // restarted: 1 s since, charged to the interval
	}
	var want []usage.Sample
	for i, st := range steps {
		now := t0.Add(time.Duration(i) * 5 * time.Second)
		src.set(usage.Reading{Sandbox: sbA, CPU: st.cpu, MemoryBytes: int64(i) << 20, MemoryPeakBytes: 8 << 20, DiskBytes: 4096})
		s.Sample(t.Context(), now)
		want = append(want, usage.Sample{Time: now, CPU: st.cpu, MemoryBytes: int64(i) << 20, MemoryPeakBytes: 8 << 20, DiskBytes: 4096, CPUPercent: st.want})
	}
	got := s.Samples(sbA, time.Time{}, time.Time{})
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
	if got := s.Samples(sbB, time.Time{}, time.Time{}); got != nil {
		t.Errorf("samples of a sandbox never read = %v, want nil", got)
	}
}

func TestSampleRange(t *testing.T) {
	t.Parallel()
	src := &fakeSource{}
	s := usage.New(usage.Config{Source: src.read, Interval: time.Second})
	src.set(usage.Reading{Sandbox: sbA})
	for i := range 10 {
		s.Sample(t.Context(), t0.Add(time.Duration(i)*time.Second))
	}
	tests := []struct {
		name       string
		start, end time.Time
		first      time.Time
		n          int
	}{
		{"all", time.Time{}, time.Time{}, t0, 10},
		{"from", t0.Add(7 * time.Second), time.Time{}, t0.Add(7 * time.Second), 3},
		{"until", time.Time{}, t0.Add(2 * time.Second), t0, 3},
		{"between, inclusive", t0.Add(3 * time.Second), t0.Add(5 * time.Second), t0.Add(3 * time.Second), 3},
		{"between samples", t0.Add(3500 * time.Millisecond), t0.Add(3600 * time.Millisecond), time.Time{}, 0},
	}
	for _, tc := range tests {
		got := s.Samples(sbA, tc.start, tc.end)
		if len(got) != tc.n || tc.n > 0 && !got[0].Time.Equal(tc.first) {
			t.Errorf("%s: %d samples from %v, want %d from %v", tc.name, len(got), got, tc.n, tc.first)
		}
	}
}

// TestRingBounded: a ring holds Keep/Interval samples, the newest.
func TestRingBounded(t *testing.T) {
	t.Parallel()
	src := &fakeSource{}
	s := usage.New(usage.Config{Source: src.read, Interval: 5 * time.Second, Keep: time.Minute})
	for i := range 30 {
		src.set(usage.Reading{Sandbox: sbA, CPU: time.Duration(i) * time.Second})
		s.Sample(t.Context(), t0.Add(time.Duration(i)*5*time.Second))
	}
	got := s.Samples(sbA, time.Time{}, time.Time{})
	if len(got) != 12 {
		t.Fatalf("%d samples kept, want 12 (a minute at 5 s)", len(got))
	}
	for i, smp := range got {
		if want := t0.Add(time.Duration(18+i) * 5 * time.Second); !smp.Time.Equal(want) || smp.CPU != time.Duration(18+i)*time.Second {
			t.Errorf("sample %d at %v (cpu %v), want the one at %v", i, smp.Time, smp.CPU, want)
		}
	}
}

// TestStoppedAndForgotten: a sandbox no longer read keeps its samples
// for Keep, then loses them; Forget drops them at once; Current lists
// only sandboxes read in the last two intervals.
func TestStoppedAndForgotten(t *testing.T) {
	t.Parallel()
	src := &fakeSource{}
	s := usage.New(usage.Config{Source: src.read, Interval: 5 * time.Second, Keep: time.Minute})
	src.set(usage.Reading{Sandbox: sbA, MemoryBytes: 1})
	src.set(usage.Reading{Sandbox: sbB, MemoryBytes: 2})
	s.Sample(t.Context(), t0)
	if cur := s.Current(t0.Add(time.Second)); len(cur) != 2 {
		t.Errorf("Current = %v, want both", cur)
	}
	src.stop(sbA)
	s.Sample(t.Context(), t0.Add(5*time.Second))
	s.Sample(t.Context(), t0.Add(10*time.Second))
	s.Sample(t.Context(), t0.Add(15*time.Second))
	if cur := s.Current(t0.Add(15 * time.Second)); len(cur) != 1 || cur[0].Sandbox != sbB || cur[0].MemoryBytes != 2 {
		t.Errorf("Current after A stopped = %+v, want B's alone", cur)
	}
	if got := s.Samples(sbA, time.Time{}, time.Time{}); len(got) != 1 {
		t.Errorf("stopped sandbox kept %d samples, want its 1 until Keep passes", len(got))
	}
	s.Sample(t.Context(), t0.Add(time.Minute+time.Second))
	if got := s.Samples(sbA, time.Time{}, time.Time{}); got != nil {
		t.Errorf("stopped sandbox kept %v past Keep", got)
	}
	s.Forget(sbB)
	if got := s.Samples(sbB, time.Time{}, time.Time{}); got != nil {
		t.Errorf("forgotten sandbox kept %v", got)
	}
}

func TestMaxSandboxes(t *testing.T) {
	t.Parallel()
	src := &fakeSource{}
	s := usage.New(usage.Config{Source: src.read, Interval: time.Second, MaxSandboxes: 1})
	src.set(usage.Reading{Sandbox: sbA})
	s.Sample(t.Context(), t0)
	src.stop(sbA)
	src.set(usage.Reading{Sandbox: sbB})
	s.Sample(t.Context(), t0.Add(time.Second))
	if s.Samples(sbA, time.Time{}, time.Time{}) != nil || s.Samples(sbB, time.Time{}, time.Time{}) == nil {
		t.Error("past MaxSandboxes, the ring sampled longest ago should go, the newest stay")
	}
}

// TestRun runs the sampler on synctest's fake clock: a pass every
// Interval, each announced on Sampled, none after ctx ends.
func TestRun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{}
		src.set(usage.Reading{Sandbox: sbA, CPU: time.Second})
		var passes int
		s := usage.New(usage.Config{Source: src.read, Interval: 5 * time.Second,
			Observe: func(took time.Duration, n int) {
				if n != 1 {
					t.Errorf("pass read %d sandboxes, want 1", n)
				}
				passes++
			}})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { // ends when cancel runs
			defer close(done)
			s.Run(ctx)
		}()
		start := time.Now()
		for range 3 {
			<-s.Sampled()
		}
		if took := time.Since(start); took != 15*time.Second {
			t.Errorf("three passes took %v on the fake clock, want 15s", took)
		}
		got := s.Samples(sbA, time.Time{}, time.Time{})
		if len(got) != 3 || !got[0].Time.Equal(start.Add(5*time.Second)) {
			t.Errorf("samples = %v, want 3 from %v", got, start.Add(5*time.Second))
		}
		cancel()
		<-done
		time.Sleep(time.Minute) // the fake clock: no pass may follow
		synctest.Wait()
		if passes != 3 || src.calls != 3 {
			t.Errorf("%d passes, %d source calls after cancel; want 3", passes, src.calls)
		}
	})
}
