package tools

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// This file abbreviates object names as git does: from core.abbrev's
// length when it is a number, else at least 7 hex digits, more in a
// repository whose packs hold 2^14 objects or more (half the bits of the
// packed object count, rounded up: loose objects are not counted); then
// longer still until no other object, packed or loose, shares the
// prefix. Every abbreviated name the tools print (log --oneline, the
// commit summary, "HEAD detached at", stash messages) comes from here.

// gitAbbrev is one invocation's abbreviation state, read once.
type gitAbbrev struct {
	loaded bool
	min    int // the starting length; 40 prints full names
	packed []plumbing.Hash
}

// abbrevRefusal names what makes git's abbreviations unknowable here, or
// "": a multi-pack index or alternate object stores (their objects count
// and we do not read them), or a core.abbrev git would reject. open
// refuses such repositories before anything is printed.
func (g *gitCtx) abbrevRefusal() string {
	objects := g.top + "/.git/objects"
	for _, f := range []string{"/info/alternates", "/pack/multi-pack-index"} {
		if _, err := g.c.FS.Lstat(objects + f); !errors.Is(err, fs.ErrNotExist) {
			return "a repository with " + strings.TrimPrefix(f[strings.LastIndexByte(f, '/'):], "/")
		}
	}
	if _, ok := g.abbrevConfig(); !ok {
		return "core.abbrev"
	}
	return ""
}

// abbrevConfig returns the length core.abbrev asks for (0: git's
// automatic length), with ok false for a value git rejects.
func (g *gitCtx) abbrevConfig() (int, bool) {
	v, set := g.config("core.abbrev")
	if !set {
		return 0, true
	}
	switch strings.ToLower(v) {
	case "auto":
		return 0, true
	case "false", "no", "off":
		return 40, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 4 || n > 40 {
		return 0, false
	}
	return n, true
}

// short abbreviates h as git does by default.
func (g *gitCtx) short(h plumbing.Hash) string { return g.shortN(h, 0) }

// shortN abbreviates h to at least n digits (0: git's default length),
// as git's find_unique_abbrev does.
func (g *gitCtx) shortN(h plumbing.Hash, n int) string {
	s := h.String()
	if g.st == nil {
		return s[:max(n, 7)]
	}
	a := g.loadAbbrev()
	if n == 0 {
		n = a.min
	}
	if n >= 40 {
		return s
	}
	// The packed neighbours of h in sorted order share the longest
	// prefixes with it.
	i, _ := slices.BinarySearchFunc(a.packed, h, func(x, y plumbing.Hash) int { return bytes.Compare(x[:], y[:]) })
	for _, j := range []int{i - 1, i, i + 1} {
		if j >= 0 && j < len(a.packed) && a.packed[j] != h {
			n = max(n, gitCommonHex(s, a.packed[j].String())+1)
		}
	}
	// Loose objects sharing the first two digits are in one directory.
	if ents, err := g.c.FS.ReadDir(g.top + "/.git/objects/" + s[:2]); err == nil {
		for _, e := range ents {
			if o := s[:2] + e.Name(); len(o) == 40 && o != s {
				n = max(n, gitCommonHex(s, o)+1)
			}
		}
	}
	return s[:min(n, 40)]
}

func gitCommonHex(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// loadAbbrev reads the starting length and the packed object names once.
func (g *gitCtx) loadAbbrev() *gitAbbrev {
	a := &g.abbrevs
	if a.loaded {
		return a
	}
	a.loaded = true
	a.min, _ = g.abbrevConfig()
	dir := g.top + "/.git/objects/pack"
	ents, _ := g.c.FS.ReadDir(dir)
	var count uint64
	for _, e := range ents {
		name, isIdx := strings.CutSuffix(e.Name(), ".idx")
		if !isIdx {
			continue
		}
		if _, err := g.c.FS.Lstat(dir + "/" + name + ".pack"); err != nil {
			continue
		}
		hs := g.idxNames(dir + "/" + e.Name())
		count += uint64(len(hs))
		a.packed = append(a.packed, hs...)
	}
	slices.SortFunc(a.packed, func(x, y plumbing.Hash) int { return bytes.Compare(x[:], y[:]) })
	if a.min == 0 {
		a.min = 7
		if count > 0 {
			a.min = max(a.min, (bits.Len64(count)+1)/2)
		}
	}
	return a
}

// idxNames reads the object names of a pack index, version 1 (fan-out,
// then 24-byte entries) or 2 ("\377tOc", version, fan-out, names).
func (g *gitCtx) idxNames(name string) []plumbing.Hash {
	f, err := g.c.FS.OpenFile(name, 0, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, 8+256*4)
	if _, err := io.ReadFull(f, head); err != nil {
		return nil
	}
	v2 := string(head[:4]) == "\xfftOc"
	fanout, rest := head[:256*4], head[256*4:]
	if v2 {
		if binary.BigEndian.Uint32(head[4:8]) != 2 {
			return nil
		}
		fanout, rest = head[8:], nil
	}
	n := int(binary.BigEndian.Uint32(fanout[255*4:]))
	width := 20
	if !v2 {
		width = 24
	}
	buf := make([]byte, n*width)
	copy(buf, rest)
	if _, err := io.ReadFull(f, buf[len(rest):]); err != nil {
		return nil
	}
	out := make([]plumbing.Hash, n)
	for i := range out {
		copy(out[i][:], buf[i*width+width-20:])
	}
	return out
}
