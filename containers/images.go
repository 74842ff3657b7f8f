package containers

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/image"
	"rung.dev/rung/shell"
)

// Identity implements [controller.ContainerImages]: user against the
// accounts of image ref ("" for the default image).
func (t *Tier) Identity(ref, user string) (controller.Identity, error) {
	im, err := t.image(ref)
	if err != nil {
		return controller.Identity{}, fmt.Errorf("user %s: %w", user, err)
	}
	a, err := t.cfg.Images.Account(im, user)
	if err != nil {
		return controller.Identity{}, err
	}
	name := a.Name
	if name == "" {
		name = strconv.FormatUint(uint64(a.UID), 10)
	}
	return controller.Identity{User: name, UID: a.UID, GID: a.GID, Groups: a.Groups, Home: a.Home}, nil
}

// ImageUser implements [controller.ContainerImages]: the default user of
// image ref ("" for the default image), its Config.User, "" for root.
func (t *Tier) ImageUser(ref string) (string, error) {
	im, err := t.image(ref)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", cmp.Or(ref, t.defaultImage()), err)
	}
	return im.Config.User, nil
}

// AccountFile implements [controller.ContainerImages].
func (t *Tier) AccountFile(ref, upper, name string) ([]byte, error) {
	im, err := t.image(ref)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", cmp.Or(ref, t.defaultImage()), err)
	}
	return t.cfg.Images.AccountFile(im, upper, name)
}

// HasImage implements [controller.ContainerImages].
func (t *Tier) HasImage(ref string) bool {
	_, err := t.cfg.Images.Get(ref)
	return !errors.Is(err, rung.ErrNotFound)
}

// LinkWorkspace implements [controller.ContainerImages].
func (t *Tier) LinkWorkspace(ref, dir, upper, workspace string) error {
	im, err := t.image(ref)
	if err != nil {
		return fmt.Errorf("image %s: %w", cmp.Or(ref, t.defaultImage()), err)
	}
	found, err := t.cfg.Images.CopyDir(im, dir, workspace)
	if err != nil || !found {
		return err
	}
	return t.cfg.Images.LinkDir(im, upper, dir, "/workspace")
}

// LoginFiles implements [controller.ContainerImages]: what a login shell
// reads of the root file system of a container of image ref ("" for the
// default image) whose overlay upper directory is upper, as
// [image.Store.LoginFiles] does, and the PATH of the image's environment.
// An error, of any kind, leaves login shells to the container.
func (t *Tier) LoginFiles(ref, upper string) (controller.ImageLogin, error) {
	im, err := t.image(ref)
	if err != nil {
		return controller.ImageLogin{}, fmt.Errorf("image %s: %w", cmp.Or(ref, t.defaultImage()), err)
	}
	files, fromUpper, err := t.cfg.Images.LoginFiles(im, upper)
	if err != nil {
		return controller.ImageLogin{}, err
	}
	il := controller.ImageLogin{Files: make([]shell.SystemFile, len(files)), Key: im.Ref()}
	for i, f := range files {
		il.Files[i] = shell.SystemFile{Path: f.Path, Mode: f.Mode, UID: f.UID, GID: f.GID, ModTime: f.ModTime, Data: f.Data}
	}
	if fromUpper {
		// The container changed them: the key names these files, so a
		// login shell kept from other ones is not taken for theirs.
		il.Key += "+upper:" + filesKey(files)
	}
	for _, kv := range im.Config.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			il.Path = v
		}
	}
	return il, nil
}

// filesKey is a digest of everything a login shell may read of files.
func filesKey(files []image.RootFile) string {
	h := sha256.New()
	var n [8]byte
	for _, f := range files {
		for _, v := range []uint64{uint64(len(f.Path)), uint64(f.Mode), uint64(f.UID), uint64(f.GID), uint64(f.ModTime.UnixNano()), uint64(f.Size), uint64(len(f.Data))} {
			binary.BigEndian.PutUint64(n[:], v)
			h.Write(n[:])
		}
		h.Write([]byte(f.Path))
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// HomeLink returns the target of the symbolic link at home (absolute:
// "/home/user") that the overlay upper directory upper of a container of
// image ref ("" for the default image) holds, as [Tier.LinkWorkspace] makes
// it; "" when upper holds no link there ([image.Store.UpperLink]). A
// home that is not a clean absolute path is rung.ErrInvalid.
func (t *Tier) HomeLink(ref, upper, home string) (string, error) {
	name, ok := strings.CutPrefix(home, "/")
	if !ok {
		return "", rung.Errorf(rung.ErrInvalid, "home %q: want an absolute path", home)
	}
	im, err := t.image(ref)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", cmp.Or(ref, t.defaultImage()), err)
	}
	return t.cfg.Images.UpperLink(im, upper, name)
}

// pinnedImages caches images by pinned reference.
type pinnedImages struct {
	mu sync.Mutex
	m  map[string]image.Image
}

// maxPinnedImages bounds the cache; it starts over when full.
const maxPinnedImages = 256

// image returns image ref ("" for the default image), from the cache when
// ref is pinned: the methods an exec calls (its identity, account files,
// PATH lookups, login files) would each read the image's record from disk.
// HasImage asks the store itself, as a removed image must read as gone.
func (t *Tier) image(ref string) (image.Image, error) {
	ref = cmp.Or(ref, t.defaultImage())
	if !strings.Contains(ref, "@sha256:") {
		return t.cfg.Images.Get(ref)
	}
	t.pinned.mu.Lock()
	im, ok := t.pinned.m[ref]
	t.pinned.mu.Unlock()
	if ok {
		return im, nil
	}
	im, err := t.cfg.Images.Get(ref)
	if err != nil {
		return im, err
	}
	t.pinned.mu.Lock()
	if t.pinned.m == nil || len(t.pinned.m) >= maxPinnedImages {
		t.pinned.m = map[string]image.Image{}
	}
	t.pinned.m[ref] = im
	t.pinned.mu.Unlock()
	return im, nil
}
