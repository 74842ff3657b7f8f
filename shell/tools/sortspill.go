package tools

import (
	"bufio"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"rung.dev/rung/shell"
)

// sort keeps its input in memory while it fits in the exec's memory budget
// (shell.Limits.MemoryBytes, through Call.TryReserve) and in -S; past that
// it sorts what it holds, writes it as a run to a temporary file in the
// sandbox's -T directory, $TMPDIR or /tmp (so it counts against the
// sandbox's disk quota), and goes on; at the end it merges the runs, at
// most sortNMerge at a time, as GNU sort does. The temporary files go
// through the sandbox's file view and are removed when sort returns,
// whatever the outcome.
//
// The output is GNU's whatever the runs: a run is sorted exactly as the
// whole input would be (stable with -s or -u); the merge takes, among equal
// lines, the one from the earliest run, which holds the earlier input; -u
// keeps the first of equal lines within a run and again in the merge.

const (
	sortNMerge   = 16        // runs merged at once (GNU's NMERGE)
	sortChunk    = 256 << 10 // bytes reserved at a time
	sortMinBuf   = 32 << 10  // less than this in memory: the exec is out of memory, not sort
	sortLineCost = 128       // bytes a held line costs besides its text: its slice and sort keys
)

// sortSize parses -S as GNU sort 9.1 does: a number of KiB, or bytes with
// suffix b, or a suffix of EgGkKmMPtTYZ; % is a percentage of the exec's
// memory budget (GNU: of physical memory). It returns the message when s
// is bad.
func sortSize(s string, budget int64) (int64, string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Sprintf("invalid -S argument %s", txQuote(s))
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	suf := s[i:]
	mult := uint64(1024)
	switch {
	case suf == "":
	case suf == "b":
		mult = 1
	case suf == "%":
		if budget <= 0 {
			budget = 1 << 62
		}
		return int64(min(n, 100) * uint64(budget) / 100), ""
	case len(suf) == 1 && strings.Contains("EgGkKmMPtTYZ", suf):
		mult = 1 << (10 * uint64(strings.IndexByte("kmgtpezy", suf[0]|0x20)+1))
	default:
		return 0, fmt.Sprintf("invalid suffix in -S argument %s", txQuote(s))
	}
	if err != nil || n > (1<<63-1)/mult {
		return 0, fmt.Sprintf("-S argument %s too large", txQuote(s))
	}
	return int64(n * mult), ""
}

// sortReader reads delim-terminated records; rec is valid until next.
type sortReader struct {
	br    *bufio.Reader
	delim byte
	rec   []byte
	long  []byte // a record longer than br's buffer, assembled
	err   error  // the read error that ended it, not io.EOF
}

func newSortReader(r io.Reader, delim byte) *sortReader {
	return &sortReader{br: readers64K.get(r), delim: delim}
}

// release gives the reader's buffer back; rec is invalid afterwards.
func (r *sortReader) release() {
	readers64K.put(r.br)
	r.br, r.rec = nil, nil
}

// next reads the next record; false at the end or on an error (err).
func (r *sortReader) next() bool {
	r.long = r.long[:0]
	for {
		b, err := r.br.ReadSlice(r.delim)
		switch {
		case err == nil:
			b = b[:len(b)-1]
			if len(r.long) > 0 {
				r.long = append(r.long, b...)
				b = r.long
			}
			r.rec = b
			return true
		case err == bufio.ErrBufferFull:
			r.long = append(r.long, b...)
			continue
		}
		r.long = append(r.long, b...)
		if err != io.EOF {
			r.err = err
			return false
		}
		if len(r.long) == 0 {
			return false
		}
		r.rec = r.long // the last record has no delimiter
		return true
	}
}

// spill holds one sort's temporary files.
type spill struct {
	c     *shell.Call
	dir   string
	runs  []string // sandbox paths of the runs, in input order
	files []string // every temporary file created, for cleanup
}

