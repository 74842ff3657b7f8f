package storage_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
	"rung.dev/rung/storage"
	"rung.dev/rung/storage/storagetest"
)

// sendStream builds a version 1 btrfs send stream, the way a tenant
// crafting a hostile archive would.
type sendStream struct{ b bytes.Buffer }

type tlv struct {
	typ uint16
	val []byte
}

func newStream() *sendStream {
	s := &sendStream{}
	s.b.WriteString("btrfs-stream\x00")
	binary.Write(&s.b, binary.LittleEndian, uint32(1))
	return s
}

func str(typ uint16, v string) tlv { return tlv{typ, []byte(v)} }

func u64(typ uint16, v uint64) tlv {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	return tlv{typ, b}
}

func (s *sendStream) cmd(c uint16, attrs ...tlv) *sendStream {
	var payload bytes.Buffer
	for _, a := range attrs {
		binary.Write(&payload, binary.LittleEndian, a.typ)
		binary.Write(&payload, binary.LittleEndian, uint16(len(a.val)))
		payload.Write(a.val)
	}
	h := make([]byte, 10, 10+payload.Len())
	binary.LittleEndian.PutUint32(h, uint32(payload.Len()))
	binary.LittleEndian.PutUint16(h[4:], c)
	h = append(h, payload.Bytes()...)
	crc := ^crc32.Update(^uint32(0), crc32.MakeTable(crc32.Castagnoli), h)
	binary.LittleEndian.PutUint32(h[6:], crc)
	s.b.Write(h)
	return s
}

var streamUUID = bytes.Repeat([]byte{7}, 16)

// subvol starts a whole stream.
func (s *sendStream) subvol() *sendStream {
	return s.cmd(1, str(15, "x"), tlv{1, streamUUID}, u64(2, 5))
}

func (s *sendStream) end() []byte {
	s.cmd(21)
	return s.b.Bytes()
}

// TestImportHostile imports crafted streams that do what the kernel never
// sends: each must be refused with invalid_argument, touch nothing
// outside its staging subvolume, and leave nothing behind.
func TestImportHostile(t *testing.T) {
	p := storagetest.NewTestPool(t)
	ctx := t.Context()
	must(t, p.Create(ctx, "sbx_victim"))
	must(t, os.WriteFile(filepath.Join(p.Path("sbx_victim"), "fs/workspace/secret"), []byte("secret"), 0o600))
	must(t, p.Snapshot(ctx, "sbx_victim", "snp_victim"))
	victim, err := p.Info(ctx, "snp_victim")
	must(t, err)
	vu, err := storage.ParseUUID(victim.UUID)
	must(t, err)
	outside := t.TempDir()

	cases := []struct {
		name   string
		stream []byte
	}{
		{"block device node", newStream().subvol().cmd(5, str(15, "disk"), u64(5, unix.S_IFBLK|0o600), u64(8, unix.Mkdev(8, 0))).end()},
		{"character device node", newStream().subvol().cmd(5, str(15, "mem"), u64(5, unix.S_IFCHR|0o600), u64(8, unix.Mkdev(1, 1))).end()},
		{"dot-dot path", newStream().subvol().cmd(3, str(15, "../escape")).end()},
		{"absolute path", newStream().subvol().cmd(3, str(15, outside+"/abs")).end()},
		{"write through a symlink", newStream().subvol().
			cmd(8, str(15, "up"), str(17, outside)).
			cmd(3, str(15, "up/planted")).end()},
		{"rename through a symlink", newStream().subvol().
			cmd(8, str(15, "up"), str(17, outside)).
			cmd(3, str(15, "f")).
			cmd(9, str(15, "f"), str(16, "up/planted")).end()},
		{"clone from another tenant's snapshot", newStream().subvol().
			cmd(3, str(15, "stolen")).
			cmd(16, str(15, "stolen"), u64(18, 0), u64(24, 4096), tlv{20, vu[:]}, u64(21, victim.CTransID), str(22, "fs/workspace/secret"), u64(23, 0)).end()},
		{"incremental stream named whole", newStream().cmd(2, str(15, "x"), tlv{1, streamUUID}, u64(2, 5), tlv{20, vu[:]}, u64(21, 1)).end()},
		{"second subvolume", append(newStream().subvol().end(), newStream().subvol().end()[17:]...)},
		{"no end command", newStream().subvol().cmd(3, str(15, "f")).b.Bytes()},
		{"bad checksum", func() []byte {
			b := newStream().subvol().cmd(3, str(15, "f")).end()
			b[len(b)-12] ^= 1 // in the mkfile command's path
			return b
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var arch bytes.Buffer
			must(t, storage.WriteArchive(&arch, storage.ArchiveHeader{UUID: "07070707-0707-0707-0707-070707070707"}, tc.stream))
			_, err := importBytes(t, p, arch.Bytes(), "snp_hostile", "")
			if !errors.Is(err, rung.ErrInvalid) {
				t.Errorf("import: %v, want invalid_argument", err)
			}
			if ok, _ := p.Exists(ctx, "snp_hostile"); ok {
				t.Error("refused import left a snapshot")
			}
			assertStagingEmpty(t, p)
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Errorf("the stream reached outside its subvolume: %v", ents)
			}
		})
	}
	// The same kinds of entries are fine when they are what a sandbox
	// holds: a whiteout, a FIFO, a socket.
	ok := newStream().subvol().
		cmd(5, str(15, "whiteout"), u64(5, unix.S_IFCHR), u64(8, 0)).
		cmd(6, str(15, "fifo")).
		cmd(7, str(15, "sock")).end()
	var arch bytes.Buffer
	must(t, storage.WriteArchive(&arch, storage.ArchiveHeader{UUID: "07070707-0707-0707-0707-070707070707"}, ok))
	_, err = importBytes(t, p, arch.Bytes(), "snp_fine", "")
	must(t, err)
}

// TestImportCorrupt damages an exported archive in each of its parts; the
// import must detect it by digest (or framing) and leave nothing visible.
func TestImportCorrupt(t *testing.T) {
	p := storagetest.NewTestPool(t)
	ctx := t.Context()
	must(t, p.Create(ctx, "sbx_a"))
	populate(t, p, "sbx_a")
	must(t, p.Snapshot(ctx, "sbx_a", "snp_a"))
	good := exportBytes(t, p, "snp_a", "")
	flip := func(at int) []byte {
		b := slices.Clone(good)
		b[at] ^= 0x40
		return b
	}
	mid := len(good) / 2
	cases := []struct {
		name string
		data []byte
	}{
		{"magic", flip(2)},
		{"header", flip(20)},
		{"first chunk", flip(200)},
		{"middle chunk", flip(mid)},
		{"manifest", flip(len(good) - 60)},
		{"manifest digest", flip(len(good) - 20)},
		{"end marker", flip(len(good) - 2)},
		{"truncated in a chunk", good[:mid]},
		{"truncated before the manifest", good[:len(good)-200]},
		{"empty", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := importBytes(t, p, tc.data, "snp_b", "")
			if !errors.Is(err, rung.ErrInvalid) {
				t.Fatalf("import of a damaged archive: %v, want invalid_argument", err)
			}
			if ok, _ := p.Exists(ctx, "snp_b"); ok {
				t.Fatal("damaged archive made a visible snapshot")
			}
			assertStagingEmpty(t, p)
		})
	}
	_, err := importBytes(t, p, good, "snp_b", "")
	must(t, err)
	sameTree(t, p, "snp_a", "snp_b")
}
