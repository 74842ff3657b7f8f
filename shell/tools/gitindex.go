package tools

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// This file reads and writes .git/index itself instead of through
// go-git's codec. Reading is one pass over the file's bytes with a few
// allocations for all entries (go-git's decoder reads field by field
// through reflection, a third of a large status). Writing keeps the
// cache-tree extension ("TREE"), which go-git's encoder drops: status
// compares HEAD with the index through it without reading HEAD's trees,
// and commit writes only the trees that changed.
//
// The format is git's index-format(5): versions 2, 3 and 4; optional
// extensions other than TREE are skipped on read and not written (git
// rebuilds them), and a required one (lowercase signature, such as a
// split index's "link") is an error, as it was with go-git.
//
// idx.Cache holds the cache tree as the file does: directories in
// pre-order, each Path one name ("" for the top), Entries -1 for a
// directory that is not valid (its Hash is then zero).

var errGitIndex = errors.New("malformed index file")

const (
	gitIdxExtended    = 0x4000
	gitIdxNameMask    = 0xfff
	gitIdxIntentToAdd = 1 << 13
	gitIdxSkipWT      = 1 << 14
)

// gitDecodeIndex parses an index file.
func gitDecodeIndex(b []byte) (*index.Index, error) {
	if len(b) < 12+20 || string(b[:4]) != "DIRC" {
		return nil, errGitIndex
	}
	idx := &index.Index{Version: binary.BigEndian.Uint32(b[4:])}
	if idx.Version < 2 || idx.Version > 4 {
		return nil, fmt.Errorf("index version %d: %w", idx.Version, index.ErrUnsupportedVersion)
	}
	body, sum := b[:len(b)-20], b[len(b)-20:]
	if !bytes.Equal(sum, make([]byte, 20)) { // index.skipHash writes zeros
		if got := sha1.Sum(body); !bytes.Equal(got[:], sum) {
			return nil, index.ErrInvalidChecksum
		}
	}
	n := int(binary.BigEndian.Uint32(b[8:]))
	if n > len(body)/40 {
		return nil, errGitIndex
	}
	// Names are substrings of one copy of the file: one allocation
	// instead of one per entry.
	text := string(body)
	entries := make([]index.Entry, n)
	idx.Entries = make([]*index.Entry, n)
	off := 12
	prev := ""
	for i := range entries {
		e := &entries[i]
		idx.Entries[i] = e
		if off+62 > len(body) {
			return nil, errGitIndex
		}
		h := body[off:]
		u32 := func(k int) uint32 { return binary.BigEndian.Uint32(h[4*k:]) }
		if s, ns := u32(0), u32(1); s != 0 || ns != 0 {
			e.CreatedAt = time.Unix(int64(s), int64(ns))
		}
		if s, ns := u32(2), u32(3); s != 0 || ns != 0 {
			e.ModifiedAt = time.Unix(int64(s), int64(ns))
		}
		e.Dev, e.Inode, e.Mode = u32(4), u32(5), filemode.FileMode(u32(6))
		e.UID, e.GID, e.Size = u32(7), u32(8), u32(9)
		copy(e.Hash[:], h[40:60])
		flags := binary.BigEndian.Uint16(h[60:])
		e.Stage = index.Stage(flags>>12) & 3
		start := off
		off += 62
		if flags&gitIdxExtended != 0 {
			if idx.Version < 3 || off+2 > len(body) {
				return nil, errGitIndex
			}
			ext := binary.BigEndian.Uint16(body[off:])
			e.IntentToAdd = ext&gitIdxIntentToAdd != 0
			e.SkipWorktree = ext&gitIdxSkipWT != 0
			off += 2
		}
		if idx.Version == 4 {
			strip, k := gitVarint(body[off:])
			if k == 0 || strip > uint64(len(prev)) {
				return nil, errGitIndex
			}
			off += k
			end := bytes.IndexByte(body[off:], 0)
			if end < 0 {
				return nil, errGitIndex
			}
			e.Name = prev[:len(prev)-int(strip)] + string(body[off:off+end])
			off += end + 1
			prev = e.Name
			continue
		}
		l := int(flags & gitIdxNameMask)
		if l == gitIdxNameMask {
			l = bytes.IndexByte(body[off:], 0)
		}
		if l < 0 || off+l > len(body) {
			return nil, errGitIndex
		}
		e.Name = text[off : off+l]
		// 1 to 8 NULs pad the entry to a multiple of 8 bytes.
		off = start + (off-start+l+8)&^7
	}
	if off > len(body) {
		return nil, errGitIndex
	}
	for off < len(body) {
		if off+8 > len(body) {
			return nil, errGitIndex
		}
		sig := body[off : off+4]
		size := int(binary.BigEndian.Uint32(body[off+4:]))
		off += 8
		if size > len(body)-off {
			return nil, errGitIndex
		}
		data := body[off : off+size]
		off += size
		switch {
		case string(sig) == "TREE":
			t, err := gitDecodeCacheTree(data)
			if err != nil {
				return nil, err
			}
			idx.Cache = t
		case sig[0] < 'A' || sig[0] > 'Z':
			return nil, fmt.Errorf("index extension %q: %w", sig, index.ErrUnknownExtension)
		}
	}
	return idx, nil
}

