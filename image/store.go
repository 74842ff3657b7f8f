package image

import (
	"cmp"
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
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// Store keeps every version of every image and their unpacked layers
// under one directory:
//
//	layers/<hex>/              a layer, unpacked once (overlayfs lower directory)
//	images/<name>/<hex>.json   one version of image name, by image digest
//	images/<name>.json         the layout before versions; Open converts it
//	open.lock, write.lock      see below
//
// A name resolves to its newest version (the highest seq in its version
// files); "name@sha256:…" resolves to exactly that version for as long as
// it is kept, so a rebuild never breaks a sandbox pinned to the old one.
//
// Every file appears by rename, so a crash leaves the old state or the
// new one plus temporaries (".tmp-…"). Removal deletes the version file
// before the layers only it used, so a crash leaves at worst unreferenced
// layers. Open sweeps both, but only when no other Store (in any process)
// has the directory open: every open Store holds open.lock shared, since
// another process's import may be between adding its layers and recording
// its image. Writers of version files and removers of layers take
// write.lock, which serialises the CLI and the daemon.
//
// Store is safe for concurrent use.
type Store struct {
	dir string
	log *slog.Logger

	openLock *os.File // held shared from Open until Close

	accountCache digestCache[*accounts] // images' parsed account files (accounts.go)
	loginCache   digestCache[*loginSet] // images' login shell files (login.go)

	mu        sync.Mutex // serialises this process's writers, guards the field below
	writeLock *os.File   // flocked exclusively by the holder of mu; nil once closed
}

// record is a version file: the image and its place in its name's history.
type record struct {
	Image
	Seq int64 `json:"seq"` // higher is newer within a name; 0 in the old layout
}

// newer orders records newest first: by seq, then creation, then digest,
// so that two writers racing to the same seq still agree on the order.
func newer(a, b record) int {
	if c := cmp.Compare(b.Seq, a.Seq); c != 0 {
		return c
	}
	if c := b.Created.Compare(a.Created); c != 0 {
		return c
	}
	return strings.Compare(b.Digest, a.Digest)
}

// nextSeq returns the seq that makes a version newer than vs, a name's
// versions newest first.
func nextSeq(vs []record) int64 {
	if len(vs) == 0 {
		return 1
	}
	return vs[0].Seq + 1
}

// Open opens (creating if needed) the store in dir. It converts images
// of the one-version-per-name layout to version files, and, when no other
// Store has dir open, removes temporaries and layers no version uses.
func Open(dir string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for _, d := range []string{"layers", "images"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("open image store: %w", err)
		}
	}
	s := &Store{dir: dir, log: log,
		accountCache: digestCache[*accounts]{maxN: maxCachedAccounts},
		loginCache:   digestCache[*loginSet]{maxN: maxCachedLogins, maxBytes: maxCachedLoginBytes}}
	var err error
	if s.openLock, err = os.OpenFile(filepath.Join(dir, "open.lock"), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, fmt.Errorf("open image store: %w", err)
	}
	if s.writeLock, err = os.OpenFile(filepath.Join(dir, "write.lock"), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		s.openLock.Close()
		return nil, fmt.Errorf("open image store: %w", err)
	}
	alone := unix.Flock(int(s.openLock.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
	err = s.migrate()
	if err == nil && alone {
		s.sweep()
	}
	// Downgrading is not atomic, which is harmless: this Store has not
	// started any import another Store's sweep could cut short.
	if lerr := unix.Flock(int(s.openLock.Fd()), unix.LOCK_SH); lerr != nil && err == nil {
		err = lerr
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("open image store: %w", err)
	}
	return s, nil
}

// Close releases the store's locks; the Store must not be used after.
// It is idempotent. A process that exits without calling Close loses
// nothing: the kernel drops its locks.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writeLock == nil {
		return nil
	}
	err := errors.Join(s.writeLock.Close(), s.openLock.Close())
	s.writeLock = nil
	return err
}

// lock takes the store's write lock in this process and across processes.
func (s *Store) lock() (unlock func(), err error) {
	s.mu.Lock()
	if s.writeLock == nil {
		s.mu.Unlock()
		return nil, errors.New("image store closed")
	}
	fd := int(s.writeLock.Fd())
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("lock image store: %w", err)
	}
	return func() {
		unix.Flock(fd, unix.LOCK_UN)
		s.mu.Unlock()
	}, nil
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
// Record the image that uses it soon: until then, [Store.Remove] may
// delete a layer another version shared, and [Store.Put] then fails.
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
	if err := os.Rename(tmp, final); err != nil && !errors.Is(err, fs.ErrExist) && !errors.Is(err, unix.ENOTEMPTY) {
		return "", 0, fmt.Errorf("add layer: %w", err)
	}
	return digest, size, nil
}

