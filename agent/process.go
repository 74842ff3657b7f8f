package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// ProcessRequest starts a long-running command in the background.
type ProcessRequest struct {
	Argv    []string `json:"argv,omitempty"`
	Command string   `json:"command,omitempty"` // run under Shell -c when Argv is empty
	Shell   string   `json:"shell,omitempty"`
	Env     []string `json:"env,omitempty"`
	Dir     string   `json:"dir,omitempty"`
	// User is who the process runs as; nil is root (see
	// [ExecRequest].User).
	User *Credential `json:"user,omitempty"`
	// PTY runs the process on a new pseudo-terminal of this size, as
	// [ExecRequest].PTY: its output is one "stdout" stream, its stdin
	// writes are typed at the terminal (which has no end of input), and
	// POST /v1/processes/{id}/resize changes the size.
	PTY *TermSize `json:"pty,omitempty"`
}

// ProcessInfo describes a background process.
type ProcessInfo struct {
	ID      string    `json:"id"`
	Pid     int       `json:"pid"`
	Argv    []string  `json:"argv"`
	Started time.Time `json:"started"`
	Running bool      `json:"running"`
	Exit    *Exit     `json:"exit,omitempty"`
	// FirstSeq is the oldest output frame still retained; output before
	// it was dropped to stay within [MaxRetainedOutput].
	FirstSeq int64 `json:"first_seq"`
	LastSeq  int64 `json:"last_seq"`
}

// MaxRetainedOutput bounds the output kept per background process; the
// oldest frames go first.
const MaxRetainedOutput = 8 << 20

// maxProcesses bounds the background processes running at once per
// container; exited ones do not count. Starting one more fails with
// [errTooManyProcesses].
const maxProcesses = 256

var errTooManyProcesses = errors.New("too many background processes")

// Exited processes stay listed, their output and exit readable, until
// newer exits push them out, oldest exit first: at most maxExited of them,
// holding at most maxExitedOutput bytes of output between them. 64 is a
// long history of builds, test runs and one-shot servers to look back on;
// the byte bound matters more, since 64 full buffers ([MaxRetainedOutput]
// each) would be 512 MiB, twice a lite sandbox's memory, and the agent's
// memory is the container's. 32 MiB keeps the last four full buffers.
// A dropped process is gone: asking for it is asking for an unknown id.
const (
	maxExited       = 64
	maxExitedOutput = 32 << 20
)

type process struct {
	id string
	// Set before the process is listed, fixed after.
	pid     int
	argv    []string
	started time.Time
	stdin   *os.File
	term    *terminal // its terminal, or nil; stdin is then the terminal's main end

	// Guarded by server.mu: where the process is in the table's life, for
	// the cap and for pruning.
	listed bool      // false while its slot is reserved and it starts
	ended  time.Time // when it exited; zero while starting or running
	kept   int64     // output bytes retained once it exited

	mu      sync.Mutex // guards the fields below
	frames  []Frame    // retained output, in seq order
	bytes   int64      // data bytes in frames
	nextSeq int64
	exit    *Exit
	changed chan struct{} // closed and replaced on every new frame or exit
}

func (p *process) append(stream string, data []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextSeq++
	p.frames = append(p.frames, Frame{Seq: p.nextSeq, Stream: stream, Data: append([]byte(nil), data...)})
	p.bytes += int64(len(data))
	for p.bytes > MaxRetainedOutput && len(p.frames) > 1 {
		p.bytes -= int64(len(p.frames[0].Data))
		p.frames = p.frames[1:]
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *process) info() ProcessInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	in := ProcessInfo{ID: p.id, Pid: p.pid, Argv: p.argv, Started: p.started, Running: p.exit == nil, Exit: p.exit, LastSeq: p.nextSeq}
	if len(p.frames) > 0 {
		in.FirstSeq = p.frames[0].Seq
	}
	return in
}