// create makes a new temporary file; status is non-zero after a message.
func (sp *spill) create() (string, io.WriteCloser, int) {
	for range 100 {
		name := sp.dir + "/sort" + mktempRandom(6)
		if sp.dir == "/" {
			name = name[1:]
		}
		f, err := sp.c.FS.OpenFile(sp.c.Abs(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			sp.c.Errorf("cannot create temporary file in %s: %s", txQuote(sp.dir), txErr(err))
			return "", nil, 2
		}
		sp.files = append(sp.files, name)
		return name, f, 0
	}
	sp.c.Errorf("cannot create temporary file in %s: %s", txQuote(sp.dir), "File exists")
	return "", nil, 2
}

// cleanup removes every temporary file.
func (sp *spill) cleanup() {
	for _, name := range sp.files {
		sp.c.FS.Remove(sp.c.Abs(name))
	}
	sp.files = nil
}

// write sorts lines and writes them as a new run.
func (sp *spill) write(ctx context.Context, s *sorter, lines [][]byte) int {
	s.sortLines(lines)
	if ctx.Err() != nil {
		return txCtxStatus
	}
	name, f, st := sp.create()
	if st != 0 {
		return st
	}
	w := newTxOut(f)
	defer w.release()
	for i, line := range lines {
		if s.unique && i > 0 && s.compare(lines[i-1], line) == 0 {
			continue
		}
		w.Write(line)
		w.WriteByte(s.delim)
	}
	err := w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		sp.c.Errorf("write failed: %s: %s", name, txErr(err))
		return 2
	}
	sp.runs = append(sp.runs, name)
	return 0
}

// sortTempDir is where sort puts its runs: -T, else $TMPDIR, else /tmp.
func sortTempDir(c *shell.Call, t string) string {
	if t == "" {
		t = c.Getenv("TMPDIR")
	}
	if t == "" {
		t = "/tmp"
	}
	if len(t) > 1 {
		t = strings.TrimRight(t, "/")
	}
	return t
}

// mergeSource is one sorted input of a merge.
type mergeSource struct {
	rd  *sortReader
	rc  io.Closer
	idx int // its place in input order: ties go to the lower
}

// mergeHeap orders sources by their current record, then input order.
type mergeHeap struct {
	s    *sorter
	srcs []*mergeSource
}

func (h *mergeHeap) Len() int { return len(h.srcs) }
func (h *mergeHeap) Less(i, j int) bool {
	a, b := h.srcs[i], h.srcs[j]
	if d := h.s.compare(a.rd.rec, b.rd.rec); d != 0 {
		return d < 0
	}
	return a.idx < b.idx
}
func (h *mergeHeap) Swap(i, j int) { h.srcs[i], h.srcs[j] = h.srcs[j], h.srcs[i] }
func (h *mergeHeap) Push(x any)    { h.srcs = append(h.srcs, x.(*mergeSource)) }
func (h *mergeHeap) Pop() any {
	x := h.srcs[len(h.srcs)-1]
	h.srcs = h.srcs[:len(h.srcs)-1]
	return x
}

// mergeTo merges srcs (each sorted) into w, dropping later equal lines
// with -u, and closes them. A read error is reported under its source's
// name; status is non-zero after a message.
func (s *sorter) mergeTo(ctx context.Context, c *shell.Call, srcs []*mergeSource, names []string, w *txOut) int {
	defer closeSources(srcs)
	h := &mergeHeap{s: s}
	for _, src := range srcs {
		if src.rd.next() {
			h.srcs = append(h.srcs, src)
		} else if st := s.readFailed(c, src, names); st != 0 {
			return st
		}
	}
	heap.Init(h)
	var prev []byte
	for n := 0; h.Len() > 0; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return txCtxStatus
		}
		src := h.srcs[0]
		rec := src.rd.rec
		if !s.unique || n == 0 || s.compare(prev, rec) != 0 {
			w.Write(rec)
			w.WriteByte(s.delim)
			if s.unique {
				prev = append(prev[:0], rec...)
			}
		}
		if src.rd.next() {
			heap.Fix(h, 0)
			continue
		}
		if st := s.readFailed(c, src, names); st != 0 {
			return st
		}
		heap.Pop(h)
	}
	return 0
}

