package tools

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"strings"
	"sync"

	"rung.dev/rung/storage"
)

// grep -r reads files ahead of the search on a few goroutines: most of
// its time goes to open, read and close, which the search itself does
// not need to wait for. Output order is the walk's order all the same.

const (
	grepWorkers  = 3
	grepWindow   = 32       // files read ahead of the one being searched
	grepChunkMax = 64 << 10 // bytes read ahead per file
)

// grepJob is one file of the walk; done is closed once it was read.
type grepJob struct {
	abs, show string
	done      chan struct{}
	data      []byte
	f         storage.File // still open when the file is longer than data
	err       error
}

// grepPrefetch reads jobs on its workers. Its owner calls stop, which
// waits for the workers, before returning.
type grepPrefetch struct {
	fs   storage.FS
	jobs chan *grepJob
	free chan []byte
	wg   sync.WaitGroup
}

func newGrepPrefetch(fsys storage.FS) *grepPrefetch {
	p := &grepPrefetch{fs: fsys, jobs: make(chan *grepJob, grepWindow+1), free: make(chan []byte, grepWindow+grepWorkers+2)}
	for range grepWorkers {
		// Each worker stops when jobs is closed (stop).
		p.wg.Go(func() {
			for j := range p.jobs {
				p.read(j)
			}
		})
	}
	return p
}

func (p *grepPrefetch) read(j *grepJob) {
	defer close(j.done)
	f, err := p.fs.OpenFile(j.abs, 0, 0)
	if err != nil {
		j.err = err
		return
	}
	var buf []byte
	select {
	case buf = <-p.free:
	default:
		buf = make([]byte, grepChunkMax)
	}
	n, err := io.ReadAtLeast(f, buf, 1)
	j.data = buf[:n]
	switch {
	case err == io.EOF || err == nil && n < len(buf):
		// A short read from a regular file is its end.
		f.Close()
	case err != nil:
		j.err = err
		f.Close()
	default:
		j.f = f
	}
}

func (p *grepPrefetch) stop() {
	close(p.jobs)
	p.wg.Wait()
}

// walk searches directory abs recursively; prefix is how its entries'
// names are shown ("" for the implicit ".").
func (g *grepper) walk(ctx context.Context, abs, prefix string) {
	p := newGrepPrefetch(g.c.FS)
	var pending []*grepJob
	consume := func(j *grepJob) {
		<-j.done
		if g.done || ctx.Err() != nil {
			if j.f != nil {
				j.f.Close()
			}
			return
		}
		switch {
		case j.err != nil:
			g.fileErr(j.show, j.err)
		case j.f != nil:
			g.search(ctx, io.MultiReader(bytes.NewReader(j.data), j.f), j.show, false)
			j.f.Close()
		default:
			g.search(ctx, bytes.NewReader(j.data), j.show, true)
		}
		select {
		case p.free <- j.data[:cap(j.data)]:
		default:
		}
	}
	g.walkDir(ctx, abs, prefix, func(childAbs, show string) {
		j := &grepJob{abs: childAbs, show: show, done: make(chan struct{})}
		pending = append(pending, j)
		p.jobs <- j
		for len(pending) > grepWindow {
			consume(pending[0])
			pending = pending[1:]
		}
	})
	for _, j := range pending {
		consume(j)
	}
	p.stop()
}

// walkDir lists the files of a recursive search in order and hands each
// to emit.
func (g *grepper) walkDir(ctx context.Context, abs, prefix string, emit func(abs, show string)) {
	ents, err := g.c.FS.ReadDir(abs)
	if err != nil {
		show := prefix
		if show == "" {
			show = "."
		}
		g.fileErr(show, err)
	}
	for _, e := range ents {
		if g.done || ctx.Err() != nil {
			return
		}
		name := e.Name()
		show := name
		if prefix != "" {
			if strings.HasSuffix(prefix, "/") {
				show = prefix + name
			} else {
				show = prefix + "/" + name
			}
		}
		childAbs := abs + "/" + name
		if abs == "/" {
			childAbs = "/" + name
		}
		typ := e.Type()
		if typ&fs.ModeSymlink != 0 {
			if g.cfg.recursive != 2 {
				continue
			}
			fi, err := g.c.FS.Stat(childAbs)
			if err != nil {
				g.fileErr(show, err)
				continue
			}
			typ = fi.Mode().Type()
		}
		if typ.IsDir() {
			if g.dirExcluded(name) {
				continue
			}
			g.walkDir(ctx, childAbs, show, emit)
			continue
		}
		if typ != 0 { // devices, fifos, sockets are skipped when recursing
			continue
		}
		if !g.globOK(name, false) {
			continue
		}
		emit(childAbs, show)
	}
}
