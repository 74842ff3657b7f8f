package image_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"rung.dev/rung"
	"rung.dev/rung/image"
	"rung.dev/rung/internal/testenv"
)

func newStore(t *testing.T) *image.Store {
	t.Helper()
	s, err := image.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type entry struct {
	name, body, link string
	typ              byte
}

func tarOf(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.link, ModTime: time.Unix(1e9, 0)}
		if e.typ == tar.TypeDir {
			hdr.Mode = 0o755
		}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	return buf.Bytes()
}

func TestBuildLiteIsDeterministic(t *testing.T) {
	testenv.Require(t, "root", "busybox")
	a, b := newStore(t), newStore(t)
	ia, err := a.BuildLite(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ib, err := b.BuildLite(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ia.Digest != ib.Digest || ia.Layers[0] != ib.Layers[0] {
		t.Errorf("two builds differ: %s vs %s", ia.Digest, ib.Digest)
	}
	sh := filepath.Join(a.LayerDir(ia.Layers[0]), "bin/sh")
	if target, err := os.Readlink(sh); err != nil || target != "/bin/busybox" {
		t.Errorf("bin/sh -> %q, %v", target, err)
	}
	got, err := a.Get("lite@" + ia.Digest)
	if err != nil || got.Digest != ia.Digest {
		t.Errorf("Get pinned = %v, %v", got.Digest, err)
	}
	other := "lite@sha256:" + hex.EncodeToString(make([]byte, 32))
	if _, err := a.Get(other); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("Get with another digest: %v, want not found", err)
	}
}

func TestAllowlist(t *testing.T) {
	im := image.Image{Name: "lite", Digest: "sha256:" + hex.EncodeToString(make([]byte, 32))}
	other := im
	other.Digest = "sha256:" + hex.EncodeToString(bytes.Repeat([]byte{1}, 32))
	al := image.Allowlist{Tenants: map[rung.TenantID][]string{"acme": {im.Ref()}, "*": {"debian@" + other.Digest}}}
	tests := []struct {
		name   string
		tenant rung.TenantID
		im     image.Image
		ok     bool
	}{
		{"pinned", "acme", im, true},
		{"other tenant", "globex", im, false},
		{"digest mismatch", "acme", other, false},
		{"wildcard tenant", "globex", image.Image{Name: "debian", Digest: other.Digest}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := al.Check(tc.tenant, tc.im)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, rung.ErrPermission)) {
				t.Errorf("Check = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestLayerSafety(t *testing.T) {
	testenv.Require(t, "root")
	s := newStore(t)
	outside := t.TempDir()
	layer := tarOf(t,
		entry{name: "etc/", typ: tar.TypeDir},
		entry{name: "../escape", body: "x", typ: tar.TypeReg},
		entry{name: "/abs", body: "x", typ: tar.TypeReg},
		entry{name: "link", link: outside, typ: tar.TypeSymlink},
		entry{name: "etc/gone", body: "x", typ: tar.TypeReg},
		entry{name: "etc/.wh.removed", typ: tar.TypeReg},
		entry{name: "opaque/.wh..wh..opq", typ: tar.TypeReg},
	)
	digest, _, err := s.AddLayer(t.Context(), bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(layer)
	if want := "sha256:" + hex.EncodeToString(sum[:]); digest != want {
		t.Errorf("digest %s, want %s", digest, want)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("layer wrote outside its directory: %v", ents)
	}
	// Writing through a symlink planted by an earlier entry is refused.
	evil := tarOf(t, entry{name: "link", link: outside, typ: tar.TypeSymlink}, entry{name: "link/through", body: "x", typ: tar.TypeReg})
	if _, _, err := s.AddLayer(t.Context(), bytes.NewReader(evil)); err == nil {
		t.Error("a layer writing through its own symlink was accepted")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("layer wrote outside its directory: %v", ents)
	}
	dir := s.LayerDir(digest)
	for _, p := range []string{"escape", "abs"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s not contained in the layer: %v", p, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, "etc/removed"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("whiteout not an overlay 0/0 char device: %v %o", err, st.Mode)
	}
	buf := make([]byte, 8)
	if n, err := unix.Lgetxattr(filepath.Join(dir, "opaque"), "trusted.overlay.opaque", buf); err != nil || string(buf[:n]) != "y" {
		t.Errorf("opaque dir xattr: %q, %v", buf[:n], err)
	}
}

func TestImport(t *testing.T) {
	testenv.Require(t, "root")
	layer := tarOf(t, entry{name: "bin/", typ: tar.TypeDir}, entry{name: "bin/hello", body: "hi\n", typ: tar.TypeReg})
	layerSum := sha256.Sum256(layer)
	layerDigest := "sha256:" + hex.EncodeToString(layerSum[:])

	writeOCI := func(t *testing.T) string {
		dir := t.TempDir()
		blobs := filepath.Join(dir, "blobs", "sha256")
		os.MkdirAll(blobs, 0o755)
		put := func(b []byte) string {
			sum := sha256.Sum256(b)
			os.WriteFile(filepath.Join(blobs, hex.EncodeToString(sum[:])), b, 0o644)
			return "sha256:" + hex.EncodeToString(sum[:])
		}
		put(layer)
		cfg := put([]byte(`{"config":{"Env":["PATH=/bin","A=1"]}}`))
		man, _ := json.Marshal(map[string]any{"config": map[string]string{"digest": cfg}, "layers": []map[string]string{{"digest": layerDigest}}})
		md := put(man)
		idx, _ := json.Marshal(map[string]any{"manifests": []map[string]string{{"digest": md}}})
		os.WriteFile(filepath.Join(dir, "index.json"), idx, 0o644)
		os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
		return dir
	}
	tarDirOf := func(t *testing.T, dir string) string {
		var entries []entry
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			rel, _ := filepath.Rel(dir, p)
			if rel == "." {
				return nil
			}
			if d.IsDir() {
				entries = append(entries, entry{name: rel + "/", typ: tar.TypeDir})
			} else {
				b, _ := os.ReadFile(p)
				entries = append(entries, entry{name: rel, body: string(b), typ: tar.TypeReg})
			}
			return nil
		})
		p := filepath.Join(t.TempDir(), "image.tar")
		os.WriteFile(p, tarOf(t, entries...), 0o644)
		return p
	}
	dockerTar := func(t *testing.T) string {
		man := `[{"Config":"cfg.json","RepoTags":["x:latest"],"Layers":["abc/layer.tar"]}]`
		p := filepath.Join(t.TempDir(), "docker.tar")
		os.WriteFile(p, tarOf(t,
			entry{name: "manifest.json", body: man, typ: tar.TypeReg},
			entry{name: "cfg.json", body: `{"config":{"Env":["PATH=/bin","A=1"]}}`, typ: tar.TypeReg},
			entry{name: "abc/", typ: tar.TypeDir},
			entry{name: "abc/layer.tar", body: string(layer), typ: tar.TypeReg},
		), 0o644)
		return p
	}
	rootfsDir := func(t *testing.T) string {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
		os.WriteFile(filepath.Join(dir, "bin/hello"), []byte("hi\n"), 0o644)
		return dir
	}
	rootfsTar := func(t *testing.T) string {
		p := filepath.Join(t.TempDir(), "rootfs.tar")
		os.WriteFile(p, layer, 0o644)
		return p
	}
	tests := []struct {
		name    string
		path    func(t *testing.T) string
		wantEnv bool
	}{
		{"oci layout dir", writeOCI, true},
		{"oci layout tar", func(t *testing.T) string { return tarDirOf(t, writeOCI(t)) }, true},
		{"docker save tar", dockerTar, true},
		{"rootfs dir", rootfsDir, false},
		{"rootfs tar", rootfsTar, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			im, err := s.Import(t.Context(), "imported", tc.path(t))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(s.LowerDirs(im)[0], "bin/hello"))
			if err != nil || string(b) != "hi\n" {
				t.Errorf("bin/hello = %q, %v", b, err)
			}
			if tc.wantEnv && (len(im.Config.Env) != 2 || im.Config.Env[1] != "A=1") {
				t.Errorf("env = %v", im.Config.Env)
			}
			list, _ := s.List()
			if len(list) != 1 || list[0].Digest != im.Digest {
				t.Errorf("List = %v", list)
			}
			if _, err := s.Remove("imported", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(s.LayerDir(im.Layers[0])); !os.IsNotExist(err) {
				t.Errorf("layer left after Remove: %v", err)
			}
		})
	}
	s := newStore(t)
	if _, err := s.Import(t.Context(), "../bad", rootfsTar(t)); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("bad name: %v", err)
	}
	if _, err := s.Import(t.Context(), "missing", "/nonexistent/x.tar"); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("missing file: %v", err)
	}
}
