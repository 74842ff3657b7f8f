package storage

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"

	"rung.dev/rung"
)

// A snapshot archive is one file that carries a snapshot between pools:
//
//	"RUNGSNAP"
//	be32 length, header (JSON ArchiveHeader)
//	chunks: be32 length n > 0, SHA-256 of the n bytes, n bytes (one zstd
//	        frame of at most ArchiveChunkBytes of the btrfs send stream)
//	be32 0
//	be32 length, manifest (JSON Manifest), SHA-256 of the manifest
//	"RUNGEND\n"
//
// The manifest comes last because an export streams: the digests are
// known only once the data has passed. Each chunk carries its own digest
// ahead of it, so an import checks every chunk before its bytes reach the
// receiver, and the manifest (digest of the header, of every chunk, and of
// the whole uncompressed stream) is checked before the snapshot becomes
// visible. The digests detect corruption in transit or storage; they do
// not authenticate, since whoever can write an archive can write its
// digests, so an import treats every archive as hostile (receive.go).
const (
	archiveMagic = "RUNGSNAP"
	archiveEnd   = "RUNGEND\n"
	// ArchiveFormat is the archive format this version writes and reads.
	ArchiveFormat = 1
	// ArchiveChunkBytes is the most stream bytes one chunk holds.
	ArchiveChunkBytes = 4 << 20
	maxHeaderBytes    = 1 << 20
	maxManifestBytes  = 64 << 20
	// maxChunkZBytes bounds a compressed chunk: zstd's worst case for
	// incompressible data is a little over the input.
	maxChunkZBytes = ArchiveChunkBytes + ArchiveChunkBytes/128 + 4096
)

// ArchiveHeader opens an archive: what it holds, before its data.
type ArchiveHeader struct {
	Format int `json:"format"`
	// UUID and CTransID are the snapshot's send identity on the pool it
	// was exported from (see [SubvolInfo.SendUUID]).
	UUID     string `json:"uuid"`
	CTransID uint64 `json:"ctransid"`
	// ParentUUID and ParentCTransID, set for an incremental archive,
	// name the snapshot its stream is relative to; the importing pool
	// must have it.
	ParentUUID     string `json:"parent_uuid,omitempty"`
	ParentCTransID uint64 `json:"parent_ctransid,omitempty"`
	Compression    string `json:"compression"` // "zstd"
	ChunkBytes     int    `json:"chunk_bytes"`
	// Meta is the exporter's description of the snapshot, passed
	// through unread.
	Meta json.RawMessage `json:"meta,omitempty"`
}

// Manifest closes an archive: the digest of everything before it.
type Manifest struct {
	Format       int     `json:"format"`
	HeaderSHA256 string  `json:"header_sha256"`
	Chunks       []Chunk `json:"chunks"`
	StreamSHA256 string  `json:"stream_sha256"` // of the uncompressed send stream
	StreamBytes  int64   `json:"stream_bytes"`
}

// Chunk is one chunk of an archive.
type Chunk struct {
	SHA256 string `json:"sha256"` // of its compressed bytes
	Bytes  int    `json:"bytes"`  // of stream
	ZBytes int    `json:"zbytes"` // compressed
}

// ExportRequest says what [Pool.Export] writes.
type ExportRequest struct {
	Name   string          // the snapshot
	Parent string          // a snapshot the receiver has: write only the changes since it; "" for all
	Meta   json.RawMessage // goes into the header as is
}

// Export writes snapshot req.Name as an archive to w and returns its
// manifest. Errors: [rung.ErrNotFound], [rung.ErrInvalid], w's error,
// ctx's.
func (p *Pool) Export(ctx context.Context, w io.Writer, req ExportRequest) (Manifest, error) {
	h := ArchiveHeader{Format: ArchiveFormat, Compression: "zstd", ChunkBytes: ArchiveChunkBytes, Meta: req.Meta}
	info, err := p.Info(ctx, req.Name)
	if err != nil {
		return Manifest{}, err
	}
	h.UUID, h.CTransID = info.SendUUID()
	if req.Parent != "" {
		pinfo, err := p.Info(ctx, req.Parent)
		if err != nil {
			return Manifest{}, err
		}
		h.ParentUUID, h.ParentCTransID = pinfo.SendUUID()
	}
	m, err := writeArchive(w, h, func(cw io.Writer) error {
		_, err := p.Send(ctx, cw, req.Name, req.Parent)
		return err
	})
	if err != nil {
		return Manifest{}, fmt.Errorf("export %s: %w", req.Name, err)
	}
	return m, nil
}

