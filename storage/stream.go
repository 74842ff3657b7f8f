package storage

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"strings"

	"rung.dev/rung"
)

// The btrfs send stream, version 1 (fs/btrfs/send.h): a header ("btrfs-stream"
// NUL, le32 version) and commands, each a header (le32 payload length, le16
// command, le32 crc32c of header and payload with the crc field zero) and
// a payload of attributes (le16 type, le16 length, value).

const streamMagic = "btrfs-stream\x00"

// Commands of version 1.
const (
	cmdSubvol       = 1
	cmdSnapshot     = 2
	cmdMkfile       = 3
	cmdMkdir        = 4
	cmdMknod        = 5
	cmdMkfifo       = 6
	cmdMksock       = 7
	cmdSymlink      = 8
	cmdRename       = 9
	cmdLink         = 10
	cmdUnlink       = 11
	cmdRmdir        = 12
	cmdSetXattr     = 13
	cmdRemoveXattr  = 14
	cmdWrite        = 15
	cmdClone        = 16
	cmdTruncate     = 17
	cmdChmod        = 18
	cmdChown        = 19
	cmdUtimes       = 20
	cmdEnd          = 21
	cmdUpdateExtent = 22
)

// Attributes of version 1.
const (
	attrUUID          = 1
	attrCtransid      = 2
	attrIno           = 3
	attrSize          = 4
	attrMode          = 5
	attrUID           = 6
	attrGID           = 7
	attrRdev          = 8
	attrCtime         = 9
	attrMtime         = 10
	attrAtime         = 11
	attrOtime         = 12
	attrXattrName     = 13
	attrXattrData     = 14
	attrPath          = 15
	attrPathTo        = 16
	attrPathLink      = 17
	attrFileOffset    = 18
	attrData          = 19
	attrCloneUUID     = 20
	attrCloneCtransid = 21
	attrClonePath     = 22
	attrCloneOffset   = 23
	attrCloneLen      = 24
	attrMax           = 24
)

// maxCommand bounds one command's payload. The kernel's send buffer is
// 64 KiB (BTRFS_SEND_BUF_SIZE_V1), so no version 1 command is larger.
const maxCommand = 64 << 10

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32c is the kernel's btrfs_crc32c(0, b): seed 0, no final inversion.
// Go's crc32.Update inverts on the way in and out, so start from ^0 and
// invert the result.
func crc32c(b []byte) uint32 { return ^crc32.Update(^uint32(0), castagnoli, b) }

// streamReader reads the commands of one send stream. It is not safe for
// concurrent use.
type streamReader struct {
	r   io.Reader
	buf []byte // the current command: header and payload
	cmd uint16
	// attrs are the current command's attributes, slices of buf, nil
	// when absent; valid until the next call to next.
	attrs [attrMax + 1][]byte
}

func corrupt(format string, args ...any) error {
	return rung.Errorf(rung.ErrInvalid, "snapshot archive: send stream "+format, args...)
}

// header reads and checks the stream header.
func (s *streamReader) header() error {
	var h [len(streamMagic) + 4]byte
	if _, err := io.ReadFull(s.r, h[:]); err != nil {
		return corrupt("header: %v", err)
	}
	if string(h[:len(streamMagic)]) != streamMagic {
		return corrupt("header: not a btrfs send stream")
	}
	if v := binary.LittleEndian.Uint32(h[len(streamMagic):]); v != 1 {
		return corrupt("version %d (only version 1 is made or taken)", v)
	}
	return nil
}

