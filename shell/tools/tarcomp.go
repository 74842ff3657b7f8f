package tools

import (
	"bufio"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// Compressions GNU tar reads through an external program. Only gzip is
// also written here: compressed bytes of bzip2, xz or zstd from Go
// libraries differ from those programs' (and the resulting file would
// differ from the container's), so creating those goes to the container.
const (
	compGzip  = "gzip"
	compBzip2 = "bzip2"
	compXz    = "xz"
	compZstd  = "zstd"
)

// tarCompOption is the option GNU tar suggests for a compression
// ("Archive is compressed. Use -z option").
var tarCompOption = map[string]string{compGzip: "-z", compBzip2: "-j", compXz: "-J", compZstd: "--zstd"}

// tarMagic names the compression whose magic number starts b, or "".
func tarMagic(b []byte) string {
	switch {
	case len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b:
		return compGzip
	case len(b) >= 3 && string(b[:3]) == "BZh":
		return compBzip2
	case len(b) >= 6 && string(b[:6]) == "\xfd7zXZ\x00":
		return compXz
	case len(b) >= 4 && string(b[:4]) == "\x28\xb5\x2f\xfd":
		return compZstd
	}
	return ""
}

// tarAutoSuffix is the compression -a (--auto-compress) picks for an
// archive name when creating, as GNU tar's suffix table does; "" for no
// compression. Suffixes of compressions the tier does not write (and
// lzip, lzma, lzop, compress) are named too, so the caller can refuse.
func tarAutoSuffix(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i < 0 || strings.Contains(name[i:], "/") {
		return ""
	}
	switch name[i:] {
	case ".gz", ".tgz", ".taz":
		return compGzip
	case ".bz2", ".tz2", ".tbz2", ".tbz":
		return compBzip2
	case ".xz", ".txz":
		return compXz
	case ".zst", ".tzst":
		return compZstd
	case ".Z", ".taZ":
		return "compress"
	case ".lz":
		return "lzip"
	case ".lzma", ".tlz":
		return "lzma"
	case ".lzo":
		return "lzop"
	}
	return ""
}

// tarCompErr is a failure of the decompressor, as opposed to the tar
// format: GNU tar reports those through the external program's words,
// which the tier does not reproduce.
type tarCompErr struct{ err error }

func (e *tarCompErr) Error() string { return e.err.Error() }
func (e *tarCompErr) Unwrap() error { return e.err }

// compReader marks the errors of a decompressor as tarCompErr.
type compReader struct{ r io.Reader }

func (c compReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF {
		err = &tarCompErr{err}
	}
	return n, err
}

// decompressor opens the archive's compressed stream. want is the
// compression named by the options ("" for none); the caller has peeked
// at the magic. It returns the reader, or a status after reporting what
// GNU tar would (or refusing), with ok false.
func (r *tarRun) decompressor(br *bufio.Reader, want string) (_ io.Reader, status int, ok bool) {
	head, _ := br.Peek(6)
	kind := tarMagic(head)
	if want == "" {
		if r.file == "-" {
			// GNU tar does not detect the compression of its standard
			// input: it reads the first block and stops.
			if kind != "" {
				r.c.Errorf("Archive is compressed. Use %s option", tarCompOption[kind])
				r.c.Errorf("Error is not recoverable: exiting now")
				return nil, 2, false
			}
			return br, 0, true
		}
		want = kind
	}
	if want == "" {
		return br, 0, true
	}
	r.comp = want
	if kind != want {
		// the program GNU tar runs refuses the input, in its own words
		if len(head) < 6 {
			return nil, r.c.Fail("a compressed archive shorter than its magic number"), false
		}
		switch want {
		case compGzip:
			io.WriteString(r.c.Stderr, "\ngzip: stdin: not in gzip format\n")
			r.c.Errorf("Child returned status 1")
		case compBzip2:
			io.WriteString(r.c.Stderr, "bzip2: (stdin) is not a bzip2 file.\n")
			r.c.Errorf("Child returned status 2")
		case compXz:
			io.WriteString(r.c.Stderr, "xz: (stdin): File format not recognized\n")
			r.c.Errorf("Child returned status 1")
		case compZstd:
			if kind == compGzip || kind == compXz {
				// zstd also reads gzip and xz input
				return nil, r.c.Fail("--zstd on a " + kind + " archive"), false
			}
			io.WriteString(r.c.Stderr, "zstd: /*stdin*\\: unsupported format \n")
			r.c.Errorf("Child returned status 1")
		}
		r.c.Errorf("Error is not recoverable: exiting now")
		return nil, 2, false
	}
	switch want {
	case compGzip:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, r.c.Fail("a damaged gzip header"), false
		}
		return compReader{zr}, 0, true
	case compBzip2:
		// the reader holds one block of up to 900 kB, as 4-byte entries
		if err := r.c.Reserve(4 << 20); err != nil {
			return nil, 126, false
		}
		return compReader{bzip2.NewReader(br)}, 0, true
	case compXz:
		dict, ok := xzDictSize(br)
		if !ok {
			return nil, r.c.Fail("an xz archive whose first block is not LZMA2 alone"), false
		}
		if err := r.c.Reserve(int64(dict) + 1<<20); err != nil {
			return nil, 126, false
		}
		xr, err := xz.ReaderConfig{DictCap: int(max(dict, 4096))}.NewReader(br)
		if err != nil {
			return nil, r.c.Fail(fmt.Sprintf("an xz archive the decoder refuses (%v)", err)), false
		}
		return compReader{xr}, 0, true
	case compZstd:
		return r.zstdReader(br)
	}
	return nil, r.c.Fail("compression " + want), false
}