// writeArchive writes an archive with header h to w; send writes the
// stream into the writer it is given.
func writeArchive(w io.Writer, h ArchiveHeader, send func(io.Writer) error) (Manifest, error) {
	hb, err := json.Marshal(h)
	if err != nil {
		return Manifest{}, err
	}
	hsum := sha256.Sum256(hb)
	m := Manifest{Format: ArchiveFormat, HeaderSHA256: hex.EncodeToString(hsum[:])}
	bw := bufio.NewWriterSize(w, 256<<10)
	bw.WriteString(archiveMagic)
	writeBlock(bw, hb)
	cw := newChunkWriter(bw)
	serr := send(cw)
	if err := cw.Close(); serr == nil {
		serr = err
	}
	if serr != nil {
		return Manifest{}, serr
	}
	m.Chunks, m.StreamBytes = cw.chunks, cw.n
	m.StreamSHA256 = hex.EncodeToString(cw.stream.Sum(nil))
	mb, err := json.Marshal(m)
	if err != nil {
		return Manifest{}, err
	}
	msum := sha256.Sum256(mb)
	binary.Write(bw, binary.BigEndian, uint32(0))
	writeBlock(bw, mb)
	bw.Write(msum[:])
	bw.WriteString(archiveEnd)
	if err := bw.Flush(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// writeBlock writes a be32 length and b; errors stick in bw.
func writeBlock(bw *bufio.Writer, b []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	bw.Write(n[:])
	bw.Write(b)
}

var (
	encoderOnce sync.Once
	encoder     *zstd.Encoder // EncodeAll is safe for concurrent use
)

// chunkWriter cuts a send stream into chunks and compresses and writes
// them from its own goroutine, so that compressing overlaps the kernel's
// send (on a 2-core host they are the two halves of an export). It is
// not safe for concurrent use; Close waits for the goroutine.
type chunkWriter struct {
	w      *bufio.Writer
	buf    []byte        // the chunk being filled
	work   chan []byte   // full chunks for the goroutine; cap 1: one being filled, one queued, one compressing
	free   chan []byte   // buffers back from the goroutine; cap 3 (all there are)
	done   chan struct{} // closed when the goroutine ends
	bufs   int           // buffers allocated
	stream hash.Hash     // of the uncompressed stream; goroutine only until done
	n      int64         // stream bytes; goroutine only until done
	chunks []Chunk       // goroutine only until done

	mu  sync.Mutex // guards err
	err error      // the first write error: later writes fail with it
}

func newChunkWriter(w *bufio.Writer) *chunkWriter {
	encoderOnce.Do(func() {
		encoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	})
	c := &chunkWriter{w: w, work: make(chan []byte, 1), free: make(chan []byte, 3), done: make(chan struct{}), stream: sha256.New()}
	go c.compress() // ends when Close closes work
	return c
}

func (c *chunkWriter) compress() {
	defer close(c.done)
	var z []byte
	for b := range c.work {
		if c.failed() == nil {
			c.stream.Write(b)
			c.n += int64(len(b))
			z = encoder.EncodeAll(b, z[:0])
			sum := sha256.Sum256(z)
			c.chunks = append(c.chunks, Chunk{SHA256: hex.EncodeToString(sum[:]), Bytes: len(b), ZBytes: len(z)})
			var n [4]byte
			binary.BigEndian.PutUint32(n[:], uint32(len(z)))
			c.w.Write(n[:])
			c.w.Write(sum[:])
			if _, err := c.w.Write(z); err != nil {
				c.mu.Lock()
				c.err = err
				c.mu.Unlock()
			}
		}
		c.free <- b[:0]
	}
}

func (c *chunkWriter) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		if err := c.failed(); err != nil {
			return total - len(p), err
		}
		if c.buf == nil {
			select {
			case c.buf = <-c.free:
			default:
				if c.bufs < 3 {
					c.bufs++
					c.buf = make([]byte, 0, ArchiveChunkBytes)
				} else {
					c.buf = <-c.free
				}
			}
		}
		n := copy(c.buf[len(c.buf):cap(c.buf)], p)
		c.buf, p = c.buf[:len(c.buf)+n], p[n:]
		if len(c.buf) == cap(c.buf) {
			c.work <- c.buf
			c.buf = nil
		}
	}
	return total, nil
}

// Close writes the last chunk and waits for the goroutine.
func (c *chunkWriter) Close() error {
	if len(c.buf) > 0 {
		c.work <- c.buf
		c.buf = nil
	}
	close(c.work)
	<-c.done
	return c.failed()
}

// badArchive is the error for an archive that does not check out.
func badArchive(format string, args ...any) error {
	return rung.Errorf(rung.ErrInvalid, "snapshot archive: "+format, args...)
}
