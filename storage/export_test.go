package storage

import (
	"context"
	"encoding/hex"
	"io"

	"golang.org/x/sys/unix"
)

// SubvolIDOf returns the id of the btrfs subvolume that directory path is
// in.
func SubvolIDOf(path string) (uint64, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return subvolID(fd)
}

// QgroupDirOf returns the sysfs directory of subvolume id's level-0
// quota group.
func (p *Pool) QgroupDirOf(id uint64) string { return p.qgroupDirID(id) }

// WriteArchive writes an archive of header h around a send stream, for
// tests that craft their own streams.
func WriteArchive(w io.Writer, h ArchiveHeader, stream []byte) error {
	h.Format, h.Compression, h.ChunkBytes = ArchiveFormat, "zstd", ArchiveChunkBytes
	_, err := writeArchive(w, h, func(cw io.Writer) error {
		_, err := cw.Write(stream)
		return err
	})
	return err
}

// ParseUUID is parseUUID.
var ParseUUID = parseUUID

// StageRollback does what Replace does up to the exchange, as a crash
// right before it would leave the pool.
func (p *Pool) StageRollback(ctx context.Context, name, snap string) error {
	fd, err := p.openSubvol(name)
	if err != nil {
		return err
	}
	info, err := subvolInfo(fd)
	unix.Close(fd)
	if err != nil {
		return err
	}
	old, _ := parseUUID(info.UUID)
	return p.stageFork(ctx, snap, name, name+rollbackMark+snap+"."+hex.EncodeToString(old[:]))
}