// gitVarint decodes git's offset varint; k is 0 when b is too short.
func gitVarint(b []byte) (v uint64, k int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v = uint64(c & 0x7f)
	k = 1
	for c&0x80 != 0 {
		if k >= len(b) || k > 9 {
			return 0, 0
		}
		c = b[k]
		k++
		v = (v+1)<<7 | uint64(c&0x7f)
	}
	return v, k
}

// gitPutVarint appends v in git's offset varint.
func gitPutVarint(out []byte, v uint64) []byte {
	var tmp [16]byte
	i := len(tmp) - 1
	tmp[i] = byte(v & 0x7f)
	for v >>= 7; v != 0; v >>= 7 {
		v--
		i--
		tmp[i] = 0x80 | byte(v&0x7f)
	}
	return append(out, tmp[i:]...)
}

func gitDecodeCacheTree(b []byte) (*index.Tree, error) {
	t := &index.Tree{}
	for len(b) > 0 {
		nul := bytes.IndexByte(b, 0)
		if nul < 0 {
			return nil, errGitIndex
		}
		var e index.TreeEntry
		e.Path = string(b[:nul])
		b = b[nul+1:]
		sp := bytes.IndexByte(b, ' ')
		nl := bytes.IndexByte(b, '\n')
		if sp < 0 || nl < sp {
			return nil, errGitIndex
		}
		var err1, err2 error
		e.Entries, err1 = strconv.Atoi(string(b[:sp]))
		e.Trees, err2 = strconv.Atoi(string(b[sp+1 : nl]))
		if err1 != nil || err2 != nil || e.Trees < 0 {
			return nil, errGitIndex
		}
		b = b[nl+1:]
		if e.Entries >= 0 {
			if len(b) < 20 {
				return nil, errGitIndex
			}
			copy(e.Hash[:], b[:20])
			b = b[20:]
		} else {
			e.Entries = -1
		}
		t.Entries = append(t.Entries, e)
	}
	return t, nil
}

// gitEncodeIndex serializes idx, whose entries are sorted.
func gitEncodeIndex(idx *index.Index) []byte {
	version := idx.Version
	if version < 2 || version > 4 {
		version = 2
	}
	for _, e := range idx.Entries {
		if (e.IntentToAdd || e.SkipWorktree) && version == 2 {
			version = 3 // extended flags need version 3, as git does
		}
	}
	out := make([]byte, 0, 12+len(idx.Entries)*96)
	out = append(out, "DIRC"...)
	out = binary.BigEndian.AppendUint32(out, version)
	out = binary.BigEndian.AppendUint32(out, uint32(len(idx.Entries)))
	prev := ""
	for _, e := range idx.Entries {
		start := len(out)
		cs, cns := gitIndexTime(e.CreatedAt)
		ms, mns := gitIndexTime(e.ModifiedAt)
		for _, v := range [...]uint32{cs, cns, ms, mns, e.Dev, e.Inode, uint32(e.Mode), e.UID, e.GID, e.Size} {
			out = binary.BigEndian.AppendUint32(out, v)
		}
		out = append(out, e.Hash[:]...)
		flags := uint16(e.Stage&3) << 12
		flags |= uint16(min(len(e.Name), gitIdxNameMask))
		var ext uint16
		if e.IntentToAdd {
			ext |= gitIdxIntentToAdd
		}
		if e.SkipWorktree {
			ext |= gitIdxSkipWT
		}
		if ext != 0 {
			flags |= gitIdxExtended
		}
		out = binary.BigEndian.AppendUint16(out, flags)
		if ext != 0 {
			out = binary.BigEndian.AppendUint16(out, ext)
		}
		if version == 4 {
			common := 0
			for common < len(prev) && common < len(e.Name) && prev[common] == e.Name[common] {
				common++
			}
			out = gitPutVarint(out, uint64(len(prev)-common))
			out = append(out, e.Name[common:]...)
			out = append(out, 0)
			prev = e.Name
			continue
		}
		out = append(out, e.Name...)
		pad := 8 - (len(out)-start)%8
		out = append(out, make([]byte, pad)...)
	}
	if idx.Cache != nil && len(idx.Cache.Entries) > 0 {
		out = append(out, "TREE"...)
		at := len(out)
		out = append(out, 0, 0, 0, 0)
		for _, t := range idx.Cache.Entries {
			out = append(out, t.Path...)
			out = append(out, 0)
			out = strconv.AppendInt(out, int64(t.Entries), 10)
			out = append(out, ' ')
			out = strconv.AppendInt(out, int64(t.Trees), 10)
			out = append(out, '\n')
			if t.Entries >= 0 {
				out = append(out, t.Hash[:]...)
			}
		}
		binary.BigEndian.PutUint32(out[at:], uint32(len(out)-at-4))
	}
	sum := sha1.Sum(out)
	return append(out, sum[:]...)
}

