package storage

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// ImportRequest says what [Pool.Import] makes.
type ImportRequest struct {
	Name string // the new snapshot ("snp_…")
	// Accept is shown the archive's header before any of its data is
	// received. It returns the local snapshot the archive is incremental
	// against ("" for a whole archive) and the most bytes the received
	// data may take (0: no limit); an error ends the import.
	Accept func(ArchiveHeader) (parent string, maxBytes int64, err error)
}

// Import receives the archive r into a new snapshot req.Name. The
// snapshot is built in staging/ and renamed into place only once every
// digest has checked out, so a corrupted, truncated or refused archive
// leaves nothing visible, and a crash leaves a staging leftover that
// Reconcile removes. Errors: [rung.ErrInvalid] for an archive that does
// not check out or a stream that does what rung never sends (device
// nodes, paths out of the subvolume, clones from other subvolumes),
// [rung.ErrConflict] when the archive's parent is not the snapshot Accept
// named, [rung.ErrExists], [rung.ErrLimit] (req's byte limit), Accept's
// errors, r's, ctx's.
func (p *Pool) Import(ctx context.Context, r io.Reader, req ImportRequest) (Manifest, error) {
	if err := p.check(ctx, req.Name); err != nil {
		return Manifest{}, err
	}
	if err := wantKind(req.Name, snapshotPrefix, "snapshot"); err != nil {
		return Manifest{}, err
	}
	br := bufio.NewReaderSize(r, 256<<10)
	var magic [len(archiveMagic)]byte
	if _, err := io.ReadFull(br, magic[:]); err != nil || string(magic[:]) != archiveMagic {
		return Manifest{}, badArchive("not a rung snapshot archive")
	}
	hb, err := readBlock(br, maxHeaderBytes, "header")
	if err != nil {
		return Manifest{}, err
	}
	var h ArchiveHeader
	if err := json.Unmarshal(hb, &h); err != nil {
		return Manifest{}, badArchive("header: %v", err)
	}
	if h.Format != ArchiveFormat || h.Compression != "zstd" {
		return Manifest{}, badArchive("format %d, compression %q: want format %d, zstd", h.Format, clip(h.Compression), ArchiveFormat)
	}
	parent, maxBytes, err := req.Accept(h)
	if err != nil {
		return Manifest{}, err
	}
	cr, err := newChunkReader(br)
	if err != nil {
		return Manifest{}, err
	}
	defer cr.dec.Close()
	rv := &receiver{s: &streamReader{r: cr}, root: -1, parent: -1, wfd: -1}
	defer func() {
		if rv.root >= 0 {
			unix.Close(rv.root)
		}
		if rv.parent >= 0 {
			unix.Close(rv.parent)
		}
	}()
	if (parent == "") != (h.ParentUUID == "") {
		return Manifest{}, rung.Errorf(rung.ErrConflict, "snapshot archive: incremental archives need their parent snapshot, whole ones none")
	}
	if parent != "" {
		if err := p.openParent(ctx, rv, parent, h); err != nil {
			return Manifest{}, err
		}
	}
	if err := rv.s.header(); err != nil {
		return Manifest{}, err
	}
	staged := stagingName(req.Name)
	if err := p.begin(rv, staged); err != nil {
		p.unstage(ctx, staged)
		return Manifest{}, err
	}
	m, err := p.receiveArchive(ctx, rv, cr, br, hb, maxBytes)
	if err == nil {
		err = unix.Renameat2(p.stageFd, staged, p.snpFd, req.Name, unix.RENAME_NOREPLACE)
		if err == unix.EEXIST {
			err = rung.Errorf(rung.ErrExists, "%s already exists", req.Name)
		}
	}
	if err == nil {
		// Read-only once in place (btrfs will not move a read-only
		// subvolume to another directory); a crash before this leaves a
		// snapshot no metadata names, which Reconcile removes.
		if err = setReadOnly(rv.root); err != nil {
			if derr := p.destroy(p.snpFd, req.Name); derr != nil {
				p.log.WarnContext(ctx, "subvolume left for reconcile", "subvolume", req.Name, "err", derr)
			}
			return Manifest{}, fmt.Errorf("import %s: make read-only: %w", req.Name, err)
		}
		return m, nil
	}
	if err != nil {
		p.unstage(ctx, staged)
		if errors.Is(err, errQuota) {
			err = &rung.LimitError{Limit: rung.LimitSnapshotBytes, Max: maxBytes}
		}
		return Manifest{}, err
	}
	return m, nil
}

// openParent opens the local parent snapshot for rv and checks it is the
// version the archive's stream was made against.
func (p *Pool) openParent(ctx context.Context, rv *receiver, parent string, h ArchiveHeader) error {
	info, err := p.Info(ctx, parent)
	if err != nil {
		return err
	}
	uuid, _ := info.SendUUID()
	if uuid != h.ParentUUID {
		return rung.Errorf(rung.ErrConflict, "snapshot archive: it is relative to a snapshot this server does not have")
	}
	if rv.parentID, err = parseUUID(uuid); err != nil {
		return err
	}
	rv.parent, err = p.openSubvol(parent)
	return err
}