// zstdReader decodes zstd frames with a window of at most 128 MiB, the
// zstd program's default limit; memory is counted as the window twice.
func (r *tarRun) zstdReader(br *bufio.Reader) (io.Reader, int, bool) {
	var h zstd.Header
	head, _ := br.Peek(zstd.HeaderMaxSize)
	if err := h.Decode(head); err != nil {
		return nil, r.c.Fail("a zstd frame header the decoder refuses"), false
	}
	window := h.WindowSize
	if h.SingleSegment {
		window = h.FrameContentSize
	}
	const maxWindow = 128 << 20
	if window > maxWindow {
		return nil, r.c.Fail("a zstd frame with a window over 128 MiB"), false
	}
	if err := r.c.Reserve(int64(2*window) + 1<<20); err != nil {
		return nil, 126, false
	}
	zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(maxWindow))
	if err != nil {
		return nil, r.c.Fail("a zstd stream the decoder refuses"), false
	}
	r.closers = append(r.closers, zr.Close)
	return compReader{zr}, 0, true
}

// xzDictSize reads the LZMA2 dictionary size from the first block
// header of an xz stream; ok is false unless that block's only filter is
// LZMA2 (the xz program's default chain).
func xzDictSize(br *bufio.Reader) (uint32, bool) {
	b, _ := br.Peek(12 + 1024)
	if len(b) < 13 || b[12] == 0 {
		return 0, len(b) >= 13 // an empty stream: no block, no dictionary
	}
	hdr := b[12:]
	size := (int(hdr[0]) + 1) * 4
	if len(hdr) < size || size < 8 {
		return 0, false
	}
	flags := hdr[1]
	if flags&0x03 != 0 { // more than one filter
		return 0, false
	}
	p := hdr[2:size]
	skipVarint := func() bool {
		for i, c := range p {
			if c&0x80 == 0 {
				p = p[i+1:]
				return true
			}
		}
		return false
	}
	if flags&0x40 != 0 && !skipVarint() {
		return 0, false
	}
	if flags&0x80 != 0 && !skipVarint() {
		return 0, false
	}
	if len(p) < 3 || p[0] != 0x21 || p[1] != 1 || p[2] > 40 {
		return 0, false
	}
	if p[2] == 40 {
		return 0xffffffff, true
	}
	return (2 | uint32(p[2]&1)) << (p[2]/2 + 11), true
}

// isCompErr reports whether err came from a decompressor.
func isCompErr(err error) bool {
	var ce *tarCompErr
	return errors.As(err, &ce)
}