// gitIndexTime splits t for the index; the zero time (and anything
// before 1970) is 0, which never matches a file's stat data.
func gitIndexTime(t time.Time) (uint32, uint32) {
	if t.IsZero() || t.Unix() < 0 {
		return 0, 0
	}
	return uint32(t.Unix()), uint32(t.Nanosecond())
}

// index reads the index (an empty one when there is none) and records
// its mtime in g.indexTime for the racy-git check.
func (g *gitCtx) index() (*index.Index, error) {
	name := g.top + "/.git/index"
	g.indexTime = time.Now().Add(time.Hour)
	f, err := g.c.FS.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return &index.Index{Version: 2}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	b := make([]byte, 0, fi.Size()+1)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read index: %w", err)
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
	idx, err := gitDecodeIndex(b)
	if err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	idx.ModTime = fi.ModTime()
	g.indexTime = idx.ModTime
	return idx, nil
}

// saveIndex writes idx sorted, as git requires, with a cache tree for
// every directory whose tree object exists (see gitBuildTrees). The file
// is written as index.lock and renamed over the index, as git does.
func (g *gitCtx) saveIndex(idx *index.Index) error {
	gitSortEntries(idx.Entries)
	if idx.Version == 0 {
		idx.Version = 2
	}
	idx.ResolveUndo = nil
	idx.Cache = g.cacheTree(idx, gitBuildTrees(idx.Entries, false))
	name := g.top + "/.git/index"
	err := g.writeLocked(name, gitEncodeIndex(idx))
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("Unable to create '%s': File exists", name+".lock")
	}
	if err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	return nil
}

// writeLocked replaces the file name with data as git does: written
// whole to name.lock (which must not exist: fs.ErrExist), then renamed
// over name; the lock goes on any failure after it was made.
func (g *gitCtx) writeLocked(name string, data []byte) error {
	lock := name + ".lock"
	f, err := g.c.FS.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = g.c.FS.Rename(lock, name)
	}
	if err != nil {
		g.c.FS.Remove(lock)
	}
	return err
}

// gitSortEntries sorts index entries by name, then stage, as git does.
func gitSortEntries(es []*index.Entry) {
	sorted := true
	for i := 1; i < len(es) && sorted; i++ {
		sorted = gitEntryLess(es[i-1], es[i])
	}
	if sorted {
		return
	}
	slices.SortFunc(es, func(a, b *index.Entry) int {
		switch {
		case gitEntryLess(a, b):
			return -1
		case gitEntryLess(b, a):
			return 1
		}
		return 0
	})
}

func gitEntryLess(a, b *index.Entry) bool {
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.Stage < b.Stage
}

// gitTreeNode is one directory of the index as a tree object.
type gitTreeNode struct {
	name   string // one path component; "" for the top
	lo, hi int    // the index entries below it
	subs   []*gitTreeNode
	hash   plumbing.Hash
	data   []byte // the tree object's content, when kept
	// bad marks a directory that cannot be written as a tree: it holds
	// an unmerged or intent-to-add entry.
	bad bool
}

