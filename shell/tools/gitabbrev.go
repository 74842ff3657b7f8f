package tools

import (
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"math/bits"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// This file abbreviates object names as git does when core.abbrev is not
// set: at least 7 hex digits, more in a repository whose packs hold 2^14
// objects or more (half the bits of the packed object count, rounded
// up: loose objects are not counted), and longer still until no other
// object shares the prefix. gitShort's fixed 7 digits are right only in
// small repositories; stash stores its abbreviation in commit messages,
// so it uses this.

// abbrev returns h abbreviated as git would; ok is false when git's
// answer depends on what is not read here (core.abbrev set, a
// multi-pack index, alternate object stores).
func (g *gitCtx) abbrev(h plumbing.Hash) (string, bool) {
	if _, set := g.config("core.abbrev"); set {
		return "", false
	}
	objects := g.top + "/.git/objects"
	for _, f := range []string{"/info/alternates", "/pack/multi-pack-index"} {
		if _, err := g.c.FS.Lstat(objects + f); !errors.Is(err, fs.ErrNotExist) {
			return "", false
		}
	}
	count, ok := g.packedCount(objects + "/pack")
	if !ok {
		return "", false
	}
	n := 7
	if count > 0 {
		n = max(n, (bits.Len64(count)+1)/2)
	}
	// Objects sharing the first three bytes are the only ones that can
	// share 7 digits or more.
	others, err := g.st.HashesWithPrefix(h[:3])
	if err != nil {
		return "", false
	}
	s := h.String()
	for _, o := range others {
		if o == h {
			continue
		}
		common := 0
		for common < len(s) && o.String()[common] == s[common] {
			common++
		}
		n = max(n, common+1)
	}
	return s[:min(n, len(s))], true
}

// packedCount sums the object counts of the packs in dir, read from each
// index's fan-out table (its last entry), as git's
// approximate_object_count does; a pack counts when both its .idx and
// .pack exist.
func (g *gitCtx) packedCount(dir string) (uint64, bool) {
	ents, err := g.c.FS.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, true
	}
	if err != nil {
		return 0, false
	}
	var total uint64
	for _, e := range ents {
		name, isIdx := strings.CutSuffix(e.Name(), ".idx")
		if !isIdx {
			continue
		}
		if _, err := g.c.FS.Lstat(dir + "/" + name + ".pack"); err != nil {
			continue
		}
		n, ok := g.idxCount(dir + "/" + e.Name())
		if !ok {
			return 0, false
		}
		total += uint64(n)
	}
	return total, true
}

// idxCount reads the object count of a pack index, version 1 (fan-out
// first) or 2 ("\377tOc", version, fan-out).
func (g *gitCtx) idxCount(name string) (uint32, bool) {
	f, err := g.c.FS.OpenFile(name, 0, 0)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	head := make([]byte, 8+256*4)
	if _, err := io.ReadFull(f, head); err != nil {
		return 0, false
	}
	fanout := head[:256*4]
	if string(head[:4]) == "\xfftOc" {
		if binary.BigEndian.Uint32(head[4:8]) != 2 {
			return 0, false
		}
		fanout = head[8:]
	}
	return binary.BigEndian.Uint32(fanout[255*4:]), true
}
