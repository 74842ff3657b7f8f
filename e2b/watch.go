package e2b

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	pb "rung.dev/rung/e2b/envdpb/filesystem"
	"rung.dev/rung/storage"
)

// Bounds of watching. Each watch is an inotify instance of the daemon's
// (the host allows fs.inotify.max_user_instances for all sandboxes), and
// each watched directory an inotify watch.
const (
	maxWatchesPerSandbox = 16               // WatchDir streams and polling watchers together
	maxWatchDirs         = 1024             // directories one recursive watch holds
	maxPollEvents        = 1024             // events a polling watcher keeps between two polls
	pollerIdle           = 10 * time.Minute // a polling watcher nobody polls for this long is removed
	defaultKeepalive     = 90 * time.Second // envd's keepalive without a Keepalive-Ping-Interval header
)

// watchTable holds the sandboxes' watches: how many each has open, and
// the polling watchers by id. It is safe for concurrent use.
type watchTable struct {
	mu      sync.Mutex         // guards the fields below
	count   map[string]int     // open watches by sandbox id
	pollers map[string]*poller // by watcher id
	closed  bool
	wg      sync.WaitGroup // the pollers' goroutines
}

func newWatchTable() *watchTable {
	return &watchTable{count: map[string]int{}, pollers: map[string]*poller{}}
}

// reserve counts one more watch of sandbox id, or fails with ErrLimit.
func (t *watchTable) reserve(id string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return rung.Errorf(rung.ErrUnavailable, "shutting down")
	}
	if t.count[id] >= maxWatchesPerSandbox {
		return &rung.LimitError{Limit: "watches_per_sandbox", Max: maxWatchesPerSandbox}
	}
	t.count[id]++
	return nil
}

func (t *watchTable) unreserve(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count[id]--; t.count[id] <= 0 {
		delete(t.count, id)
	}
}

// dropSandbox removes sandbox id's polling watchers (it is being killed).
// Its streams end with their requests.
func (t *watchTable) dropSandbox(id string) {
	t.mu.Lock()
	var gone []*poller
	for wid, p := range t.pollers {
		if p.c.sandbox == id {
			gone = append(gone, p)
			delete(t.pollers, wid)
		}
	}
	t.mu.Unlock()
	for _, p := range gone {
		p.stop()
	}
}

// close removes every polling watcher and waits for their goroutines.
func (t *watchTable) close() {
	t.mu.Lock()
	t.closed = true
	gone := t.pollers
	t.pollers = map[string]*poller{}
	t.mu.Unlock()
	for _, p := range gone {
		p.stop()
	}
	t.wg.Wait()
}

// watchPath maps a watch request's path and refuses those rung cannot
// watch: files the host sees for a sandbox are its /workspace (E2B's
// /home/user) and /tmp; the rest of a container's root is its image.
func watchPath(p string) (string, error) {
	sp := sandboxPath(p)
	for _, top := range []string{workspace, "/tmp"} {
		if sp == top || strings.HasPrefix(sp, top+"/") {
			return sp, nil
		}
	}
	return "", rung.Errorf(rung.ErrInvalid, "cannot watch %s: rung watches directories under %s and /tmp only", clip(p), home)
}

// openWatch starts a watch for caller c, counted against its sandbox's
// bound; done releases both.
func (s *Server) openWatch(ctx context.Context, c caller, p string, recursive bool) (w *controller.Watcher, top string, done func(), err error) {
	top, err = watchPath(p)
	if err != nil {
		return nil, "", nil, err
	}
	if err := s.watches.reserve(c.sandbox); err != nil {
		return nil, "", nil, err
	}
	w, err = s.ctrl.Watch(ctx, c.tenant, c.sandbox, controller.WatchRequest{Path: top, Recursive: recursive, MaxDirs: maxWatchDirs})
	if err != nil {
		s.watches.unreserve(c.sandbox)
		return nil, "", nil, err
	}
	return w, top, func() { w.Close(); s.watches.unreserve(c.sandbox) }, nil
}

