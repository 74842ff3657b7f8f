package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"rung.dev/rung/image"
)

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// buildDisplay shows an image build's progress (stage, packages
// done/total, elapsed): on a terminal one line redrawn in place, at least
// every second; otherwise one plain report per milestone (a new stage or
// step, each tenth of the packages), through plain. Its methods are safe
// for concurrent use; stop ends it.
type buildDisplay struct {
	name  string
	start time.Time
	term  io.Writer                                          // non-nil: the terminal to redraw on
	plain func(p image.BuildProgress, elapsed time.Duration) // without a terminal

	mu      sync.Mutex // guards the fields below and writes to term
	tracker image.ProgressTracker
	last    image.BuildProgress // at the last plain report
	width   int                 // of the line drawn on term
	stopped bool

	tick chan struct{} // closed by stop
	done chan struct{} // closed when the redraw goroutine has returned
}

// newBuildDisplay starts a display of image name's build: on term when it
// is a terminal, otherwise through plain.
func newBuildDisplay(name string, term *os.File, plain func(image.BuildProgress, time.Duration)) *buildDisplay {
	d := &buildDisplay{name: name, start: time.Now(), plain: plain, tick: make(chan struct{}), done: make(chan struct{})}
	if term != nil && isTerminal(term) {
		d.term = term
		go d.redraw() // ends when stop closes d.tick
	} else {
		close(d.done)
	}
	return d
}

// line takes one output line of the build.
func (d *buildDisplay) line(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	p, changed := d.tracker.Line(s)
	switch {
	case d.term != nil && changed:
		d.drawLocked()
	case d.term == nil && milestone(d.last, p):
		d.last = p
		d.plain(p, time.Since(d.start))
	}
}

// milestone reports whether p is worth a plain report after last: a new
// stage or step, or another tenth of the packages (25 while the total is
// unknown).
func milestone(last, p image.BuildProgress) bool {
	if p.Stage != last.Stage || p.Step != last.Step {
		return p.Stage != ""
	}
	every := max(p.Total/10, 1)
	if p.Total == 0 {
		every = 25
	}
	return p.Done/every != last.Done/every
}

func (d *buildDisplay) redraw() {
	defer close(d.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-d.tick:
			return
		case <-t.C:
			d.mu.Lock()
			if !d.stopped {
				d.drawLocked()
			}
			d.mu.Unlock()
		}
	}
}

func (d *buildDisplay) drawLocked() {
	s := progressText(d.name, d.tracker.Progress(), time.Since(d.start))
	pad := max(d.width-len(s), 0)
	fmt.Fprintf(d.term, "\r%s%s", s, strings.Repeat(" ", pad))
	d.width = len(s)
}

// stop ends the display, leaving a terminal's cursor on a fresh line.
func (d *buildDisplay) stop() {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return
	}
	d.stopped = true
	if d.term != nil {
		d.drawLocked()
		fmt.Fprintln(d.term)
	}
	d.mu.Unlock()
	close(d.tick)
	<-d.done
}

// progressText is one progress report: "building image base: apt-get,
// configuring 120/312 packages, 2m13s".
func progressText(name string, p image.BuildProgress, elapsed time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "building image %s: ", name)
	switch {
	case p.Stage == "":
		b.WriteString("starting")
	case p.Stage == "waiting":
		b.WriteString("waiting for another build of it")
	case p.Stage == "layer":
		b.WriteString("storing the root filesystem")
	default:
		b.WriteString(p.Stage)
	}
	if p.Step != "" {
		fmt.Fprintf(&b, ", %s %d", p.Step, p.Done)
		if p.Total > 0 {
			fmt.Fprintf(&b, "/%d", p.Total)
		}
		b.WriteString(" packages")
	}
	fmt.Fprintf(&b, ", %s", elapsed.Truncate(time.Second))
	return b.String()
}
