package sqlite

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ncruces/go-sqlite3"
)

// walConfig bounds the WAL file (rung.db-wal). Sizes are bytes of WAL,
// turned into frames (a page plus its 24-byte header) once the page size
// is known.
type walConfig struct {
	// Step: the writer wakes the checkpointer each time the WAL has grown
	// this much since it last looked (SQLite's own default is 1,000
	// pages, about 4 MiB).
	Step int64
	// Restart: past this the checkpointer also makes the WAL start over
	// from its beginning (see [checkpointer]).
	Restart int64
	// Cap: past this the writer restarts the WAL itself before it takes
	// the next batch, so a checkpointer that gets no CPU cannot let the
	// WAL grow without bound. Only reached when the checkpointer falls
	// behind.
	Cap int64
	// Keep is journal_size_limit: the first commit after a restart
	// truncates a longer file to this.
	Keep int64
	// Wait bounds how long a restart waits, commits held, for readers
	// still reading frames it would overwrite; then it gives up until
	// the next step.
	Wait time.Duration
	// Every is how often the checkpointer runs when no writer wakes it.
	Every time.Duration
}

// defaultWAL keeps the WAL under 64 MiB under any sustained load. A
// restart holds commits for two fdatasyncs and the copy of the last
// frames (measured 3-30 ms on a shared 2-vCPU VM), so it should be rare:
// at 35 KiB of WAL per exec, one in about 900 sequential execs. Keep is
// the cap rather than the restart size: a file that is truncated and then
// grows again makes each checkpoint's fdatasync of the WAL also commit
// the file system's journal.
var defaultWAL = walConfig{
	Step:    4 << 20,
	Restart: 32 << 20,
	Cap:     56 << 20,
	Keep:    56 << 20,
	Wait:    20 * time.Millisecond,
	Every:   time.Second,
}

// walLimits are a walConfig's sizes in frames.
type walLimits struct {
	step, restart, cap int64
	tail               int64 // what a restart may be left to copy: step/16, 256 KiB by default
}

func (w walConfig) frames(pageSize int64) walLimits {
	f := func(n int64) int64 { return max(1, n/(pageSize+24)) }
	return walLimits{step: f(w.Step), restart: f(w.Restart), cap: f(w.Cap), tail: f(w.Step / 16)}
}

// checkpointer copies the WAL back into the database file from its own
// goroutine and connection, and makes the WAL start over before it grows
// past walConfig.Restart.
//
// Why the WAL grew without bound before: a checkpoint only copies frames
// into the database file; the WAL starts over from its beginning only
// when a writer begins a transaction at a moment when every frame has
// been copied and no reader still reads from the WAL. Under sustained
// load that moment never comes: a PASSIVE checkpoint copies the frames
// that existed when it started, the writer appends more while it runs
// (an exec commits every few hundred µs, a checkpoint of a few MiB takes
// milliseconds), so each writer found frames not yet copied and appended
// after them, and SQLite never shrinks the file. Readers were not needed
// for it (a store test with writes only grew the same 38 KiB per exec);
// they make it worse, since a reader that began before the last frame was
// copied also blocks the restart.
//
// So the checkpointer works in two phases. First a PASSIVE checkpoint
// copies what it can while commits go on (the bulk of the work, off the
// commit path). Then, when the WAL is past Restart, it takes the writer
// lock, so no transaction is open or can begin, and runs a RESTART
// checkpoint: it copies only the frames appended during the first phase,
// and waits (at most Wait) for readers of old frames to finish. The next
// writer then starts the WAL from its beginning, and journal_size_limit
// shrinks a file that had grown past Keep. Should this goroutine fall
// behind anyway, the writer restarts the WAL itself at Cap.
type checkpointer struct {
	wmu      *sync.Mutex // the DB's writer lock
	lim      walLimits
	pageSize int64 // bytes

	// frames is the WAL's length in frames after the last commit,
	// reported by SQLite's WAL hook on the writer connection (it counts
	// from 0 again after a restart); 0 right after restartLocked.
	frames atomic.Int64
	// next is the length at which the writer wakes run.
	next atomic.Int64
	// Since Open: frames appended, successful restarts, and the total
	// and longest time restarts held commits, in ns (see [DB.WALStats]).
	written, restarts, held, maxHeld atomic.Int64

	mu   sync.Mutex    // guards conn: one checkpoint at a time
	conn *sqlite3.Conn // used only here; busy timeout walConfig.Wait

	kick chan struct{} // cap 1: run soon
	stop chan struct{} // closed by close
	done chan struct{} // closed when run returns
}

