package network_test

import (
	"fmt"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/network"
)

// BenchmarkAttach is what a link adds to a container's start (Attach)
// and stop (Detach), in a namespace the manager makes (what gVisor needs;
// the namespace's creation is part of the cost) and in a running
// process's (a runc or crun container's, attached after it started; the
// process starts and stops outside the timing).
func BenchmarkAttach(b *testing.B) {
	for _, tc := range []struct {
		name    string
		process bool
	}{{"own-namespace", false}, {"process-namespace", true}} {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnv(b)
			b.ReportAllocs()
			var attach, detach []time.Duration
			for b.Loop() {
				ns, stop := "", func() {}
				if tc.process {
					b.StopTimer()
					ns, stop = startNamespaceProcess(b)
					b.StartTimer()
				}
				t0 := time.Now()
				l, err := e.m.Attach(b.Context(), rung.NewSandboxID(), ns, egress)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := e.m.Detach(b.Context(), l.Sandbox); err != nil {
					b.Fatal(err)
				}
				attach, detach = append(attach, t1.Sub(t0)), append(detach, time.Since(t1))
				b.StopTimer()
				stop()
				b.StartTimer()
			}
			report(b, "attach", attach)
			report(b, "detach", detach)
		})
	}
}

// startNamespaceProcess starts a process in a network namespace of its
// own, as processNamespace does, and returns a function that stops it.
func startNamespaceProcess(b *testing.B) (string, func()) {
	cmd := exec.Command("cat")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid), func() {
		stdin.Close()
		cmd.Wait()
	}
}

// BenchmarkSetPolicy switches a live link between egress and open.
func BenchmarkSetPolicy(b *testing.B) {
	e := newEnv(b)
	l := e.attach(b, egress)
	policies := []network.Policy{open, egress}
	b.ReportAllocs()
	var times []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := e.m.SetPolicy(b.Context(), l.Sandbox, policies[len(times)%2]); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	report(b, "set", times)
}

// report adds the p50 and p99 of times as metrics named after what.
func report(b *testing.B, what string, times []time.Duration) {
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	for _, p := range []int{50, 99} {
		b.ReportMetric(float64(times[len(times)*p/100].Microseconds()), fmt.Sprintf("%s-p%d-µs", what, p))
	}
}
