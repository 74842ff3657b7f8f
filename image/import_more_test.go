package image_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"
	"rung.dev/rung"
	"rung.dev/rung/image"
	"rung.dev/rung/internal/testenv"
)

// file is one tar entry of a hand-made layer; a name ending in "/" is a
// directory.
type file struct{ name, body string }

// layerOf returns an uncompressed layer tar holding files, in order.
func layerOf(t testing.TB, files ...file) []byte {
	t.Helper()
	entries := make([]entry, len(files))
	for i, f := range files {
		entries[i] = entry{name: f.name, body: f.body, typ: tar.TypeReg}
		if strings.HasSuffix(f.name, "/") {
			entries[i].typ = tar.TypeDir
		}
	}
	return tarOf(t, entries...)
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// compressed returns b compressed as kind ("", "gzip" or "zstd").
func compressed(t testing.TB, kind string, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch kind {
	case "":
		return b
	case "gzip":
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
	case "zstd":
		zw, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		zw.Write(b)
		zw.Close()
	default:
		t.Fatalf("unknown compression %q", kind)
	}
	return buf.Bytes()
}

var layerMediaTypes = map[string]string{
	"":     "application/vnd.oci.image.layer.v1.tar",
	"gzip": "application/vnd.oci.image.layer.v1.tar+gzip",
	"zstd": "application/vnd.oci.image.layer.v1.tar+zstd",
}

// layout builds an OCI image layout in a temporary directory.
type layout struct {
	t   testing.TB
	dir string
}

func newLayout(t testing.TB) *layout {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
	return &layout{t, dir}
}

func (l *layout) blob(digest string) string {
	return filepath.Join(l.dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

// put stores b as a blob and returns its digest.
func (l *layout) put(b []byte) string {
	d := sha(b)
	if err := os.WriteFile(l.blob(d), b, 0o644); err != nil {
		l.t.Fatal(err)
	}
	return d
}

func (l *layout) putJSON(v any) (string, int) {
	b, err := json.Marshal(v)
	if err != nil {
		l.t.Fatal(err)
	}
	return l.put(b), len(b)
}

// manifest returns the manifest blob m describes, decoded loosely.
func (l *layout) manifest(m desc) map[string]any {
	var man map[string]any
	b, err := os.ReadFile(l.blob(m["digest"].(string)))
	if err == nil {
		err = json.Unmarshal(b, &man)
	}
	if err != nil {
		l.t.Fatal(err)
	}
	return man
}

// desc is an OCI descriptor, kept loose so that cases can add to it.
type desc = map[string]any

// ociImage describes an image for layout.image.
type ociImage struct {
	layers    [][]byte // uncompressed tars, bottom first
	compress  string   // "", "gzip" or "zstd", for every layer
	config    map[string]any
	arch      string // config and platform architecture; "" for none
	noDiffIDs bool   // leave rootfs.diff_ids out of the config
	docker    bool   // docker schema 2 media types instead of OCI
}

// image stores img's layers, config and manifest and returns the
// manifest's descriptor (with a platform when img.arch is set).
func (l *layout) image(img ociImage) desc {
	var layers []desc
	var diffIDs []string
	for _, b := range img.layers {
		c := compressed(l.t, img.compress, b)
		mt := layerMediaTypes[img.compress]
		if img.docker {
			mt = "application/vnd.docker.image.rootfs.diff.tar.gzip"
		}
		layers = append(layers, desc{"mediaType": mt, "digest": l.put(c), "size": len(c)})
		diffIDs = append(diffIDs, sha(b))
	}
	cfg := map[string]any{"config": map[string]any{}}
	for k, v := range img.config {
		cfg[k] = v
	}
	if img.arch != "" {
		cfg["os"], cfg["architecture"] = "linux", img.arch
	}
	if !img.noDiffIDs {
		cfg["rootfs"] = map[string]any{"type": "layers", "diff_ids": diffIDs}
	}
	cfgMT, manMT := "application/vnd.oci.image.config.v1+json", "application/vnd.oci.image.manifest.v1+json"
	if img.docker {
		cfgMT, manMT = "application/vnd.docker.container.image.v1+json", "application/vnd.docker.distribution.manifest.v2+json"
	}
	cd, cs := l.putJSON(cfg)
	md, ms := l.putJSON(desc{"schemaVersion": 2, "mediaType": manMT, "config": desc{"mediaType": cfgMT, "digest": cd, "size": cs}, "layers": layers})
	d := desc{"mediaType": manMT, "digest": md, "size": ms}
	if img.arch != "" {
		d["platform"] = platformOf(img.arch)
	}
	return d
}

// platformOf turns "arch" or "arch/variant" into a linux platform.
func platformOf(s string) map[string]string {
	arch, variant, _ := strings.Cut(s, "/")
	p := map[string]string{"os": "linux", "architecture": arch}
	if variant != "" {
		p["variant"] = variant
	}
	return p
}

// index stores an image index listing manifests and returns its descriptor.
func (l *layout) index(mediaType string, manifests ...desc) desc {
	d, n := l.putJSON(desc{"schemaVersion": 2, "mediaType": mediaType, "manifests": manifests})
	return desc{"mediaType": mediaType, "digest": d, "size": n}
}

// top writes index.json listing manifests and returns the layout's path.
func (l *layout) top(manifests ...desc) string {
	b, err := json.Marshal(desc{"schemaVersion": 2, "mediaType": ociIndex, "manifests": manifests})
	if err != nil {
		l.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.dir, "index.json"), b, 0o644); err != nil {
		l.t.Fatal(err)
	}
	return l.dir
}

const (
	ociIndex   = "application/vnd.oci.image.index.v1+json"
	dockerList = "application/vnd.docker.distribution.manifest.list.v2+json"
)

// attestation is a BuildKit provenance manifest for subject.
func (l *layout) attestation(subject desc) desc {
	d := l.image(ociImage{layers: [][]byte{layerOf(l.t, file{"provenance.json", "{}"})}})
	d["platform"] = map[string]string{"os": "unknown", "architecture": "unknown"}
	d["annotations"] = map[string]string{"vnd.docker.reference.type": "attestation-manifest", "vnd.docker.reference.digest": subject["digest"].(string)}
	return d
}

// otherArch is an architecture that is not this host's.
func otherArch() string {
	if runtime.GOARCH == "s390x" {
		return "ppc64le"
	}
	return "s390x"
}

// tarOfDir packs dir into a tar file, optionally compressed, and returns
// its path.
func tarOfDir(t *testing.T, dir, compress string) string {
	t.Helper()
	var files []file
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == ".":
		case d.IsDir():
			files = append(files, file{name: rel + "/"})
		default:
			b, _ := os.ReadFile(p)
			files = append(files, file{rel, string(b)})
		}
		return nil
	})
	p := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(p, compressed(t, compress, layerOf(t, files...)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// dockerSave writes a `docker save` style archive (legacy layout) whose
// layers are stored as given and returns its path.
func dockerSave(t *testing.T, config map[string]any, layers ...[]byte) string {
	t.Helper()
	dir := t.TempDir()
	var names []string
	for i, b := range layers {
		name := fmt.Sprintf("l%d/layer.tar", i)
		os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
		names = append(names, name)
	}
	cb, _ := json.Marshal(config)
	os.WriteFile(filepath.Join(dir, "config.json"), cb, 0o644)
	mb, _ := json.Marshal([]desc{{"Config": "config.json", "RepoTags": []string{"x:latest"}, "Layers": names}})
	os.WriteFile(filepath.Join(dir, "manifest.json"), mb, 0o644)
	return tarOfDir(t, dir, "")
}

// logBuffer collects a store's debug log.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// layers returns how many layers were unpacked and how many found in the
// cache since the last call.
func (b *logBuffer) layers() (unpacked, cached int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	b.buf.Reset()
	return strings.Count(s, `msg="layer unpacked"`), strings.Count(s, `msg="layer already unpacked"`)
}

func openStore(t testing.TB) (*image.Store, *logBuffer) {
	t.Helper()
	var lb logBuffer
	s, err := image.Open(t.TempDir(), slog.New(slog.NewTextHandler(&lb, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	return s, &lb
}

// readLayered returns file p of im as the top layer holding it shows it
// (whiteouts aside).
func readLayered(t *testing.T, s *image.Store, im image.Image, p string) string {
	t.Helper()
	for _, dir := range s.LowerDirs(im) {
		if b, err := os.ReadFile(filepath.Join(dir, p)); err == nil {
			return string(b)
		}
	}
	t.Errorf("%s not in any layer of %s", p, im.Name)
	return ""
}

func TestImportSelectsPlatform(t *testing.T) {
	testenv.Require(t, "root")
	host, other := runtime.GOARCH, otherArch()
	hostLayer := func(t *testing.T) []byte { return layerOf(t, file{"arch", "host"}) }
	otherLayer := func(t *testing.T) []byte { return layerOf(t, file{"arch", "other"}) }
	tests := []struct {
		name  string
		build func(t *testing.T, l *layout) string
	}{
		{"nested OCI index with attestation", func(t *testing.T, l *layout) string {
			o := l.image(ociImage{layers: [][]byte{otherLayer(t)}, arch: other, compress: "gzip"})
			h := l.image(ociImage{layers: [][]byte{hostLayer(t)}, arch: host, compress: "gzip"})
			return l.top(l.index(ociIndex, o, l.attestation(o), h, l.attestation(h)))
		}},
		{"docker manifest list", func(t *testing.T, l *layout) string {
			o := l.image(ociImage{layers: [][]byte{otherLayer(t)}, arch: other + "/v7", compress: "gzip", docker: true})
			h := l.image(ociImage{layers: [][]byte{hostLayer(t)}, arch: host, compress: "gzip", docker: true})
			return l.top(l.index(dockerList, o, h))
		}},
		{"platforms in index.json", func(t *testing.T, l *layout) string {
			o := l.image(ociImage{layers: [][]byte{otherLayer(t)}, arch: other})
			h := l.image(ociImage{layers: [][]byte{hostLayer(t)}, arch: host})
			return l.top(o, h)
		}},
		{"other platform's blobs absent", func(t *testing.T, l *layout) string {
			o := l.image(ociImage{layers: [][]byte{otherLayer(t)}, arch: other})
			os.Remove(l.blob(o["digest"].(string)))
			h := l.image(ociImage{layers: [][]byte{hostLayer(t)}, arch: host})
			return l.top(l.index(ociIndex, o, h))
		}},
		{"index without media types", func(t *testing.T, l *layout) string {
			o := l.image(ociImage{layers: [][]byte{otherLayer(t)}, arch: other})
			h := l.image(ociImage{layers: [][]byte{hostLayer(t)}, arch: host})
			delete(o, "mediaType")
			delete(h, "mediaType")
			d, _ := l.putJSON(desc{"schemaVersion": 2, "manifests": []desc{o, h}})
			return l.top(desc{"digest": d})
		}},
		{"platform only in the config", func(t *testing.T, l *layout) string {
			o := l.image(ociImage{layers: [][]byte{otherLayer(t)}, arch: other})
			h := l.image(ociImage{layers: [][]byte{hostLayer(t)}, arch: host})
			delete(o, "platform")
			delete(h, "platform")
			return l.top(o, h)
		}},
		{"variant of this host's architecture", func(t *testing.T, l *layout) string {
			o := l.image(ociImage{layers: [][]byte{otherLayer(t)}, arch: other})
			h := l.image(ociImage{layers: [][]byte{hostLayer(t)}, arch: host + "/v2"})
			return l.top(l.index(ociIndex, o, h))
		}},
		{"nested twice, as a tar", func(t *testing.T, l *layout) string {
			o := l.image(ociImage{layers: [][]byte{otherLayer(t)}, arch: other})
			h := l.image(ociImage{layers: [][]byte{hostLayer(t)}, arch: host})
			return tarOfDir(t, l.top(l.index(ociIndex, l.index(ociIndex, o), l.index(ociIndex, h))), "")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := openStore(t)
			im, err := s.Import(t.Context(), "multi", tc.build(t, newLayout(t)))
			if err != nil {
				t.Fatal(err)
			}
			if len(im.Layers) != 1 {
				t.Fatalf("image has %d layers, want 1", len(im.Layers))
			}
			if got := readLayered(t, s, im, "arch"); got != "host" {
				t.Errorf("arch = %q, want the host image's", got)
			}
		})
	}
}

func TestImportNoMatchingPlatform(t *testing.T) {
	testenv.Require(t, "root")
	other := otherArch()
	tests := []struct {
		name    string
		build   func(t *testing.T, l *layout) string
		want    []string
		notWant []string
	}{
		{"index of other platforms", func(t *testing.T, l *layout) string {
			a := l.image(ociImage{layers: [][]byte{layerOf(t, file{"a", "a"})}, arch: other})
			b := l.image(ociImage{layers: [][]byte{layerOf(t, file{"b", "b"})}, arch: "arm/v7"})
			if runtime.GOARCH == "arm" {
				b = l.image(ociImage{layers: [][]byte{layerOf(t, file{"b", "b"})}, arch: "mips64le"})
			}
			return l.top(l.index(ociIndex, a, l.attestation(a), b))
		}, []string{"linux/" + other, "no image for linux/" + runtime.GOARCH}, []string{"unknown"}},
		{"config names another platform", func(t *testing.T, l *layout) string {
			a := l.image(ociImage{layers: [][]byte{layerOf(t, file{"a", "a"})}, arch: other})
			delete(a, "platform")
			return l.top(a)
		}, []string{"linux/" + other}, nil},
		{"only attestations", func(t *testing.T, l *layout) string {
			a := l.image(ociImage{layers: [][]byte{layerOf(t, file{"a", "a"})}})
			return l.top(l.index(ociIndex, l.attestation(a)))
		}, []string{"found nothing"}, nil},
		{"only an artifact", func(t *testing.T, l *layout) string {
			cd, cs := l.putJSON(desc{})
			md, _ := l.putJSON(desc{"schemaVersion": 2, "config": desc{"mediaType": "application/vnd.cncf.helm.config.v1+json", "digest": cd, "size": cs}, "layers": []desc{}})
			return l.top(desc{"digest": md})
		}, []string{"artifact application/vnd.cncf.helm.config.v1+json"}, nil},
		{"host platform's blob absent", func(t *testing.T, l *layout) string {
			h := l.image(ociImage{layers: [][]byte{layerOf(t, file{"a", "a"})}, arch: runtime.GOARCH})
			os.Remove(l.blob(h["digest"].(string)))
			return l.top(l.index(ociIndex, h))
		}, []string{"linux/" + runtime.GOARCH + " (blob not in the layout)"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := openStore(t)
			_, err := s.Import(t.Context(), "multi", tc.build(t, newLayout(t)))
			if !errors.Is(err, rung.ErrInvalid) {
				t.Fatalf("Import = %v, want invalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q mentions %q", err, w)
				}
			}
		})
	}
}

func TestImportCompressedLayers(t *testing.T) {
	testenv.Require(t, "root")
	layer := layerOf(t, file{"bin/", ""}, file{"bin/hello", "hi\n"})
	oci := func(compress string, fix func(d desc)) func(t *testing.T) string {
		return func(t *testing.T) string {
			l := newLayout(t)
			m := l.image(ociImage{layers: [][]byte{layer}, compress: compress})
			if fix != nil {
				// Rewrite the manifest: fix edits its layer descriptor.
				man := l.manifest(m)
				fix(man["layers"].([]any)[0].(map[string]any))
				d, _ := l.putJSON(man)
				m = desc{"digest": d}
			}
			return l.top(m)
		}
	}
	tests := []struct {
		name string
		path func(t *testing.T) string
	}{
		{"plain", oci("", nil)},
		{"gzip", oci("gzip", nil)},
		{"zstd", oci("zstd", nil)},
		{"zstd without media type", oci("zstd", func(d desc) { delete(d, "mediaType") })},
		{"gzip labelled zstd", oci("gzip", func(d desc) { d["mediaType"] = layerMediaTypes["zstd"] })},
		{"zstd layout tar", func(t *testing.T) string { return tarOfDir(t, oci("zstd", nil)(t), "zstd") }},
		{"gzip layout tar", func(t *testing.T) string { return tarOfDir(t, oci("gzip", nil)(t), "gzip") }},
		{"docker save, zstd layer", func(t *testing.T) string {
			return dockerSave(t, map[string]any{"rootfs": map[string]any{"diff_ids": []string{sha(layer)}}}, compressed(t, "zstd", layer))
		}},
		{"zstd rootfs tar", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "rootfs.tar.zst")
			os.WriteFile(p, compressed(t, "zstd", layer), 0o644)
			return p
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := openStore(t)
			im, err := s.Import(t.Context(), "z", tc.path(t))
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{sha(layer)}; !slices.Equal(im.Layers, want) {
				t.Errorf("layers = %v, want %v (the uncompressed digest)", im.Layers, want)
			}
			if got := readLayered(t, s, im, "bin/hello"); got != "hi\n" {
				t.Errorf("bin/hello = %q", got)
			}
			if im.SizeBytes != 3 {
				t.Errorf("size = %d, want 3", im.SizeBytes)
			}
		})
	}
}

// paddedJSON returns doc followed by spaces, one byte more than import
// reads of a JSON file (16 MiB).
func paddedJSON(doc string) []byte {
	b := bytes.Repeat([]byte(" "), 16<<20+1)
	copy(b, doc)
	return b
}

// manyFiles is a layer big enough for unpacking to show in timings.
func manyFiles(t testing.TB, prefix string, n int) []byte {
	files := []file{{prefix + "/", ""}}
	body := strings.Repeat("x", 4096)
	for i := range n {
		files = append(files, file{fmt.Sprintf("%s/f%05d", prefix, i), body})
	}
	return layerOf(t, files...)
}

func TestImportSkipsCachedLayers(t *testing.T) {
	testenv.Require(t, "root")
	const n = 1000
	base := manyFiles(t, "base", n)
	l := newLayout(t)
	path := l.top(l.image(ociImage{layers: [][]byte{base, layerOf(t, file{"app", "1"})}, compress: "gzip"}))

	s, log := openStore(t)
	start := time.Now()
	first, err := s.Import(t.Context(), "app", path)
	if err != nil {
		t.Fatal(err)
	}
	cold := time.Since(start)
	if unpacked, cached := log.layers(); unpacked != 2 || cached != 0 {
		t.Errorf("first import: %d layers unpacked, %d cached; want 2, 0", unpacked, cached)
	}
	var before unix.Stat_t
	unix.Stat(s.LayerDir(first.Layers[0]), &before)

	start = time.Now()
	again, err := s.Import(t.Context(), "app2", path)
	if err != nil {
		t.Fatal(err)
	}
	warm := time.Since(start)
	if unpacked, cached := log.layers(); unpacked != 0 || cached != 2 {
		t.Errorf("re-import: %d layers unpacked, %d cached; want 0, 2", unpacked, cached)
	}
	t.Logf("import of a %d-file gzip image: first %v, again with its layers cached %v", n+2, cold, warm)
	if !slices.Equal(again.Layers, first.Layers) || again.Digest != first.Digest || again.SizeBytes != first.SizeBytes {
		t.Errorf("re-import = %v %s %d, want %v %s %d", again.Layers, again.Digest, again.SizeBytes, first.Layers, first.Digest, first.SizeBytes)
	}
	var after unix.Stat_t
	unix.Stat(s.LayerDir(first.Layers[0]), &after)
	if after.Mtim != before.Mtim || after.Ino != before.Ino {
		t.Error("the cached layer directory was replaced")
	}

	// Another image on the same base unpacks only its own layer.
	l2 := newLayout(t)
	other, err := s.Import(t.Context(), "other", l2.top(l2.image(ociImage{layers: [][]byte{base, layerOf(t, file{"other", "2"})}, compress: "zstd"})))
	if err != nil {
		t.Fatal(err)
	}
	if unpacked, cached := log.layers(); unpacked != 1 || cached != 1 {
		t.Errorf("shared base: %d layers unpacked, %d cached; want 1, 1", unpacked, cached)
	}
	if other.Layers[0] != first.Layers[0] || s.LowerDirs(other)[1] != s.LowerDirs(first)[1] {
		t.Errorf("shared base layer differs: %s vs %s", other.Layers[0], first.Layers[0])
	}

	// Without diff_ids nothing is known in advance: every layer is read.
	l3 := newLayout(t)
	if _, err := s.Import(t.Context(), "nodiff", l3.top(l3.image(ociImage{layers: [][]byte{layerOf(t, file{"app", "1"})}, noDiffIDs: true}))); err != nil {
		t.Fatal(err)
	}
	if unpacked, cached := log.layers(); unpacked != 1 || cached != 0 {
		t.Errorf("image without diff_ids: %d layers unpacked, %d cached; want 1, 0", unpacked, cached)
	}
}

func TestImportWhiteoutsThroughOverlay(t *testing.T) {
	testenv.Require(t, "root")
	l := newLayout(t)
	lower := layerOf(t,
		file{"etc/", ""}, file{"etc/keep", "keep"}, file{"etc/gone", "gone"},
		file{"opq/", ""}, file{"opq/old", "old"}, file{"opq/sub/", ""}, file{"opq/sub/deep", "deep"},
		file{"base", "base"},
	)
	upper := layerOf(t,
		file{"etc/", ""}, file{"etc/.wh.gone", ""},
		file{"opq/", ""}, file{"opq/.wh..wh..opq", ""}, file{"opq/new", "new"},
		file{"top", "top"},
	)
	s, _ := openStore(t)
	im, err := s.Import(t.Context(), "wh", l.top(l.image(ociImage{layers: [][]byte{lower, upper}, compress: "gzip"})))
	if err != nil {
		t.Fatal(err)
	}
	target := mountOverlay(t, s, im, t.TempDir())

	names := func(dir string) []string {
		ents, err := os.ReadDir(filepath.Join(target, dir))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	if got, want := names("etc"), []string{"keep"}; !slices.Equal(got, want) {
		t.Errorf("etc = %v, want %v (gone whited out)", got, want)
	}
	if _, err := os.Lstat(filepath.Join(target, "etc/gone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("etc/gone: %v, want not exist", err)
	}
	if got, want := names("opq"), []string{"new"}; !slices.Equal(got, want) {
		t.Errorf("opaque dir = %v, want %v", got, want)
	}
	for p, want := range map[string]string{"etc/keep": "keep", "base": "base", "top": "top", "opq/new": "new"} {
		if b, err := os.ReadFile(filepath.Join(target, p)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
}

func TestImportConfig(t *testing.T) {
	testenv.Require(t, "root")
	tests := []struct {
		name     string
		config   map[string]any
		wantEnv  []string
		wantDir  string
		wantUser string
	}{
		{"env without PATH", map[string]any{"Env": []string{"A=1"}, "WorkingDir": "/app/./x/", "User": "1000:1000", "Entrypoint": []string{"/bin/app"}, "Cmd": []string{"serve"}},
			[]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "A=1"}, "/app/x", "1000:1000"},
		{"env with PATH", map[string]any{"Env": []string{"PATH=/opt/bin", "B=2"}, "User": "node"}, []string{"PATH=/opt/bin", "B=2"}, "/workspace", "node"},
		{"relative working dir ignored", map[string]any{"WorkingDir": "app"}, []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, "/workspace", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLayout(t)
			s, _ := openStore(t)
			im, err := s.Import(t.Context(), "cfg", l.top(l.image(ociImage{layers: [][]byte{layerOf(t, file{"a", "a"})}, config: map[string]any{"config": tc.config}})))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(im.Config.Env, tc.wantEnv) || im.Config.WorkingDir != tc.wantDir || im.Config.User != tc.wantUser {
				t.Errorf("config = %+v, want env %v, working dir %s, user %q", im.Config, tc.wantEnv, tc.wantDir, tc.wantUser)
			}
		})
	}
}

func TestImportMalformed(t *testing.T) {
	testenv.Require(t, "root")
	layer := layerOf(t, file{"a", "a"})
	tests := []struct {
		name  string
		build func(t *testing.T, l *layout) string
		want  string
	}{
		{"index.json not JSON", func(t *testing.T, l *layout) string {
			os.WriteFile(filepath.Join(l.dir, "index.json"), []byte("{"), 0o644)
			return l.dir
		}, "index.json is not valid JSON"},
		{"index lists nothing", func(t *testing.T, l *layout) string { return l.top() }, "lists no manifest"},
		{"manifest digest with a path", func(t *testing.T, l *layout) string {
			return l.top(desc{"digest": "sha256:../../../etc/passwd"})
		}, `unsupported blob digest "sha256:../../../etc/passwd"`},
		{"manifest digest not sha256", func(t *testing.T, l *layout) string {
			return l.top(desc{"digest": "sha512:" + strings.Repeat("a", 128)})
		}, "unsupported blob digest"},
		{"manifest does not match its digest", func(t *testing.T, l *layout) string {
			m := l.image(ociImage{layers: [][]byte{layer}})
			os.WriteFile(l.blob(m["digest"].(string)), []byte(`{"layers":[]}`), 0o644)
			return l.top(m)
		}, "does not match its digest"},
		{"manifest not JSON", func(t *testing.T, l *layout) string {
			return l.top(desc{"digest": l.put([]byte("not json"))})
		}, "is not valid JSON"},
		{"manifest missing", func(t *testing.T, l *layout) string {
			return l.top(desc{"digest": sha([]byte("absent"))})
		}, "blob not in the layout"},
		{"config not JSON", func(t *testing.T, l *layout) string {
			md, _ := l.putJSON(desc{"config": desc{"digest": l.put([]byte("{"))}, "layers": []desc{{"digest": l.put(layer)}}})
			return l.top(desc{"digest": md})
		}, "image config: blob"},
		{"config does not match its digest", func(t *testing.T, l *layout) string {
			m := l.image(ociImage{layers: [][]byte{layer}})
			man := l.manifest(m)
			os.WriteFile(l.blob(man["config"].(map[string]any)["digest"].(string)), []byte("{}"), 0o644)
			return l.top(m)
		}, "does not match its digest"},
		{"layer digest with a path", func(t *testing.T, l *layout) string {
			md, _ := l.putJSON(desc{"layers": []desc{{"digest": "sha256:../../x"}}})
			return l.top(desc{"digest": md})
		}, `unsupported layer digest "sha256:../../x"`},
		{"layer does not match its digest", func(t *testing.T, l *layout) string {
			m := l.image(ociImage{layers: [][]byte{layer}, compress: "gzip"})
			man := l.manifest(m)
			os.WriteFile(l.blob(man["layers"].([]any)[0].(map[string]any)["digest"].(string)), compressed(t, "gzip", layerOf(t, file{"evil", "x"})), 0o644)
			return l.top(m)
		}, "does not match its digest"},
		{"layer missing", func(t *testing.T, l *layout) string {
			md, _ := l.putJSON(desc{"layers": []desc{{"digest": sha([]byte("absent"))}}})
			return l.top(desc{"digest": md})
		}, "is not in the layout"},
		{"diff_id does not match the layer", func(t *testing.T, l *layout) string {
			m := l.image(ociImage{layers: [][]byte{layer}, config: map[string]any{"rootfs": map[string]any{"diff_ids": []string{sha([]byte("other"))}}}, noDiffIDs: true})
			return l.top(m)
		}, "but the image config says"},
		{"diff_id not a digest", func(t *testing.T, l *layout) string {
			m := l.image(ociImage{layers: [][]byte{layer}, config: map[string]any{"rootfs": map[string]any{"diff_ids": []string{"sha256:../x"}}}, noDiffIDs: true})
			return l.top(m)
		}, "unsupported diff_id"},
		{"encrypted layer", func(t *testing.T, l *layout) string {
			md, _ := l.putJSON(desc{"layers": []desc{{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip+encrypted", "digest": l.put(layer)}}})
			return l.top(desc{"digest": md})
		}, "is encrypted"},
		{"layer not a tar", func(t *testing.T, l *layout) string {
			md, _ := l.putJSON(desc{"layers": []desc{{"digest": l.put(compressed(t, "zstd", []byte("not a tar, but long enough to fill a header block")))}}})
			return l.top(desc{"digest": md})
		}, "read layer tar"},
		{"corrupt zstd layer", func(t *testing.T, l *layout) string {
			z := compressed(t, "zstd", layer)
			z[len(z)/2] ^= 0xff
			md, _ := l.putJSON(desc{"layers": []desc{{"digest": l.put(z)}}})
			return l.top(desc{"digest": md})
		}, "layer 1"},
		{"indexes nested too deep", func(t *testing.T, l *layout) string {
			d := l.image(ociImage{layers: [][]byte{layer}})
			for range 6 {
				d = l.index(ociIndex, d)
			}
			return l.top(d)
		}, "nest deeper than"},
		{"indexes list too many manifests", func(t *testing.T, l *layout) string {
			// Other platforms' entries are passed over unread, but count.
			ds := make([]desc, 4096+1)
			for i := range ds {
				ds[i] = desc{"digest": sha(fmt.Append(nil, i)), "platform": platformOf(otherArch())}
			}
			return l.top(ds...)
		}, "list more than 4096 manifests"},
		{"index.json too large", func(t *testing.T, l *layout) string {
			os.WriteFile(filepath.Join(l.dir, "index.json"), paddedJSON(`{"manifests":[]}`), 0o644)
			return l.dir
		}, "index.json is larger than 16 MiB"},
		{"manifest too large", func(t *testing.T, l *layout) string {
			return l.top(desc{"digest": l.put(paddedJSON(`{"layers":[]}`))})
		}, "is larger than 16 MiB"},
		{"zstd window too large", func(t *testing.T, l *layout) string {
			// A zstd frame asking for a 256 MiB window (descriptor 0x90:
			// 2^(10+18)), then an empty last raw block. Without the cap
			// it is an empty, valid root filesystem.
			p := filepath.Join(t.TempDir(), "rootfs.tar.zst")
			os.WriteFile(p, []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x90, 0x01, 0x00, 0x00}, 0o644)
			return p
		}, "window size exceeded"},
		{"docker manifest.json not JSON", func(t *testing.T, l *layout) string {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "manifest.json"), []byte("[{"), 0o644)
			return tarOfDir(t, dir, "")
		}, "manifest.json is not valid JSON"},
		{"docker layer missing", func(t *testing.T, l *layout) string {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`[{"Layers":["../../nope/layer.tar"]}]`), 0o644)
			return tarOfDir(t, dir, "")
		}, "layer file layer.tar is not in the archive"},
		{"docker config missing", func(t *testing.T, l *layout) string {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`[{"Config":"cfg.json","Layers":[]}]`), 0o644)
			return tarOfDir(t, dir, "")
		}, "image config is missing"},
		{"docker config not JSON", func(t *testing.T, l *layout) string {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`[{"Config":"cfg.json","Layers":[]}]`), 0o644)
			os.WriteFile(filepath.Join(dir, "cfg.json"), []byte(`{"config":`), 0o644)
			return tarOfDir(t, dir, "")
		}, "image config is not valid JSON"},
		{"docker diff_id does not match", func(t *testing.T, l *layout) string {
			return dockerSave(t, map[string]any{"rootfs": map[string]any{"diff_ids": []string{sha([]byte("x"))}}}, layer)
		}, "but the image config says"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLayout(t)
			s, _ := openStore(t)
			p := tc.build(t, l)
			_, err := s.Import(t.Context(), "bad", p)
			if !errors.Is(err, rung.ErrInvalid) {
				t.Fatalf("Import = %v, want invalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Import = %q, want it to say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), os.TempDir()) {
				t.Errorf("error %q shows a host path", err)
			}
			if _, err := s.Get("bad"); !errors.Is(err, rung.ErrNotFound) {
				t.Errorf("Get after a failed import = %v, want not found", err)
			}
		})
	}
}

// BenchmarkImport times importing a two-layer image of about 1,000 4-KiB
// files into a fresh store (every layer unpacked) and into a store that
// already holds its layers (found by the config's diff IDs, not read).
func BenchmarkImport(b *testing.B) {
	testenv.Require(b, "root")
	l := newLayout(b)
	path := l.top(l.image(ociImage{layers: [][]byte{manyFiles(b, "base", 1000), layerOf(b, file{"app", "1"})}, compress: "gzip"}))
	b.Run("fresh-store", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			s, _ := openStore(b)
			b.StartTimer()
			if _, err := s.Import(b.Context(), "app", path); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("layers-cached", func(b *testing.B) {
		s, _ := openStore(b)
		if _, err := s.Import(b.Context(), "app", path); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := s.Import(b.Context(), "app", path); err != nil {
				b.Fatal(err)
			}
		}
	})
}
