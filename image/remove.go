package image

// Removing images and collecting the layers no kept version uses.

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"rung.dev/rung"
)

// sweep removes temporaries and layers no version uses, left by a crash
// between writing a layer and recording its image, or between removing a
// version and its layers. Open calls it only when the Store is alone.
func (s *Store) sweep() {
	unlock, err := s.lock()
	if err != nil {
		return
	}
	defer unlock()
	for _, d := range []string{"layers", "images"} {
		ents, _ := os.ReadDir(filepath.Join(s.dir, d))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".tmp-") {
				os.RemoveAll(filepath.Join(s.dir, d, e.Name()))
			}
		}
	}
	used, err := s.usedLayersLocked()
	if err != nil {
		s.log.Warn("image store sweep skipped", "err", err)
		return
	}
	ents, _ := os.ReadDir(filepath.Join(s.dir, "layers"))
	for _, e := range ents {
		l := "sha256:" + e.Name()
		if validDigest(l) && !used[l] {
			s.log.Info("removing unreferenced layer", "layer", l)
			s.removeLayerLocked(l)
		}
	}
}

// removeLayerLocked deletes a layer. The rename makes it vanish whole, so
// a layer directory is always complete: a crash leaves a temporary.
func (s *Store) removeLayerLocked(digest string) {
	tmp := filepath.Join(s.dir, "layers", tempName())
	if err := os.Rename(s.LayerDir(digest), tmp); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("remove layer", "layer", digest, "err", err)
		}
		return
	}
	os.RemoveAll(tmp)
}

// usedLayersLocked returns the layers some kept version uses. It fails
// rather than under-count, since its callers delete what it leaves out.
func (s *Store) usedLayersLocked() (map[string]bool, error) {
	list, err := s.List()
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, v := range list {
		for _, l := range v.Layers {
			used[l] = true
		}
	}
	return used, nil
}

// Remove deletes the versions ref names (every version of "name", or the
// one "name@sha256:…"), then the layers no kept version uses, and returns
// the versions it deleted. pinned holds the image reference of each
// sandbox that may still start a container: "name@sha256:…" uses that
// version, a bare name the name's current one; "" is skipped. When any
// version to delete is in use, Remove deletes nothing and returns an
// error wrapping rung.ErrConflict that says how many sandboxes use which.
// A missing name or version is rung.ErrNotFound.
func (s *Store) Remove(ref string, pinned []string) ([]Image, error) {
	name, digest, err := ParseRef(ref)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	vs, err := s.versions(name)
	if err != nil {
		return nil, err
	}
	var gone []Image
	for _, r := range vs {
		if digest == "" || r.Digest == digest {
			gone = append(gone, r.Image)
		}
	}
	if len(gone) == 0 {
		return nil, rung.Errorf(rung.ErrNotFound, "image %s not found", ref)
	}
	if err := checkUnused(ref, vs[0].Digest, gone, pinned); err != nil {
		return nil, err
	}
	// Version files go first: a crash after them leaves layers no
	// version uses, which the next lone Open sweeps, never a version
	// whose layers are gone.
	for i, im := range gone {
		if err := os.Remove(s.versionPath(name, im.Digest)); err != nil {
			return gone[:i], fmt.Errorf("remove image %s: %w", im.Ref(), err)
		}
	}
	os.Remove(filepath.Join(s.dir, "images", name)) // fails unless empty
	used, err := s.usedLayersLocked()
	if err != nil {
		return gone, fmt.Errorf("remove image %s: layers kept: %w", ref, err)
	}
	for _, im := range gone {
		for _, l := range im.Layers {
			if !used[l] {
				used[l] = true // once is enough
				s.removeLayerLocked(l)
			}
		}
	}
	return gone, nil
}

// checkUnused returns rung.ErrConflict when an entry of pinned uses a
// version in gone; current is the digest a bare name resolves to.
func checkUnused(ref, current string, gone []Image, pinned []string) error {
	users := map[string]int{}
	for _, p := range pinned {
		name, digest, err := ParseRef(p)
		if err != nil || name != gone[0].Name {
			continue
		}
		users[cmp.Or(digest, current)]++
	}
	var busy []string
	total := 0
	for _, im := range gone {
		if n := users[im.Digest]; n > 0 {
			busy = append(busy, fmt.Sprintf("%s: %d", im.ShortDigest(), n))
			total += n
		}
	}
	if total == 0 {
		return nil
	}
	which := ""
	if len(gone) > 1 {
		which = " (" + strings.Join(busy, ", ") + ")"
	}
	return rung.Errorf(rung.ErrConflict, "image %s is in use by %d %s%s: delete %s first",
		ref, total, plural(total, "sandbox", "sandboxes"), which, plural(total, "it", "them"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
