package e2b

import (
	"context"
	"net/http"
	"strings"
	"unicode/utf8"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	pb "rung.dev/rung/e2b/envdpb/filesystem"
)

// A file's E2B metadata (envd 0.6.2) is its extended attributes
// user.e2b.<key>: an upload's X-Metadata-<key> headers set them, and
// Stat, ListDir, Move and the upload's answer report them as EntryInfo's
// metadata, the prefix cut off. Attributes written there from inside the
// sandbox (setfattr, os.setxattr) show the same way.
const (
	metadataPrefix = "user.e2b."
	metadataHeader = "X-Metadata-"
	// maxMetadataKey is the longest key: the kernel's 255-byte limit on
	// an attribute's name, less the prefix.
	maxMetadataKey = 255 - len(metadataPrefix)
	// maxMetadataBytes bounds one upload's metadata, each key counted
	// with its prefix and value: what fits in one 4 KiB block beside
	// the file, as envd bounds it.
	maxMetadataBytes = 4096
)

// uploadMetadata returns the metadata an upload's X-Metadata-* headers
// carry (keys lowercased; the first of repeated headers), an empty map
// for none: an upload replaces the file's metadata, so no headers clear
// it. Keys and values must be printable ASCII, keys at most
// maxMetadataKey bytes and the whole at most maxMetadataBytes; anything
// else is ErrInvalid (400), before any file is written.
func uploadMetadata(h http.Header) (map[string]string, error) {
	md := map[string]string{}
	total := 0
	for name, vals := range h {
		if len(vals) == 0 || len(name) <= len(metadataHeader) || !strings.EqualFold(name[:len(metadataHeader)], metadataHeader) {
			continue
		}
		k, v := strings.ToLower(name[len(metadataHeader):]), vals[0]
		if len(k) > maxMetadataKey {
			return nil, rung.Errorf(rung.ErrInvalid, "invalid metadata: key %q longer than %d bytes", clip(k), maxMetadataKey)
		}
		if i := nonPrintable(k); i >= 0 {
			return nil, rung.Errorf(rung.ErrInvalid, "invalid metadata: key %q has a byte outside printable ASCII at %d", clip(k), i)
		}
		if i := nonPrintable(v); i >= 0 {
			return nil, rung.Errorf(rung.ErrInvalid, "invalid metadata: value of %q has a byte outside printable ASCII at %d", clip(k), i)
		}
		md[k] = v
		total += len(metadataPrefix) + len(k) + len(v)
	}
	if total > maxMetadataBytes {
		return nil, rung.Errorf(rung.ErrInvalid, "invalid metadata: %d bytes with the %s prefix per key, more than %d", total, metadataPrefix, maxMetadataBytes)
	}
	return md, nil
}

// nonPrintable returns the offset of s's first byte outside 0x20-0x7e,
// or -1.
func nonPrintable(s string) int {
	for i := range len(s) {
		if s[i] < 0x20 || s[i] > 0x7e {
			return i
		}
	}
	return -1
}

// fileMetadata is a file's metadata as EntryInfo carries it: nil for none,
// which the SDK shows as undefined. An attribute set from inside the
// sandbox may hold any bytes; one whose key or value is not UTF-8 (which
// a protobuf string must be) is left out rather than failing the answer.
func fileMetadata(m map[string]string) map[string]string {
	var out map[string]string
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(m))
		}
		out[k] = v
	}
	return out
}

// addMetadata fills in the metadata of entries, which describe paths
// (controller paths) of caller c's sandbox, in one controller call.
func (s *Server) addMetadata(ctx context.Context, c caller, paths []string, entries []*pb.EntryInfo) error {
	if len(paths) == 0 {
		return nil
	}
	mds, err := s.ctrl.FileAttrs(ctx, c.tenant, c.sandbox, controller.AttrsRequest{Prefix: metadataPrefix, Paths: paths})
	if err != nil {
		return err
	}
	for i, md := range mds {
		entries[i].Metadata = fileMetadata(md)
	}
	return nil
}
