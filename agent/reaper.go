package agent

import (
	"os"
	"os/signal"
	"sync"

	"golang.org/x/sys/unix"
)

// reaper collects every child's exit status. As PID 1 the agent inherits
// orphans, so one loop must call wait4(-1) for all of them; commands the
// agent started are registered under the same lock that starts them, so
// their status can never be reaped before someone waits for it, and
// orphans' statuses are simply dropped.
type reaper struct {
	mu      sync.Mutex                   // guards waiting; held while starting a process
	waiting map[int]chan unix.WaitStatus // pid -> receives its status once

	done chan struct{} // closed when run returns
}

func newReaper() *reaper {
	return &reaper{waiting: map[int]chan unix.WaitStatus{}, done: make(chan struct{})}
}

// run reaps children on every SIGCHLD until stop is closed.
func (r *reaper) run(stop <-chan struct{}) {
	defer close(r.done)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, unix.SIGCHLD)
	defer signal.Stop(sig)
	for {
		r.reapAll()
		select {
		case <-sig:
		case <-stop:
			return
		}
	}
}

func (r *reaper) reapAll() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
		r.mu.Lock()
		if ch, ok := r.waiting[pid]; ok {
			delete(r.waiting, pid)
			ch <- ws
		}
		r.mu.Unlock()
	}
}

// start runs startFn (which starts one process and returns its pid) with
// the lock held, and returns a channel that receives that process's exit
// status.
func (r *reaper) start(startFn func() (int, error)) (int, <-chan unix.WaitStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := startFn()
	if err != nil {
		return 0, nil, err
	}
	ch := make(chan unix.WaitStatus, 1) // the reaper must never block on it
	r.waiting[pid] = ch
	return pid, ch, nil
}