// eventsOf turns a batch of changes under top into envd's events, one per
// operation in envd's order, with names relative to top and, when asked,
// the entry of each created, written or chmod'ed file that still exists.
func (s *Server) eventsOf(ctx context.Context, c caller, top string, evs []storage.WatchEvent, entries bool) []*pb.FilesystemEvent {
	var out []*pb.FilesystemEvent
	for _, e := range evs {
		name := strings.TrimPrefix(strings.TrimPrefix(e.Path, top), "/")
		if name == "" {
			name = "."
		}
		var entry *pb.EntryInfo
		if entries && e.Op&(storage.WatchCreate|storage.WatchWrite|storage.WatchChmod) != 0 {
			if fi, err := s.ctrl.Stat(ctx, c.tenant, c.sandbox, e.Path); err == nil {
				entry = entryOf(fi)
			}
		}
		for _, m := range []struct {
			op storage.WatchOp
			t  pb.EventType
		}{
			{storage.WatchCreate, pb.EventType_EVENT_TYPE_CREATE},
			{storage.WatchRename, pb.EventType_EVENT_TYPE_RENAME},
			{storage.WatchChmod, pb.EventType_EVENT_TYPE_CHMOD},
			{storage.WatchWrite, pb.EventType_EVENT_TYPE_WRITE},
			{storage.WatchRemove, pb.EventType_EVENT_TYPE_REMOVE},
		} {
			if e.Op&m.op == 0 {
				continue
			}
			ev := &pb.FilesystemEvent{Name: name, Type: m.t}
			if m.t != pb.EventType_EVENT_TYPE_RENAME && m.t != pb.EventType_EVENT_TYPE_REMOVE {
				ev.Entry = entry
			}
			out = append(out, ev)
		}
	}
	return out
}

// keepaliveOf reads Keepalive-Ping-Interval (seconds), as envd does.
func keepaliveOf(h http.Header) time.Duration {
	n, err := strconv.Atoi(h.Get("Keepalive-Ping-Interval"))
	if err != nil || n <= 0 {
		return defaultKeepalive
	}
	return time.Duration(min(n, 3600)) * time.Second
}

// WatchDir streams changes under a directory: a start event once the
// watch is in place (so a change made after the SDK's watchDir returns is
// seen), then the changes as they happen, and keepalives while nothing
// does. The stream ends with the request (Connect-Timeout-Ms, the client
// going away) or when the directory itself goes.
func (f *filesystemService) WatchDir(ctx context.Context, req *connect.Request[pb.WatchDirRequest], stream *connect.ServerStream[pb.WatchDirResponse]) error {
	s := f.s
	c, err := s.envdCaller(ctx, req.Header())
	if err != nil {
		return s.rpcError(ctx, err)
	}
	w, top, done, err := s.openWatch(ctx, c, req.Msg.GetPath(), req.Msg.GetRecursive())
	if err != nil {
		return s.rpcError(ctx, err)
	}
	defer done()
	if err := stream.Send(&pb.WatchDirResponse{Event: &pb.WatchDirResponse_Start{Start: &pb.WatchDirResponse_StartEvent{}}}); err != nil {
		return err
	}
	type batch struct {
		evs []storage.WatchEvent
		err error
	}
	batches := make(chan batch)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// The reader ends when the watcher is closed: the defers below close
	// stop, then the watcher, then wait for it.
	wg.Go(func() {
		for {
			evs, err := w.Next()
			select {
			case batches <- batch{evs, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	})
	defer wg.Wait()
	defer w.Close()
	defer close(stop)
	every := keepaliveOf(req.Header())
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			// As envd: the stream's deadline (Connect-Timeout-Ms) ends it
			// with deadline_exceeded.
			return s.rpcError(ctx, ctx.Err())
		case <-s.stopping.Done():
			return errStopping
		case <-tick.C:
			if err := stream.Send(&pb.WatchDirResponse{Event: &pb.WatchDirResponse_Keepalive{Keepalive: &pb.WatchDirResponse_KeepAlive{}}}); err != nil {
				return err
			}
		case b := <-batches:
			if errors.Is(b.err, fs.ErrNotExist) {
				return nil // the directory is gone: its event was sent
			}
			if b.err != nil {
				return s.rpcError(ctx, b.err)
			}
			for _, ev := range s.eventsOf(ctx, c, top, b.evs, req.Msg.GetIncludeEntry()) {
				if err := stream.Send(&pb.WatchDirResponse{Event: &pb.WatchDirResponse_Filesystem{Filesystem: ev}}); err != nil {
					return err
				}
			}
			tick.Reset(every)
		}
	}
}

// poller is a polling watcher (CreateWatcher): its goroutine queues the
// changes until GetWatcherEvents takes them.
type poller struct {
	c       caller
	w       *controller.Watcher
	release func()
	idle    *time.Timer // removes the poller when nobody polls it

	mu      sync.Mutex // guards the fields below
	events  []*pb.FilesystemEvent
	dropped int   // events not kept since the last poll (the queue was full)
	err     error // why the watch ended, if it did
}

func (p *poller) stop() {
	p.idle.Stop()
	p.release()
}

func newWatcherID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "w" + hex.EncodeToString(b)
}