// gitBuildTrees computes the tree object of every directory of the
// sorted entries, bottom up; keep retains each tree's content (for
// writing it).
func gitBuildTrees(es []*index.Entry, keep bool) *gitTreeNode {
	var build func(name, prefix string, lo, hi int) *gitTreeNode
	build = func(name, prefix string, lo, hi int) *gitTreeNode {
		n := &gitTreeNode{name: name, lo: lo, hi: hi}
		var data []byte
		for i := lo; i < hi; {
			e := es[i]
			rest := e.Name[len(prefix):]
			if j := strings.IndexByte(rest, '/'); j >= 0 {
				dir := rest[:j]
				sub := prefix + dir + "/"
				k := i + 1
				for k < hi && len(es[k].Name) > len(sub) && es[k].Name[:len(sub)] == sub {
					k++
				}
				c := build(dir, sub, i, k)
				n.subs = append(n.subs, c)
				n.bad = n.bad || c.bad
				data = append(data, "40000 "...)
				data = append(data, dir...)
				data = append(data, 0)
				data = append(data, c.hash[:]...)
				i = k
				continue
			}
			if e.Stage != 0 || e.IntentToAdd {
				n.bad = true
			}
			data = strconv.AppendUint(data, uint64(e.Mode), 8)
			data = append(data, ' ')
			data = append(data, rest...)
			data = append(data, 0)
			data = append(data, e.Hash[:]...)
			i++
		}
		n.hash = plumbing.ComputeHash(plumbing.TreeObject, data)
		if keep {
			n.data = data
		}
		return n
	}
	return build("", "", 0, len(es))
}

// cacheTree turns the trees of idx into its cache-tree extension. A
// directory is valid when its tree object is known to exist: it was valid
// in the cache tree read with the index, this invocation wrote it, or the
// object store has it. Git trusts a valid entry without checking, so an
// entry is never valid for a tree that is not stored.
func (g *gitCtx) cacheTree(idx *index.Index, root *gitTreeNode) *index.Tree {
	known := gitValidTrees(idx.Cache)
	for h := range g.written {
		known[h] = true
	}
	out := &index.Tree{}
	var walk func(n *gitTreeNode) bool
	walk = func(n *gitTreeNode) bool {
		at := len(out.Entries)
		out.Entries = append(out.Entries, index.TreeEntry{Path: n.name, Entries: n.hi - n.lo, Trees: len(n.subs), Hash: n.hash})
		subs := append([]*gitTreeNode(nil), n.subs...)
		// Git orders subtrees by name length, then bytes.
		slices.SortFunc(subs, func(a, b *gitTreeNode) int {
			if len(a.name) != len(b.name) {
				return len(a.name) - len(b.name)
			}
			return strings.Compare(a.name, b.name)
		})
		valid := !n.bad
		for _, c := range subs {
			if !walk(c) {
				valid = false
			}
		}
		if valid && !known[n.hash] {
			valid = g.st.HasEncodedObject(n.hash) == nil
		}
		if !valid {
			out.Entries[at].Entries, out.Entries[at].Hash = -1, plumbing.ZeroHash
		}
		return valid
	}
	walk(root)
	return out
}

// gitValidTrees returns the tree hashes cache tree t records as valid:
// trees known to be stored.
func gitValidTrees(t *index.Tree) map[plumbing.Hash]bool {
	known := map[plumbing.Hash]bool{}
	if t != nil {
		for _, e := range t.Entries {
			if e.Entries >= 0 {
				known[e.Hash] = true
			}
		}
	}
	return known
}

// gitCacheNode is the cache tree read with the index, as a tree.
type gitCacheNode struct {
	valid bool
	hash  plumbing.Hash
	count int
	subs  map[string]*gitCacheNode
}

// gitCacheNodes rebuilds the tree of idx.Cache; nil when there is none or
// it is malformed.
func gitCacheNodes(t *index.Tree) *gitCacheNode {
	if t == nil || len(t.Entries) == 0 || t.Entries[0].Path != "" {
		return nil
	}
	i := 0
	var read func() *gitCacheNode
	read = func() *gitCacheNode {
		if i >= len(t.Entries) {
			return nil
		}
		e := t.Entries[i]
		i++
		n := &gitCacheNode{valid: e.Entries >= 0, hash: e.Hash, count: e.Entries}
		for range e.Trees {
			name := ""
			if i < len(t.Entries) {
				name = t.Entries[i].Path
			}
			c := read()
			if c == nil {
				return nil
			}
			if n.subs == nil {
				n.subs = map[string]*gitCacheNode{}
			}
			n.subs[name] = c
		}
		return n
	}
	root := read()
	if i != len(t.Entries) {
		return nil
	}
	return root
}
