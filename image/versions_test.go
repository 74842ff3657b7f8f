package image_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/image"
	"rung.dev/rung/internal/testenv"
)

// handLayer puts a layer directory holding one file, id, straight into
// the cache, as AddLayer would leave it; unpacking needs root.
func handLayer(t *testing.T, s *image.Store, body string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(body))
	digest := "sha256:" + hex.EncodeToString(sum[:])
	if err := os.MkdirAll(s.LayerDir(digest), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.LayerDir(digest), "id"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return digest
}

func put(t *testing.T, s *image.Store, name string, layers ...string) image.Image {
	t.Helper()
	im, err := s.Put(name, layers, image.Config{Shell: "/bin/sh"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// listed returns List as "name@short*" strings, * marking the current.
func listed(t *testing.T, s *image.Store) []string {
	t.Helper()
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range list {
		mark := ""
		if v.Current {
			mark = "*"
		}
		out = append(out, v.Name+"@"+v.ShortDigest()+mark)
	}
	return out
}

func TestRebuildKeepsPinnedVersion(t *testing.T) {
	testenv.Require(t, "root") // unpacking chowns
	s := newStore(t)
	build := func(body string) image.Image {
		layer := tarOf(t, entry{name: "etc/", typ: tar.TypeDir}, entry{name: "etc/version", body: body, typ: tar.TypeReg})
		digest, size, err := s.AddLayer(t.Context(), bytes.NewReader(layer))
		if err != nil {
			t.Fatal(err)
		}
		im, err := s.Put("app", []string{digest}, image.Config{Shell: "/bin/sh"}, size)
		if err != nil {
			t.Fatal(err)
		}
		return im
	}
	// Both builds fall in the same second: order comes from the store,
	// not the clock.
	v1, v2 := build("one\n"), build("two\n")
	if v1.Digest == v2.Digest {
		t.Fatal("different content, same digest")
	}
	if got, err := s.Get("app"); err != nil || got.Digest != v2.Digest {
		t.Errorf("Get(app) = %s, %v; want the newest %s", got.Digest, err, v2.Digest)
	}
	for _, want := range []struct {
		im   image.Image
		body string
	}{{v1, "one\n"}, {v2, "two\n"}} {
		got, err := s.Get(want.im.Ref())
		if err != nil || got.Digest != want.im.Digest {
			t.Fatalf("Get(%s) = %s, %v", want.im.Ref(), got.Digest, err)
		}
		b, err := os.ReadFile(filepath.Join(s.LowerDirs(got)[0], "etc/version"))
		if err != nil || string(b) != want.body {
			t.Errorf("%s: etc/version = %q, %v; want %q", want.im.Ref(), b, err, want.body)
		}
	}
	want := []string{"app@" + v2.ShortDigest() + "*", "app@" + v1.ShortDigest()}
	if got := listed(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	// Putting a kept version again makes it current.
	if _, err := s.Put("app", v1.Layers, v1.Config, v1.SizeBytes); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get("app"); got.Digest != v1.Digest {
		t.Errorf("after re-put, Get(app) = %s, want %s", got.Digest, v1.Digest)
	}
}

func TestGetUnknownDigest(t *testing.T) {
	s := newStore(t)
	put(t, s, "app", handLayer(t, s, "a"))
	for _, ref := range []string{"app@sha256:" + strings.Repeat("0", 64), "nope", "nope@sha256:" + strings.Repeat("1", 64)} {
		_, err := s.Get(ref)
		if !errors.Is(err, rung.ErrNotFound) || !strings.Contains(err.Error(), ref) {
			t.Errorf("Get(%s) = %v, want not found naming the ref", ref, err)
		}
	}
	if _, err := s.Get("app@sha256:short"); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("Get(malformed) = %v, want invalid", err)
	}
}

func TestRemoveRefusesVersionsInUse(t *testing.T) {
	s := newStore(t)
	shared, l1, l2 := handLayer(t, s, "shared"), handLayer(t, s, "one"), handLayer(t, s, "two")
	v1 := put(t, s, "app", shared, l1)
	v2 := put(t, s, "app", shared, l2)
	tests := []struct {
		name   string
		ref    string
		pinned []string
		users  string // in the message
	}{
		{"pinned old version", v1.Ref(), []string{v1.Ref(), v1.Ref(), "other@" + v1.Digest}, "in use by 2 sandboxes"},
		{"bare name uses current", v2.Ref(), []string{"app"}, "in use by 1 sandbox:"},
		{"all versions", "app", []string{v1.Ref(), "app"}, "in use by 2 sandboxes (" + v2.ShortDigest() + ": 1, " + v1.ShortDigest() + ": 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gone, err := s.Remove(tc.ref, tc.pinned)
			if !errors.Is(err, rung.ErrConflict) || !strings.Contains(err.Error(), tc.users) {
				t.Fatalf("Remove(%s) = %v, want conflict %q", tc.ref, err, tc.users)
			}
			if len(gone) != 0 {
				t.Errorf("Remove refused but reports %d removed", len(gone))
			}
			for _, im := range []image.Image{v1, v2} {
				if _, err := s.Get(im.Ref()); err != nil {
					t.Errorf("after refusal: %v", err)
				}
			}
			for _, l := range []string{shared, l1, l2} {
				if !exists(s.LayerDir(l)) {
					t.Errorf("after refusal: layer %s gone", l)
				}
			}
		})
	}
	// Sandboxes on the name follow the current version; the old one is free.
	if _, err := s.Remove(v1.Ref(), []string{"app", "", "bad name!"}); err != nil {
		t.Errorf("Remove(old) with only bare-name users: %v", err)
	}
}

func TestRemoveCollectsOnlyUnusedLayers(t *testing.T) {
	s := newStore(t)
	shared, l1, l2 := handLayer(t, s, "shared"), handLayer(t, s, "one"), handLayer(t, s, "two")
	v1 := put(t, s, "app", shared, l1)
	v2 := put(t, s, "app", shared, l2)
	tool := put(t, s, "tool", l2)

	gone, err := s.Remove(v1.Ref(), nil)
	if err != nil || len(gone) != 1 || gone[0].Digest != v1.Digest {
		t.Fatalf("Remove(v1) = %v, %v", gone, err)
	}
	if exists(s.LayerDir(l1)) || !exists(s.LayerDir(shared)) || !exists(s.LayerDir(l2)) {
		t.Errorf("after Remove(v1): one=%v shared=%v two=%v, want false true true",
			exists(s.LayerDir(l1)), exists(s.LayerDir(shared)), exists(s.LayerDir(l2)))
	}
	if _, err := s.Get(v1.Ref()); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("Get(removed) = %v, want not found", err)
	}
	if got, err := s.Get("app"); err != nil || got.Digest != v2.Digest {
		t.Errorf("Get(app) = %s, %v; want %s", got.Digest, err, v2.Digest)
	}
	if _, err := s.Remove(v1.Ref(), nil); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("Remove(removed) = %v, want not found", err)
	}

	if _, err := s.Remove("app", nil); err != nil {
		t.Fatal(err)
	}
	if exists(s.LayerDir(shared)) || !exists(s.LayerDir(l2)) {
		t.Errorf("after Remove(app): shared=%v two=%v, want false true (tool uses two)", exists(s.LayerDir(shared)), exists(s.LayerDir(l2)))
	}
	if _, err := s.Get("app"); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("Get(app) after removing all = %v, want not found", err)
	}
	if got := listed(t, s); len(got) != 1 || got[0] != "tool@"+tool.ShortDigest()+"*" {
		t.Errorf("List = %v, want only tool", got)
	}
	// A name can come back after all its versions went.
	if got := put(t, s, "app", l2); got.Name != "app" {
		t.Errorf("put after remove: %+v", got)
	}
}

