package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// TestLiveRestore restarts a real `rung serve` twice, first with kill -9
// while an exec runs, then gracefully (SIGTERM with the --live-restore
// flag), with a dev server and a ticking background process in a
// sandbox's container. After each restart the container is adopted: both
// processes still run and `rung ps` lists them, the ticker's output
// continues from the sequence number after the last one read, the dev
// server still answers, and the journal explains the lost exec
// (exec.lost) and the adoption (container.adopted). A sandbox whose
// container died while no daemon ran gets container.exited with reason
// daemon_restart and process.lost for its process.
func TestLiveRestore(t *testing.T) {
	bin := rungBinary(t)
	data := t.TempDir()
	p := startServe(t, bin, data, "--default-image", "lite")
	c := client.New(p.addr, client.WithToken(p.token))
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := string(sb.ID)
	if _, err := c.Exec(ctx, id, client.ExecRequest{Command: "echo served > /workspace/index.html", Backend: rung.BackendContainer}); err != nil {
		t.Fatal(err)
	}
	server, err := c.StartProcess(ctx, id, client.ProcessRequest{Command: "exec httpd -f -p 8080 -h /workspace"})
	if err != nil {
		t.Fatal(err)
	}
	ticker, err := c.StartProcess(ctx, id, client.ProcessRequest{Command: "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.02; done"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitPort(ctx, id, 8080, time.Minute); err != nil {
		t.Fatal(err)
	}
	// A sandbox whose container will die while no daemon runs.
	doomed, err := c.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartProcess(ctx, string(doomed.ID), client.ProcessRequest{Command: "sleep 1000"}); err != nil {
		t.Fatal(err)
	}
	last := lastSeq(t, c, id, ticker.ID, 0)

	// An exec in flight when the daemon is killed.
	inflight := make(chan struct{})
	go func() { // ends when the killed daemon drops the connection
		defer close(inflight)
		c.Exec(context.WithoutCancel(ctx), id, client.ExecRequest{Command: "sleep 30", Backend: rung.BackendContainer})
	}()
	waitJournalCount(t, c, id, "exec.started", 2)
	p.cmd.Process.Kill()
	<-p.done
	<-inflight
	// The doomed sandbox's container dies with no daemon to see it.
	killContainerOf(t, data, string(doomed.ID))

	for round, restart := range []string{"after kill -9", "after a graceful stop"} {
		flags := []string{"--default-image", "lite", "--live-restore"}
		if round == 1 {
			flags[2] = "--live-restore=false" // this daemon's stop stops everything
		}
		p = startServe(t, bin, data, flags...)
		c = client.New(p.addr, client.WithToken(p.token))
		procs, err := c.Processes(ctx, id)
		if err != nil {
			t.Fatalf("%s: processes: %v", restart, err)
		}
		running := map[string]bool{}
		for _, pr := range procs {
			running[pr.ID] = pr.Running
		}
		if !running[server.ID] || !running[ticker.ID] {
			t.Fatalf("%s: processes %+v, want the server and the ticker running", restart, procs)
		}
		next := lastSeq(t, c, id, ticker.ID, last)
		if next <= last {
			t.Errorf("%s: ticker output did not continue past seq %d", restart, last)
		}
		last = next
		res, err := c.Exec(ctx, id, client.ExecRequest{Command: "wget -qO- http://127.0.0.1:8080/index.html", Backend: rung.BackendContainer})
		if err != nil || string(res.Stdout) != "served\n" {
			t.Errorf("%s: the dev server: %+v, %v", restart, res, err)
		}
		if n := len(journalData(t, c, id, "container.adopted")); n != round+1 {
			t.Errorf("%s: %d container.adopted entries, want %d", restart, n, round+1)
		}
		if round == 0 {
			if len(journalData(t, c, id, "exec.lost")) != 1 {
				t.Errorf("%s: no exec.lost for the exec in flight: %v", restart, journalTypes(t, c, id))
			}
			exited := journalData(t, c, string(doomed.ID), "container.exited")
			if len(exited) != 1 || exited[0]["reason"] != "daemon_restart" || len(journalData(t, c, string(doomed.ID), "process.lost")) != 1 {
				t.Errorf("%s: the dead container's sandbox: %v", restart, journalTypes(t, c, string(doomed.ID)))
			}
			sbd, err := c.Get(ctx, string(doomed.ID))
			if err != nil || sbd.State != rung.StateReady {
				t.Errorf("%s: the dead container's sandbox is %+v, %v; want ready", restart, sbd, err)
			}
			p.stop(t) // SIGTERM: live restore leaves the containers running
		}
	}
	p.stop(t) // --live-restore=false: this time the containers stop
	p = startServe(t, bin, data, "--default-image", "lite", "--live-restore=false")
	defer p.stop(t)
	c = client.New(p.addr, client.WithToken(p.token))
	// The stop took the containers down with the daemon and said so:
	// both processes' exits, then container.stopped (daemon_stop).
	types := journalTypes(t, c, id)
	stopped := journalData(t, c, id, "container.stopped")
	if len(stopped) != 1 || stopped[0]["reason"] != "daemon_stop" || types[len(types)-1] != "container.stopped" {
		t.Errorf("journal after a stop without live restore: %v; want container.stopped (daemon_stop) last", types)
	}
	ended := map[any]bool{}
	for _, d := range journalData(t, c, id, "process.exited") {
		ended[d["process"]] = true
	}
	if !ended[server.ID] || !ended[ticker.ID] {
		t.Errorf("process.exited after a stop without live restore: %v; want the server and the ticker", ended)
	}
	if sb, err := c.Get(ctx, id); err != nil || sb.State != rung.StateReady {
		t.Errorf("sandbox after a stop without live restore: %+v, %v; want ready", sb, err)
	}
	if procs, err := c.Processes(ctx, id); err == nil {
		t.Errorf("processes after a stop without live restore: %+v; want no container", procs)
	}
}

// killContainerOf kills the init of sandbox id's container (as a crash or
// the OOM killer would) and waits until it is gone.
func killContainerOf(t *testing.T, data, id string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(data, "containers", "*", id, "pid"))
	if len(files) != 1 {
		t.Fatalf("pid file of %s's container: %v", id, files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Kill(pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err != unix.EINTR {
			return
		}
	}
}

// lastSeq follows process pid's output after seq after until it has read
// a few more frames, and returns the last sequence number read.
func lastSeq(t *testing.T, c *client.Client, id, pid string, after int64) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	last, n := after, 0
	errEnough := errors.New("enough")
	_, err := c.ProcessOutput(ctx, id, pid, after, true, func(f client.OutputFrame) error {
		if f.Seq != last+1 && last > 0 {
			t.Errorf("output of %s: seq %d after %d", pid, f.Seq, last)
		}
		if !strings.Contains(string(f.Data), "tick") {
			t.Errorf("output of %s: %q", pid, f.Data)
		}
		last = f.Seq
		if n++; n >= 3 {
			return errEnough
		}
		return nil
	})
	if !errors.Is(err, errEnough) && n < 3 {
		t.Fatalf("output of %s after %d: %v", pid, after, err)
	}
	return last
}

// waitJournalCount waits (bounded) until the sandbox's journal holds n
// entries of typ.
func waitJournalCount(t *testing.T, c *client.Client, id, typ string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	seen := 0
	errFound := errors.New("found")
	err := c.Events(ctx, id, client.EventsOptions{Follow: true, JournalOnly: true}, func(e client.Event) error {
		if e.Type == typ {
			if seen++; seen == n {
				return errFound
			}
		}
		return nil
	})
	if !errors.Is(err, errFound) {
		t.Fatalf("%d %s entries in the journal, want %d (%v)", seen, typ, n, err)
	}
}