func newCheckpointer(wmu *sync.Mutex) *checkpointer {
	return &checkpointer{wmu: wmu, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// start runs the goroutine on conn; close stops it and closes conn.
func (c *checkpointer) start(conn *sqlite3.Conn, pageSize int64, w walConfig) {
	c.conn, c.pageSize, c.lim = conn, pageSize, w.frames(pageSize)
	c.next.Store(c.lim.step)
	go c.run(w.Every) // owned by c; close stops it
}

// walHook is the writer connection's WAL hook: SQLite calls it after
// each commit with the WAL's length in frames. It runs inside the commit,
// so it only records and wakes.
func (c *checkpointer) walHook(_ *sqlite3.Conn, _ string, frames int) error {
	n := int64(frames)
	if prev := c.frames.Swap(n); n >= prev {
		c.written.Add(n - prev)
	} else { // the WAL started over
		c.written.Add(n)
	}
	if n >= c.next.Load() {
		c.poke()
	}
	return nil
}

func (c *checkpointer) run(every time.Duration) {
	defer close(c.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		case <-c.kick:
		}
		c.checkpoint()
	}
}

// checkpoint is one pass: PASSIVE while commits go on, then a restart
// with commits held when the WAL is past the restart size.
func (c *checkpointer) checkpoint() {
	restart := c.passive()
	if restart {
		c.wmu.Lock()
		ok := c.restartLocked()
		c.wmu.Unlock()
		if ok {
			return
		}
	}
	// Not restarted (below the restart size, or readers held old frames
	// past the wait): look again one step further.
	c.next.Store(c.frames.Load() + c.lim.step)
}

// passive copies the WAL into the database file without blocking
// commits, and reports whether the WAL should now restart. Before a
// restart, which holds commits, it repeats while commits appended more
// than a few frames during the last pass, so that the restart has little
// left to copy.
func (c *checkpointer) passive() (restart bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range 3 {
		// An error (a full disk, say) leaves the WAL longer until a
		// later checkpoint succeeds; commits themselves are unaffected,
		// and Cap still bounds the WAL.
		_, done, err := c.conn.WALCheckpoint("main", sqlite3.CHECKPOINT_PASSIVE)
		frames := c.frames.Load()
		if err != nil || frames < c.lim.restart {
			return false
		}
		if frames-int64(done) < c.lim.tail {
			break
		}
	}
	return true
}

// restartLocked checkpoints every frame and waits (bounded) for readers
// of the WAL to finish, so that the next write transaction starts the WAL
// from its beginning. The caller holds the writer lock: no transaction is
// open on the writer connection and none can begin, which is what lets
// the checkpoint catch up. It reports whether the WAL will restart.
func (c *checkpointer) restartLocked() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t0 := time.Now()
	_, _, err := c.conn.WALCheckpoint("main", sqlite3.CHECKPOINT_RESTART)
	d := int64(time.Since(t0))
	c.held.Add(d)
	storeMax(&c.maxHeld, d)
	// BUSY means a reader kept old frames past the busy timeout; the
	// checkpoint then did what it could, like PASSIVE.
	if err != nil {
		return false
	}
	c.frames.Store(0)
	c.next.Store(c.lim.step)
	c.restarts.Add(1)
	return true
}

// full reports whether the WAL is past its cap. The writer calls it with
// the writer lock held, after a commit.
func (c *checkpointer) full() bool {
	return c.frames.Load() >= c.lim.cap
}

// poke asks for a checkpoint soon without waiting.
func (c *checkpointer) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// close stops the goroutine, runs a last checkpoint and closes the
// connection. It is called once, and only after start.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn.WALCheckpoint("main", sqlite3.CHECKPOINT_PASSIVE)
	return c.conn.Close()
}

// WALStats describes the store's write-ahead log since [Open].
type WALStats struct {
	Frames   int64 // pages appended to the WAL
	PageSize int64 // bytes; a frame is a page plus 24 bytes
	Restarts int64 // times the WAL was made to start over
	// Held is the total, and MaxHeld the longest, time a restart kept
	// commits waiting.
	Held, MaxHeld time.Duration
}

// WALStats returns counters of the WAL for benchmarks and operators.
func (db *DB) WALStats() WALStats {
	c := db.cp
	return WALStats{
		Frames: c.written.Load(), PageSize: c.pageSize, Restarts: c.restarts.Load(),
		Held: time.Duration(c.held.Load()), MaxHeld: time.Duration(c.maxHeld.Load()),
	}
}

// storeMax sets a to v if v is larger.
func storeMax(a *atomic.Int64, v int64) {
	for old := a.Load(); v > old && !a.CompareAndSwap(old, v); old = a.Load() {
	}
}