// oldLayout writes what the one-version-per-name store left: a layer and
// images/<name>.json holding the image as json.MarshalIndent wrote it.
func oldLayout(t *testing.T, dir, name, body string) image.Image {
	t.Helper()
	sum := sha256.Sum256([]byte(body))
	layer := "sha256:" + hex.EncodeToString(sum[:])
	ld := filepath.Join(dir, "layers", hex.EncodeToString(sum[:]))
	if err := os.MkdirAll(ld, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ld, "id"), []byte(body), 0o644)
	cfg := image.Config{Shell: "/bin/sh"}
	desc, _ := json.Marshal(struct {
		Layers []string     `json:"layers"`
		Config image.Config `json:"config"`
	}{[]string{layer}, cfg})
	dsum := sha256.Sum256(desc)
	im := image.Image{Name: name, Digest: "sha256:" + hex.EncodeToString(dsum[:]), Layers: []string{layer}, Config: cfg, SizeBytes: 1, Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	b, _ := json.MarshalIndent(im, "", "  ")
	os.MkdirAll(filepath.Join(dir, "images"), 0o700)
	if err := os.WriteFile(filepath.Join(dir, "images", name+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return im
}

func TestOpenConvertsOldLayout(t *testing.T) {
	dir := t.TempDir()
	old := oldLayout(t, dir, "lite", "busybox")
	other := oldLayout(t, dir, "tools.json", "x") // a name that looks like a file
	s, err := image.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"lite", old.Ref()} {
		got, err := s.Get(ref)
		if err != nil || got.Digest != old.Digest || !got.Created.Equal(old.Created) {
			t.Errorf("Get(%s) = %+v, %v; want %s", ref, got, err, old.Digest)
		}
	}
	if got, err := s.Get("tools.json"); err != nil || got.Digest != other.Digest {
		t.Errorf("Get(tools.json) = %s, %v", got.Digest, err)
	}
	if exists(filepath.Join(dir, "images", "lite.json")) {
		t.Error("old file kept after conversion")
	}
	if !exists(s.LowerDirs(old)[0]) {
		t.Error("layer gone after conversion")
	}
	newer := put(t, s, "lite", handLayer(t, s, "busybox 2"))
	if got, _ := s.Get("lite"); got.Digest != newer.Digest {
		t.Errorf("Get(lite) = %s, want the new version %s", got.Digest, newer.Digest)
	}
	if got, err := s.Get(old.Ref()); err != nil || got.Digest != old.Digest {
		t.Errorf("pinned converted version: %s, %v", got.Digest, err)
	}
	s.Close()

	// A crash between writing the version file and removing the old one
	// leaves both; so does an older binary writing the old layout again.
	// Either way the old file's image becomes (or stays) current, once.
	oldLayout(t, dir, "lite", "busybox")
	s, err = image.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := []string{"lite@" + old.ShortDigest() + "*", "lite@" + newer.ShortDigest(), "tools.json@" + other.ShortDigest() + "*"}
	if got := listed(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("List = %v, want %v", got, want)
	}
}

func TestOpenSweepsOnlyWhenAlone(t *testing.T) {
	dir := t.TempDir()
	s, err := image.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	kept := put(t, s, "app", handLayer(t, s, "kept"))
	// What a crash leaves: a layer whose image was never recorded (or
	// whose version was removed first), and temporaries.
	orphan := handLayer(t, s, "orphan")
	tmp := filepath.Join(dir, "layers", ".tmp-0123")
	os.Mkdir(tmp, 0o755)

	// s is still open, as a running daemon's is: an import it (or another
	// process) has under way must not lose its layers.
	other, err := image.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	if !exists(s.LayerDir(orphan)) || !exists(tmp) {
		t.Fatal("swept while another store had the directory open")
	}
	s.Close()

	s, err = image.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if exists(s.LayerDir(orphan)) || exists(tmp) {
		t.Error("alone, Open left the orphan layer or the temporary")
	}
	if !exists(s.LowerDirs(kept)[0]) {
		t.Error("Open swept a layer a version uses")
	}
}

// TestConcurrentStores runs writers and readers on two Stores over one
// directory (the CLI and the daemon) under -race: every version put is
// kept and readable, and the name ends at one of them.
func TestConcurrentStores(t *testing.T) {
	dir := t.TempDir()
	var stores [2]*image.Store
	for i := range stores {
		s, err := image.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	shared := handLayer(t, stores[0], "shared")
	const perStore = 10
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		refs []string
	)
	for i, s := range stores {
		wg.Go(func() {
			for j := range perStore {
				im, err := s.Put("app", []string{shared}, image.Config{WorkingDir: fmt.Sprintf("/w%d-%d", i, j)}, 1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				refs = append(refs, im.Ref())
				mu.Unlock()
			}
		})
		wg.Go(func() {
			for range 50 {
				if _, err := s.Get("app"); err != nil && !errors.Is(err, rung.ErrNotFound) {
					t.Error(err)
				}
				if _, err := s.List(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got := len(listed(t, stores[0])); got != 2*perStore {
		t.Errorf("List has %d versions, want %d", got, 2*perStore)
	}
	for _, ref := range refs {
		if _, err := stores[1].Get(ref); err != nil {
			t.Errorf("Get(%s): %v", ref, err)
		}
	}
}