// since returns retained frames after seq, the exit if it has happened,
// and a channel closed on the next change.
func (p *process) since(after int64) ([]Frame, *Exit, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Frames are in seq order: a follower that is caught up (the host
	// follows every process to learn of its exit) costs a search, not a
	// pass over up to MaxRetainedOutput of frames, per new frame.
	i := sort.Search(len(p.frames), func(i int) bool { return p.frames[i].Seq > after })
	return slices.Clone(p.frames[i:]), p.exit, p.changed
}

func newProcessID() string {
	var b [8]byte
	rand.Read(b[:])
	return "prc_" + hex.EncodeToString(b[:])
}

// startProcess starts req in the background, or fails with
// [errTooManyProcesses] at the cap.
func (s *server) startProcess(req ProcessRequest) (*process, error) {
	p := &process{id: newProcessID(), changed: make(chan struct{})}
	// The slot is taken before the spawn, so that concurrent starts cannot
	// all pass the count and then all insert.
	s.mu.Lock()
	if s.runningLocked() >= maxProcesses {
		s.mu.Unlock()
		return nil, errTooManyProcesses
	}
	s.procs[p.id] = p
	s.mu.Unlock()
	drop := func() {
		s.mu.Lock()
		delete(s.procs, p.id)
		s.mu.Unlock()
	}
	if err := s.begin(); err != nil {
		drop()
		return nil, err
	}
	if req.PTY != nil {
		if err := s.startTerminalProcess(p, req); err != nil {
			s.running.Done()
			drop()
			return nil, err
		}
		return p, nil
	}
	sp, err := s.spawn(command{argv: req.Argv, command: req.Command, shell: req.Shell, dir: req.Dir, env: req.Env, user: req.User})
	if err != nil {
		s.running.Done()
		drop()
		return nil, err
	}
	pid, status, stdinW, outR, errR := sp.pid, sp.status, sp.stdin, sp.stdout, sp.stderr
	p.pid, p.argv, p.started, p.stdin = pid, sp.argv, time.Now(), stdinW
	s.mu.Lock()
	p.listed = true
	s.mu.Unlock()

	var copiers sync.WaitGroup
	pump := func(name string, r *os.File) {
		defer copiers.Done()
		defer r.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				p.append(name, buf[:n])
			}
			if err != nil {
				return
			}
		}
	}
	copiers.Add(2)
	go pump("stdout", outR) // end at EOF
	go pump("stderr", errR)
	go func() { // ends when the process exits and its output is drained
		defer s.running.Done()
		ws := <-status
		unix.Kill(-pid, unix.SIGKILL) // the group goes with its leader
		copiers.Wait()
		stdinW.Close()
		s.exited(p, exitOf(ws))
	}()
	return p, nil
}