// Put records an image made of layers already in the cache as the newest
// version of name, and returns it with its digest. Older versions stay.
// Putting a kept version again makes it the newest.
func (s *Store) Put(name string, layers []string, cfg Config, size int64) (Image, error) {
	if !rung.ValidName(name) {
		return Image{}, rung.Errorf(rung.ErrInvalid, "invalid image name %q", name)
	}
	im := Image{Name: name, Layers: layers, Config: cfg, SizeBytes: size, Created: time.Now().UTC().Truncate(time.Second)}
	im.Digest = digestOf(layers, cfg)
	unlock, err := s.lock()
	if err != nil {
		return Image{}, err
	}
	defer unlock()
	// Checked under the lock: a concurrent Remove deletes layers under it.
	for _, l := range layers {
		if _, err := os.Stat(s.LayerDir(l)); err != nil {
			return Image{}, fmt.Errorf("image %s: layer %s missing: %w", name, l, err)
		}
	}
	vs, err := s.versions(name)
	if err != nil {
		return Image{}, err
	}
	if err := s.writeLocked(record{Image: im, Seq: nextSeq(vs)}); err != nil {
		return Image{}, fmt.Errorf("save image %s: %w", name, err)
	}
	return im, nil
}

// versionPath is where one version of an image is recorded.
func (s *Store) versionPath(name, digest string) string {
	return filepath.Join(s.dir, "images", name, strings.TrimPrefix(digest, "sha256:")+".json")
}

// legacyPath is where the one-version-per-name layout kept an image.
func (s *Store) legacyPath(name string) string {
	return filepath.Join(s.dir, "images", name+".json")
}

// writeLocked writes a version file: in full to a temporary, synced, then
// renamed into place.
func (s *Store) writeLocked(r record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(s.dir, "images", r.Name), 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(s.dir, "images", tempName())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, s.versionPath(r.Name, r.Digest))
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

func readRecord(path string) (record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return record{}, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return record{}, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	return r, nil
}

// versions returns name's kept versions, newest first; none is not an
// error.
func (s *Store) versions(name string) ([]record, error) {
	dir := filepath.Join(s.dir, "images", name)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read image %s: %w", name, err)
	}
	var out []record
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		r, err := readRecord(filepath.Join(dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since ReadDir
		}
		if err != nil {
			return nil, fmt.Errorf("read image %s: %w", name, err)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, newer)
	return out, nil
}

// names returns the names that have a version directory, sorted.
func (s *Store) names() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "images"))
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out, nil // ReadDir sorts by name
}

// Get returns the image a reference names: "name" is the name's newest
// version, "name@sha256:…" exactly that version as long as it is kept.
// A missing name or version is rung.ErrNotFound; a malformed reference
// rung.ErrInvalid.
func (s *Store) Get(ref string) (Image, error) {
	name, digest, err := ParseRef(ref)
	if err != nil {
		return Image{}, err
	}
	if digest != "" {
		r, err := readRecord(s.versionPath(name, digest))
		if errors.Is(err, fs.ErrNotExist) {
			return Image{}, rung.Errorf(rung.ErrNotFound, "image %s not found", ref)
		}
		if err != nil {
			return Image{}, fmt.Errorf("read image %s: %w", ref, err)
		}
		return r.Image, nil
	}
	vs, err := s.versions(name)
	if err != nil {
		return Image{}, err
	}
	if len(vs) == 0 {
		return Image{}, rung.Errorf(rung.ErrNotFound, "image %s not found", name)
	}
	return vs[0].Image, nil
}

// List returns every kept version, sorted by name, newest first within
// a name; the newest is marked Current.
func (s *Store) List() ([]Version, error) {
	names, err := s.names()
	if err != nil {
		return nil, err
	}
	var out []Version
	for _, name := range names {
		vs, err := s.versions(name)
		if err != nil {
			return nil, err
		}
		for i, r := range vs {
			out = append(out, Version{Image: r.Image, Current: i == 0})
		}
	}
	return out, nil
}

// migrate converts images/<name>.json files of the one-version-per-name
// layout into version files, each becoming its name's newest version. The
// old file goes only once the new one is in place, so a crash in between
// leaves both, and the next Open finishes the job.
func (s *Store) migrate() error {
	ents, err := os.ReadDir(filepath.Join(s.dir, "images"))
	if err != nil {
		return err
	}
	var legacy []string
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if ok && !e.IsDir() && rung.ValidName(name) {
			legacy = append(legacy, name)
		}
	}
	if len(legacy) == 0 {
		return nil
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	for _, name := range legacy {
		if err := s.migrateLocked(name); err != nil {
			return fmt.Errorf("convert image %s: %w", name, err)
		}
	}
	return nil
}

func (s *Store) migrateLocked(name string) error {
	r, err := readRecord(s.legacyPath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // another process converted it
	}
	if err != nil {
		return err
	}
	if r.Name != name || !validDigest(r.Digest) {
		return fmt.Errorf("%s.json describes %s@%s", name, r.Name, r.Digest)
	}
	vs, err := s.versions(name)
	if err != nil {
		return err
	}
	if len(vs) == 0 || vs[0].Digest != r.Digest {
		r.Seq = nextSeq(vs)
		if err := s.writeLocked(r); err != nil {
			return err
		}
	}
	s.log.Info("converted image to versioned layout", "image", r.Image.Ref())
	return os.Remove(s.legacyPath(name))
}