// runPoller queues p's changes until its watcher is closed.
func (s *Server) runPoller(p *poller, top string, entries bool) {
	for {
		evs, err := p.w.Next()
		if err != nil {
			p.mu.Lock()
			p.err = err
			p.mu.Unlock()
			return
		}
		// No request is in flight: the entries' stats are the poller's own
		// work, ended by closing its watcher, not by a context.
		out := s.eventsOf(context.Background(), p.c, top, evs, entries)
		p.mu.Lock()
		room := max(0, maxPollEvents-len(p.events))
		if len(out) > room {
			p.dropped += len(out) - room
			out = out[:room]
		}
		p.events = append(p.events, out...)
		p.mu.Unlock()
	}
}

func (f *filesystemService) CreateWatcher(ctx context.Context, req *connect.Request[pb.CreateWatcherRequest]) (*connect.Response[pb.CreateWatcherResponse], error) {
	s := f.s
	c, err := s.envdCaller(ctx, req.Header())
	if err != nil {
		return nil, s.rpcError(ctx, err)
	}
	w, top, done, err := s.openWatch(ctx, c, req.Msg.GetPath(), req.Msg.GetRecursive())
	if err != nil {
		return nil, s.rpcError(ctx, err)
	}
	id := newWatcherID()
	p := &poller{c: c, w: w, release: done}
	t := s.watches
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		done()
		return nil, s.rpcError(ctx, rung.Errorf(rung.ErrUnavailable, "shutting down"))
	}
	t.pollers[id] = p
	p.idle = time.AfterFunc(pollerIdle, func() { t.remove(c, id) })
	// The goroutine ends when the watcher is closed: RemoveWatcher, the
	// idle timer, the sandbox's kill or the server's Close.
	t.wg.Go(func() { s.runPoller(p, top, req.Msg.GetIncludeEntry()) })
	t.mu.Unlock()
	return connect.NewResponse(&pb.CreateWatcherResponse{WatcherId: id}), nil
}

// lookup returns caller c's polling watcher id; another sandbox's is
// not_found, as a missing one.
func (t *watchTable) lookup(c caller, id string) (*poller, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pollers[id]
	if p == nil || p.c != c {
		return nil, rung.Errorf(rung.ErrNotFound, "watcher %s not found", clip(id))
	}
	return p, nil
}

// remove removes and stops caller c's polling watcher id.
func (t *watchTable) remove(c caller, id string) error {
	p, err := t.lookup(c, id)
	if err != nil {
		return err
	}
	t.mu.Lock()
	delete(t.pollers, id)
	t.mu.Unlock()
	p.stop()
	return nil
}

// GetWatcherEvents returns and clears what a polling watcher queued, at
// most maxPollEvents. When more came since the last poll, the events kept
// are dropped too and the answer is resource_exhausted, so the caller
// knows it missed changes (envd has no such bound).
func (f *filesystemService) GetWatcherEvents(ctx context.Context, req *connect.Request[pb.GetWatcherEventsRequest]) (*connect.Response[pb.GetWatcherEventsResponse], error) {
	s := f.s
	c, err := s.envdCaller(ctx, req.Header())
	if err != nil {
		return nil, s.rpcError(ctx, err)
	}
	p, err := s.watches.lookup(c, req.Msg.GetWatcherId())
	if err != nil {
		return nil, s.rpcError(ctx, err)
	}
	p.idle.Reset(pollerIdle)
	p.mu.Lock()
	evs, dropped, werr := p.events, p.dropped, p.err
	p.events, p.dropped = nil, 0
	p.mu.Unlock()
	if dropped > 0 {
		return nil, s.rpcError(ctx, rung.Errorf(rung.ErrLimit, "watcher %s: more than %d events since the last poll (%d more dropped); poll more often", clip(req.Msg.GetWatcherId()), maxPollEvents, dropped))
	}
	if len(evs) == 0 && werr != nil {
		s.watches.remove(c, req.Msg.GetWatcherId())
		return nil, s.rpcError(ctx, rung.Errorf(rung.ErrNotFound, "watcher %s: the watched directory is gone", clip(req.Msg.GetWatcherId())))
	}
	return connect.NewResponse(&pb.GetWatcherEventsResponse{Events: evs}), nil
}

func (f *filesystemService) RemoveWatcher(ctx context.Context, req *connect.Request[pb.RemoveWatcherRequest]) (*connect.Response[pb.RemoveWatcherResponse], error) {
	s := f.s
	c, err := s.envdCaller(ctx, req.Header())
	if err != nil {
		return nil, s.rpcError(ctx, err)
	}
	if err := s.watches.remove(c, req.Msg.GetWatcherId()); err != nil {
		return nil, s.rpcError(ctx, err)
	}
	return connect.NewResponse(&pb.RemoveWatcherResponse{}), nil
}