// readFailed reports a source's read error, if it ended with one.
func (s *sorter) readFailed(c *shell.Call, src *mergeSource, names []string) int {
	if src.rd.err == nil {
		return 0
	}
	if txIsCtx(src.rd.err) {
		return txCtxStatus
	}
	c.Errorf("read failed: %s: %s", names[src.idx], txErr(src.rd.err))
	return 2
}

// closeSources closes the inputs of a merge.
func closeSources(srcs []*mergeSource) {
	for _, src := range srcs {
		src.rc.Close()
		src.rd.release()
	}
}

// openSources opens names for a merge, in order.
func openSources(ctx context.Context, c *shell.Call, names []string, delim byte) ([]*mergeSource, int) {
	var srcs []*mergeSource
	for i, name := range names {
		r, err := txOpen(ctx, c, name)
		if err != nil {
			closeSources(srcs)
			c.Errorf("cannot read: %s: %s", name, txErr(err))
			return nil, 2
		}
		srcs = append(srcs, &mergeSource{rd: newSortReader(r, delim), rc: r, idx: i})
	}
	return srcs, 0
}

// mergeRuns merges sp's runs, sortNMerge at a time, until at most
// sortNMerge are left. Each pass merges consecutive groups, so the runs
// stay in input order and every byte is rewritten once per pass.
func (s *sorter) mergeRuns(ctx context.Context, sp *spill) int {
	for len(sp.runs) > sortNMerge {
		var next []string
		for i := 0; i < len(sp.runs); i += sortNMerge {
			group := sp.runs[i:min(i+sortNMerge, len(sp.runs))]
			if len(group) == 1 {
				next = append(next, group[0])
				continue
			}
			name, st := s.mergeGroup(ctx, sp, group)
			if st != 0 {
				return st
			}
			next = append(next, name)
		}
		sp.runs = next
	}
	return 0
}

// mergeGroup merges runs into a new one, and removes them.
func (s *sorter) mergeGroup(ctx context.Context, sp *spill, group []string) (string, int) {
	srcs, st := openSources(ctx, sp.c, group, s.delim)
	if st != 0 {
		return "", st
	}
	name, f, st := sp.create()
	if st != 0 {
		closeSources(srcs)
		return "", st
	}
	w := newTxOut(f)
	st = s.mergeTo(ctx, sp.c, srcs, group, w)
	err := w.Flush()
	w.release()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if st == 0 && err != nil {
		sp.c.Errorf("write failed: %s: %s", name, txErr(err))
		st = 2
	}
	if st != 0 {
		return "", st
	}
	for _, old := range group {
		sp.c.FS.Remove(sp.c.Abs(old))
	}
	return name, 0
}

// copyIfSame points *name at a temporary copy of input when input is the
// file output names (sort -m -o f f), whose opening would truncate it.
func (sp *spill) copyIfSame(ctx context.Context, input, output string, name *string) int {
	if shell.IsDevice(input) || input == "-" {
		return 0
	}
	a, err1 := sp.c.Stat(input)
	b, err2 := sp.c.Stat(output)
	if err1 != nil || err2 != nil {
		return 0
	}
	if sa, sb := fuStatOf(a), fuStatOf(b); sa.Dev != sb.Dev || sa.Ino != sb.Ino {
		return 0
	}
	r, err := txOpen(ctx, sp.c, input)
	if err != nil {
		sp.c.Errorf("cannot read: %s: %s", input, txErr(err))
		return 2
	}
	defer r.Close()
	tmp, f, st := sp.create()
	if st != 0 {
		return st
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if txIsCtx(err) {
			return txCtxStatus
		}
		sp.c.Errorf("write failed: %s: %s", tmp, txErr(err))
		return 2
	}
	*name = tmp
	return 0
}
