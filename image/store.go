package image

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"rung.dev/rung"
)

// Store keeps images and their unpacked layers under one directory:
//
//	layers/<hex>/    a layer, unpacked once (overlayfs lower directory)
//	images/<name>.json
//
// Writes are atomic (build in a temporary name, then rename), so a crash
// leaves either the old state or the new one, plus temporaries that
// [Open] removes. Store is safe for concurrent use.
type Store struct {
	dir string
	log *slog.Logger

	mu sync.Mutex // serialises writers of images/ and layers/
}

// Open opens (creating if needed) the store in dir.
func Open(dir string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for _, d := range []string{"layers", "images"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("open image store: %w", err)
		}
	}
	s := &Store{dir: dir, log: log}
	s.removeTemporaries()
	return s, nil
}

func (s *Store) removeTemporaries() {
	for _, d := range []string{"layers", "images"} {
		ents, _ := os.ReadDir(filepath.Join(s.dir, d))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".tmp-") {
				os.RemoveAll(filepath.Join(s.dir, d, e.Name()))
			}
		}
	}
}

// LayerDir returns the host directory of an unpacked layer.
func (s *Store) LayerDir(digest string) string {
	return filepath.Join(s.dir, "layers", strings.TrimPrefix(digest, "sha256:"))
}

// LowerDirs returns im's layer directories top first, as overlayfs's
// lowerdir option lists them.
func (s *Store) LowerDirs(im Image) []string {
	out := make([]string, len(im.Layers))
	for i, l := range im.Layers {
		out[len(im.Layers)-1-i] = s.LayerDir(l)
	}
	return out
}

func tempName() string {
	var b [8]byte
	rand.Read(b[:])
	return ".tmp-" + hex.EncodeToString(b[:])
}

// AddLayer unpacks an uncompressed layer tar into the layer cache and
// returns its digest. A layer already present is not unpacked again.
func (s *Store) AddLayer(ctx context.Context, r io.Reader) (digest string, size int64, err error) {
	tmp := filepath.Join(s.dir, "layers", tempName())
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return "", 0, fmt.Errorf("add layer: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	digest, size, err = unpack(ctx, r, tmp)
	if err != nil {
		return "", 0, fmt.Errorf("add layer: %w", err)
	}
	final := s.LayerDir(digest)
	if err := os.Rename(tmp, final); err != nil && !errors.Is(err, fs.ErrExist) && !isNotEmpty(err) {
		return "", 0, fmt.Errorf("add layer: %w", err)
	}
	return digest, size, nil
}

func isNotEmpty(err error) bool {
	return err != nil && strings.Contains(err.Error(), "directory not empty")
}

// Put records an image made of layers already in the cache, replacing
// any image of that name, and returns it with its digest.
func (s *Store) Put(name string, layers []string, cfg Config, size int64) (Image, error) {
	if !rung.ValidName(name) {
		return Image{}, rung.Errorf(rung.ErrInvalid, "invalid image name %q", name)
	}
	for _, l := range layers {
		if _, err := os.Stat(s.LayerDir(l)); err != nil {
			return Image{}, fmt.Errorf("image %s: layer %s missing: %w", name, l, err)
		}
	}
	im := Image{Name: name, Layers: layers, Config: cfg, SizeBytes: size, Created: time.Now().UTC().Truncate(time.Second)}
	im.Digest = digestOf(layers, cfg)
	b, err := json.MarshalIndent(im, "", "  ")
	if err != nil {
		return Image{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tmp := filepath.Join(s.dir, "images", tempName())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return Image{}, fmt.Errorf("save image %s: %w", name, err)
	}
	if err := os.Rename(tmp, s.imagePath(name)); err != nil {
		os.Remove(tmp)
		return Image{}, fmt.Errorf("save image %s: %w", name, err)
	}
	return im, nil
}

func (s *Store) imagePath(name string) string {
	return filepath.Join(s.dir, "images", name+".json")
}

// Get returns the image a reference names: "name" or "name@sha256:…".
// A missing image is rung.ErrNotFound; a digest that does not match the
// stored image is rung.ErrConflict.
func (s *Store) Get(ref string) (Image, error) {
	name, digest, err := ParseRef(ref)
	if err != nil {
		return Image{}, err
	}
	b, err := os.ReadFile(s.imagePath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return Image{}, rung.Errorf(rung.ErrNotFound, "image %s not found", name)
	}
	if err != nil {
		return Image{}, fmt.Errorf("read image %s: %w", name, err)
	}
	var im Image
	if err := json.Unmarshal(b, &im); err != nil {
		return Image{}, fmt.Errorf("read image %s: %w", name, err)
	}
	if digest != "" && digest != im.Digest {
		return Image{}, rung.Errorf(rung.ErrConflict, "image %s is %s, not %s", name, im.Digest, digest)
	}
	return im, nil
}

// List returns every image, sorted by name.
func (s *Store) List() ([]Image, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "images"))
	if err != nil {
		return nil, err
	}
	var out []Image
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		im, err := s.Get(name)
		if err != nil {
			return nil, err
		}
		out = append(out, im)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Remove deletes an image and every layer no other image uses.
func (s *Store) Remove(name string) error {
	im, err := s.Get(name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Remove(s.imagePath(name)); err != nil {
		return fmt.Errorf("remove image %s: %w", name, err)
	}
	used := map[string]bool{}
	ents, _ := os.ReadDir(filepath.Join(s.dir, "images"))
	for _, e := range ents {
		other, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		if o, err := s.Get(other); err == nil {
			for _, l := range o.Layers {
				used[l] = true
			}
		}
	}
	for _, l := range im.Layers {
		if !used[l] {
			os.RemoveAll(s.LayerDir(l))
		}
	}
	return nil
}