// exited records p's exit, once its output is complete.
func (s *server) exited(p *process, e Exit) {
	s.forget(p.pid)
	// Out of the cap before the exit shows, so that a client that saw
	// it can start another at once.
	s.retire(p)
	p.mu.Lock()
	p.exit = &e
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// runningLocked counts the processes that hold a slot under the cap:
// starting or running.
func (s *server) runningLocked() int {
	n := 0
	for _, p := range s.procs {
		if p.ended.IsZero() {
			n++
		}
	}
	return n
}

// retire marks p exited, once its output is complete, and drops the
// oldest exited processes beyond maxExited and maxExitedOutput. p itself
// stays: it is the newest, and its output fits in maxExitedOutput.
func (s *server) retire(p *process) {
	p.mu.Lock()
	kept := p.bytes
	p.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	p.ended, p.kept = time.Now(), kept
	var exited []*process
	var total int64
	for _, q := range s.procs {
		if !q.ended.IsZero() {
			exited = append(exited, q)
			total += q.kept
		}
	}
	slices.SortFunc(exited, func(a, b *process) int { return a.ended.Compare(b.ended) })
	for len(exited) > maxExited || total > maxExitedOutput {
		delete(s.procs, exited[0].id)
		total -= exited[0].kept
		exited = exited[1:]
	}
}

// process looks up the request's process; a dropped one is as unknown as
// an id never given out.
func (s *server) process(w http.ResponseWriter, r *http.Request) *process {
	s.mu.Lock()
	p := s.procs[r.PathValue("id")]
	if p != nil && !p.listed {
		p = nil
	}
	s.mu.Unlock()
	if p == nil {
		http.Error(w, "no such process", http.StatusNotFound)
	}
	return p
}

func (s *server) handleStartProcess(w http.ResponseWriter, r *http.Request) {
	var req ProcessRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "bad process request: "+err.Error(), http.StatusBadRequest)
		return
	}
	p, err := s.startProcess(req)
	if errors.Is(err, errTooManyProcesses) {
		http.Error(w, err.Error(), http.StatusTooManyRequests)
		return
	}
	if errors.Is(err, errStopping) {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	if errors.Is(err, errBadSize) {
		http.Error(w, "bad process request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err != nil {
		http.Error(w, startError(err), http.StatusUnprocessableEntity)
		return
	}
	writeJSON(w, p.info())
}

func (s *server) handleListProcesses(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	out := make([]ProcessInfo, 0, len(s.procs))
	for _, p := range s.procs {
		if p.listed {
			out = append(out, p.info())
		}
	}
	s.mu.Unlock()
	writeJSON(w, out)
}

// handleOutput streams frames after ?after=N; with ?follow=1 it keeps
// streaming until the process exits, then sends the exit frame.
func (s *server) handleOutput(w http.ResponseWriter, r *http.Request) {
	p := s.process(w, r)
	if p == nil {
		return
	}
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	follow := r.URL.Query().Get("follow") == "1"
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	for {
		frames, exit, changed := p.since(after)
		for _, f := range frames {
			if enc.Encode(f) != nil {
				return
			}
			after = f.Seq
		}
		if exit != nil {
			enc.Encode(Frame{Seq: after + 1, Exit: exit})
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		if !follow {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

func (s *server) handleStdin(w http.ResponseWriter, r *http.Request) {
	p := s.process(w, r)
	if p == nil {
		return
	}
	closeAfter := r.URL.Query().Get("close") == "1"
	if closeAfter && p.term != nil {
		http.Error(w, "close: a terminal has no end of input; send ^D (0x04)", http.StatusBadRequest)
		return
	}
	if _, err := io.Copy(p.stdin, http.MaxBytesReader(w, r.Body, 16<<20)); err != nil {
		http.Error(w, "write stdin: "+err.Error(), http.StatusConflict)
		return
	}
	if closeAfter {
		p.stdin.Close()
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) handleSignal(w http.ResponseWriter, r *http.Request) {
	p := s.process(w, r)
	if p == nil {
		return
	}
	sig := unix.SignalNum(r.URL.Query().Get("signal"))
	if sig == 0 {
		http.Error(w, "unknown signal", http.StatusBadRequest)
		return
	}
	if p.info().Running {
		unix.Kill(-p.pid, sig)
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleReady answers 200 once something accepts TCP connections on
// ?port of 127.0.0.1 or [::1] inside the container, polling until
// ?timeout_ms.
func (s *server) handleReady(w http.ResponseWriter, r *http.Request) {
	port, err := strconv.Atoi(r.URL.Query().Get("port"))
	if err != nil || port <= 0 || port > 65535 {
		http.Error(w, "bad port", http.StatusBadRequest)
		return
	}
	ms, _ := strconv.Atoi(r.URL.Query().Get("timeout_ms"))
	ctx, cancel := context.WithTimeout(r.Context(), time.Duration(max(ms, 1))*time.Millisecond)
	defer cancel()
	for delay := time.Millisecond; ; delay = min(delay*2, 100*time.Millisecond) {
		if acceptsLoopback(ctx, port) {
			w.WriteHeader(http.StatusOK)
			return
		}
		select {
		case <-ctx.Done():
			http.Error(w, "port not ready", http.StatusGatewayTimeout)
			return
		case <-time.After(delay):
		}
	}
}

// loopbacks are where a server "on localhost" listens: Node and Vite
// often take only [::1]. On a host without IPv6 the [::1] dial fails at
// once and 127.0.0.1 alone decides.
var loopbacks = []string{"127.0.0.1", "::1"}

// acceptsLoopback reports whether port accepts a TCP connection on any
// loopback address. The dials run side by side: one can hang (a full
// backlog drops SYNs) while the other would answer.
func acceptsLoopback(ctx context.Context, port int) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var accepted atomic.Bool
	var wg sync.WaitGroup
	for _, host := range loopbacks {
		wg.Go(func() { // ends when its dial does; the first success cancels the rest
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				return
			}
			c.Close()
			accepted.Store(true)
			cancel()
		})
	}
	wg.Wait()
	return accepted.Load()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