// next reads the next command, checking its length, checksum and
// attributes. At the end of the stream it returns io.EOF.
func (s *streamReader) next() error {
	if cap(s.buf) < 10+maxCommand {
		s.buf = make([]byte, 10, 10+maxCommand)
	}
	s.buf = s.buf[:10]
	if _, err := io.ReadFull(s.r, s.buf); err != nil {
		if err == io.EOF {
			return io.EOF
		}
		return corrupt("truncated: %v", err)
	}
	n := binary.LittleEndian.Uint32(s.buf[0:])
	if n > maxCommand {
		return corrupt("command of %d bytes", n)
	}
	s.buf = s.buf[:10+n]
	if _, err := io.ReadFull(s.r, s.buf[10:]); err != nil {
		return corrupt("truncated: %v", err)
	}
	s.cmd = binary.LittleEndian.Uint16(s.buf[4:])
	want := binary.LittleEndian.Uint32(s.buf[6:])
	binary.LittleEndian.PutUint32(s.buf[6:], 0)
	if crc32c(s.buf) != want {
		return corrupt("command %d: checksum mismatch", s.cmd)
	}
	clear(s.attrs[:])
	for p := s.buf[10:]; len(p) > 0; {
		if len(p) < 4 {
			return corrupt("command %d: truncated attribute", s.cmd)
		}
		typ, l := binary.LittleEndian.Uint16(p), int(binary.LittleEndian.Uint16(p[2:]))
		if typ == 0 || typ > attrMax || len(p) < 4+l {
			return corrupt("command %d: bad attribute %d", s.cmd, typ)
		}
		s.attrs[typ] = p[4 : 4+l : 4+l]
		p = p[4+l:]
	}
	return nil
}

func (s *streamReader) has(a int) bool { return s.attrs[a] != nil }

func (s *streamReader) u64(a int) (uint64, error) {
	v := s.attrs[a]
	if len(v) != 8 {
		return 0, corrupt("command %d: attribute %d missing or malformed", s.cmd, a)
	}
	return binary.LittleEndian.Uint64(v), nil
}

func (s *streamReader) uuid(a int) ([16]byte, error) {
	var u [16]byte
	v := s.attrs[a]
	if len(v) != 16 {
		return u, corrupt("command %d: attribute %d missing or malformed", s.cmd, a)
	}
	copy(u[:], v)
	return u, nil
}

// timespec reads a le64 seconds, le32 nanoseconds attribute.
func (s *streamReader) timespec(a int) (sec int64, nsec int64, err error) {
	v := s.attrs[a]
	if len(v) != 12 {
		return 0, 0, corrupt("command %d: attribute %d missing or malformed", s.cmd, a)
	}
	return int64(binary.LittleEndian.Uint64(v)), int64(binary.LittleEndian.Uint32(v[8:])), nil
}

// bytes returns a raw attribute, which may be empty but must be present.
func (s *streamReader) bytes(a int) ([]byte, error) {
	v := s.attrs[a]
	if v == nil {
		return nil, corrupt("command %d: attribute %d missing", s.cmd, a)
	}
	return v, nil
}

// str returns a string attribute without NUL bytes.
func (s *streamReader) str(a int) (string, error) {
	v, err := s.bytes(a)
	if err != nil {
		return "", err
	}
	if strings.IndexByte(string(v), 0) >= 0 || len(v) >= MaxPathLen {
		return "", corrupt("command %d: attribute %d malformed", s.cmd, a)
	}
	return string(v), nil
}

// path returns a path attribute: relative to the subvolume, without
// empty, "." or ".." components. The kernel never sends anything else;
// refusing it here is what keeps a crafted stream inside its subvolume,
// together with resolving every path beneath it without symlinks.
func (s *streamReader) path(a int) (string, error) {
	p, err := s.str(a)
	if err != nil {
		return "", err
	}
	if p == "" && s.rootOK() {
		return "", nil // the subvolume's root directory itself
	}
	if p == "" || p[0] == '/' {
		return "", corrupt("command %d: path %q not relative", s.cmd, clip(p))
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return "", corrupt("command %d: path %q has a %q component", s.cmd, clip(p), c)
		}
	}
	return p, nil
}

// rootOK reports whether the current command may name the subvolume's
// root directory (an empty path): the kernel sends its owner, mode, times
// and xattrs that way.
func (s *streamReader) rootOK() bool {
	switch s.cmd {
	case cmdChown, cmdChmod, cmdUtimes, cmdSetXattr, cmdRemoveXattr:
		return true
	}
	return false
}
