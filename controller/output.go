package controller

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// Chunk is one piece of an exec's output. Seq counts chunks of one exec
// from 1; Stream is "stdout" or "stderr".
type Chunk struct {
	Stream string
	Seq    int64
	Data   []byte
}

// maxEventData is the most output bytes one stored output event holds.
const maxEventData = 64 << 10

// output collects an exec's stdout and stderr: into buffers for the
// result, into output events for the store, and, when streaming, into a
// queue a pump goroutine delivers from, so a slow reader never blocks the
// exec. Everything it keeps is bounded by limit bytes.
type output struct {
	exec  rung.ExecID
	limit int64

	mu        sync.Mutex // guards the fields below
	buffer    bool       // keep stdout and stderr for the result
	stdout    bytes.Buffer
	stderr    bytes.Buffer
	nout      int64 // stdout bytes written, kept or not
	nerr      int64
	kept      int64 // bytes kept for the result and events
	truncated bool
	seq       int64
	pending   []Chunk // for the stream pump
	events    []store.Event
	lastEv    string        // stream of events[len-1], to coalesce
	eventData [][]byte      // data per event, parallel to events
	signal    chan struct{} // cap 1: pending has chunks
	closed    bool
}

func newOutput(exec rung.ExecID, limit int64, buffer bool) *output {
	return &output{exec: exec, limit: limit, buffer: buffer, signal: make(chan struct{}, 1)}
}

type streamWriter struct {
	o      *output
	stream string
}

func (w streamWriter) Write(p []byte) (int, error) {
	w.o.write(w.stream, p)
	return len(p), nil
}

// limitReached marks the output truncated and appends marker to stderr
// beyond the limit, so that the caller reads why the command ended.
func (o *output) limitReached(marker string) {
	o.mu.Lock()
	o.truncated = true
	o.limit = o.kept + int64(len(marker))
	o.mu.Unlock()
	o.write("stderr", []byte(marker))
}

func (o *output) write(stream string, p []byte) {
	if len(p) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if stream == "stdout" {
		o.nout += int64(len(p))
	} else {
		o.nerr += int64(len(p))
	}
	if room := o.limit - o.kept; int64(len(p)) > room {
		p = p[:max(room, 0)]
		o.truncated = true
	}
	if len(p) == 0 {
		return
	}
	o.kept += int64(len(p))
	if o.buffer {
		if stream == "stdout" {
			o.stdout.Write(p)
		} else {
			o.stderr.Write(p)
		}
	}
	data := bytes.Clone(p)
	o.seq++
	if !o.closed && !o.buffer {
		o.pending = append(o.pending, Chunk{Stream: stream, Seq: o.seq, Data: data})
		select {
		case o.signal <- struct{}{}:
		default:
		}
	}
	n := len(o.eventData)
	if n > 0 && o.lastEv == stream && len(o.eventData[n-1])+len(data) <= maxEventData {
		o.eventData[n-1] = append(o.eventData[n-1], data...)
		return
	}
	o.lastEv = stream
	o.eventData = append(o.eventData, data)
	o.events = append(o.events, store.Event{Time: time.Now().UTC(), Type: string(rung.EntryExecOutput), Data: []byte(stream)})
}

// take returns the chunks waiting for the stream and whether the output
// is closed and drained.
func (o *output) take() ([]Chunk, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.pending
	o.pending = nil
	return c, o.closed && len(c) == 0
}

// pump delivers chunks to fn in order until the output is closed and
// drained. It is the stream goroutine's body; close ends it.
func (o *output) pump(fn func(Chunk)) {
	for {
		chunks, done := o.take()
		for _, c := range chunks {
			fn(c)
		}
		if done {
			return
		}
		if len(chunks) == 0 {
			<-o.signal
		}
	}
}

// close marks the end of output; the pump drains what is left and stops.
func (o *output) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	select {
	case o.signal <- struct{}{}:
	default:
	}
}

// storeEvents returns the output events to store, with their data.
func (o *output) storeEvents() []store.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	evs := make([]store.Event, len(o.events))
	for i, ev := range o.events {
		stream := string(ev.Data)
		ev.Data, _ = json.Marshal(ExecOutput{Exec: o.exec, Stream: stream, Data: string(o.eventData[i])})
		evs[i] = ev
	}
	return evs
}