// receiveArchive applies the stream under a byte limit, then checks the
// manifest against what was read.
func (p *Pool) receiveArchive(ctx context.Context, rv *receiver, cr *chunkReader, br *bufio.Reader, hb []byte, maxBytes int64) (Manifest, error) {
	if maxBytes > 0 && p.quota != QuotaOff {
		if err := qgroupLimit(rv.root, 0, uint64(maxBytes)); err != nil {
			return Manifest{}, fmt.Errorf("import: limit: %w", err)
		}
	}
	if err := rv.run(ctx); err != nil {
		return Manifest{}, err
	}
	if p.quota != QuotaOff {
		// The limit only bounded the import; a fork of the snapshot gets
		// its own sandbox's.
		if err := qgroupLimit(rv.root, 0, 0); err != nil {
			return Manifest{}, fmt.Errorf("import: lift limit: %w", err)
		}
	}
	mb, err := readBlock(br, maxManifestBytes, "manifest")
	if err != nil {
		return Manifest{}, err
	}
	var tail [sha256.Size + len(archiveEnd)]byte
	if _, err := io.ReadFull(br, tail[:]); err != nil || string(tail[sha256.Size:]) != archiveEnd {
		return Manifest{}, badArchive("truncated after its manifest")
	}
	if sum := sha256.Sum256(mb); !bytes.Equal(sum[:], tail[:sha256.Size]) {
		return Manifest{}, badArchive("manifest digest mismatch")
	}
	var m Manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return Manifest{}, badArchive("manifest: %v", err)
	}
	hsum := sha256.Sum256(hb)
	switch {
	case m.HeaderSHA256 != hex.EncodeToString(hsum[:]):
		return Manifest{}, badArchive("header digest mismatch")
	case len(m.Chunks) != len(cr.chunks):
		return Manifest{}, badArchive("manifest lists %d chunks, the archive holds %d", len(m.Chunks), len(cr.chunks))
	case m.StreamBytes != cr.n || m.StreamSHA256 != hex.EncodeToString(cr.stream.Sum(nil)):
		return Manifest{}, badArchive("stream digest mismatch")
	}
	for i, c := range m.Chunks {
		if c != cr.chunks[i] {
			return Manifest{}, badArchive("chunk %d does not match the manifest", i)
		}
	}
	return m, nil
}

// unstage removes a staged import, leaving it to Reconcile if it cannot.
func (p *Pool) unstage(ctx context.Context, staged string) {
	if err := p.remove(p.stageFd, dirStaging, staged); err != nil {
		p.log.WarnContext(ctx, "staging subvolume left for reconcile", "subvolume", staged, "err", err)
	}
}

func readBlock(br *bufio.Reader, max int, what string) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(br, n[:]); err != nil {
		return nil, badArchive("truncated %s", what)
	}
	l := binary.BigEndian.Uint32(n[:])
	if l == 0 || l > uint32(max) {
		return nil, badArchive("%s of %d bytes", what, l)
	}
	b := make([]byte, l)
	if _, err := io.ReadFull(br, b); err != nil {
		return nil, badArchive("truncated %s", what)
	}
	return b, nil
}

// chunkReader yields the send stream of an archive's chunks, each
// checked against its digest before it is decompressed, and keeps the
// digests for the manifest check. It returns io.EOF after the chunk list's
// end marker.
type chunkReader struct {
	r      *bufio.Reader
	dec    *zstd.Decoder
	cur    []byte // what is left of the current chunk
	buf    []byte // decompressed chunk; cap ArchiveChunkBytes
	z      []byte
	stream hash.Hash
	n      int64
	chunks []Chunk
	done   bool
}

func newChunkReader(r *bufio.Reader) (*chunkReader, error) {
	// DecodeAll into a buffer of cap ArchiveChunkBytes with the cap as a
	// limit: a chunk that inflates past it (a bomb) is an error, not an
	// allocation.
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecodeAllCapLimit(true), zstd.WithDecoderMaxMemory(2*ArchiveChunkBytes))
	if err != nil {
		return nil, err
	}
	return &chunkReader{r: r, dec: dec, buf: make([]byte, 0, ArchiveChunkBytes), stream: sha256.New()}, nil
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.cur) == 0 {
		if c.done {
			return 0, io.EOF
		}
		if err := c.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.cur)
	c.cur = c.cur[n:]
	return n, nil
}

func (c *chunkReader) next() error {
	var hdr [4 + sha256.Size]byte
	if _, err := io.ReadFull(c.r, hdr[:4]); err != nil {
		return badArchive("truncated in chunk %d", len(c.chunks))
	}
	zlen := binary.BigEndian.Uint32(hdr[:4])
	if zlen == 0 {
		c.done = true
		return nil
	}
	if zlen > maxChunkZBytes {
		return badArchive("chunk %d of %d bytes", len(c.chunks), zlen)
	}
	if _, err := io.ReadFull(c.r, hdr[4:]); err != nil {
		return badArchive("truncated in chunk %d", len(c.chunks))
	}
	if cap(c.z) < int(zlen) {
		c.z = make([]byte, zlen)
	}
	c.z = c.z[:zlen]
	if _, err := io.ReadFull(c.r, c.z); err != nil {
		return badArchive("truncated in chunk %d", len(c.chunks))
	}
	sum := sha256.Sum256(c.z)
	if !bytes.Equal(sum[:], hdr[4:]) {
		return badArchive("chunk %d digest mismatch", len(c.chunks))
	}
	out, err := c.dec.DecodeAll(c.z, c.buf[:0])
	if err != nil {
		return badArchive("chunk %d: %v", len(c.chunks), err)
	}
	c.stream.Write(out)
	c.n += int64(len(out))
	c.chunks = append(c.chunks, Chunk{SHA256: hex.EncodeToString(sum[:]), Bytes: len(out), ZBytes: int(zlen)})
	c.cur = out
	return nil
}
