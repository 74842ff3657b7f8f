package image

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"rung.dev/rung"
)

// Import reads an image from path and stores it as name. path may be a
// root filesystem directory, an OCI image layout directory, or a tarball
// (optionally gzip- or zstd-compressed) holding a root filesystem, an OCI
// image layout, or a `docker save` archive. The kind is detected from
// content. From a multi-platform OCI layout Import takes the image for
// this host's platform (runtime.GOOS/GOARCH); layers may be plain,
// gzip or zstd tars. A layer whose uncompressed digest the image config
// names (rootfs.diff_ids) and that the layer cache already holds is not
// unpacked again. Bad input (malformed JSON, a blob that does not match
// its digest, no image for this platform) is rung.ErrInvalid.
func (s *Store) Import(ctx context.Context, name, path string) (Image, error) {
	if !rung.ValidName(name) {
		return Image{}, rung.Errorf(rung.ErrInvalid, "invalid image name %q", name)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Image{}, rung.Errorf(rung.ErrNotFound, "import %s: %v", name, err)
	}
	if fi.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "index.json")); err == nil {
			return s.importOCI(ctx, name, path)
		}
		return s.importRootfsDir(ctx, name, path)
	}
	// A tarball: OCI layouts and docker archives are unpacked to a
	// temporary directory first, because their layers are files inside.
	kind, err := sniffTar(path)
	if err != nil {
		return Image{}, fmt.Errorf("import %s: %w", name, err)
	}
	if kind == "rootfs" {
		digest, size, err := s.importLayer(ctx, layerSource{path: path}, "")
		if err != nil {
			return Image{}, fmt.Errorf("import %s: %w", name, err)
		}
		return s.Put(name, []string{digest}, defaultConfig(), size)
	}
	tmp, err := os.MkdirTemp(filepath.Join(s.dir, "layers"), ".tmp-import-")
	if err != nil {
		return Image{}, err
	}
	defer os.RemoveAll(tmp)
	if err := extractPlain(ctx, path, tmp); err != nil {
		return Image{}, fmt.Errorf("import %s: %w", name, err)
	}
	if kind == "oci" {
		return s.importOCI(ctx, name, tmp)
	}
	return s.importDocker(ctx, name, tmp)
}

func defaultConfig() Config {
	return Config{Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, WorkingDir: "/workspace", Shell: "/bin/sh"}
}

// sniffTar looks at a tarball's entry names: index.json and oci-layout
// mean an OCI layout, manifest.json a docker archive, anything else a
// root filesystem.
func sniffTar(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	r, err := decompress(bufio.NewReader(f), "")
	if err != nil {
		return "", err
	}
	defer r.Close()
	tr := tar.NewReader(r)
	kind := "rootfs"
	for i := 0; i < 10000; i++ {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", rung.Errorf(rung.ErrInvalid, "not a tar archive: %v", err)
		}
		switch strings.TrimPrefix(hdr.Name, "./") {
		case "oci-layout", "index.json":
			return "oci", nil
		case "manifest.json":
			kind = "docker"
		}
	}
	return kind, nil
}

// extractPlain unpacks an archive of regular files and directories (an
// OCI layout or docker archive) into dir, refusing anything else.
func extractPlain(ctx context.Context, path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := decompress(bufio.NewReaderSize(f, 1<<20), "")
	if err != nil {
		return err
	}
	defer r.Close()
	tr := tar.NewReader(r)
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return rung.Errorf(rung.ErrInvalid, "read archive: %v", err)
		}
		name, err := cleanName(hdr.Name)
		if err != nil || name == "" {
			continue
		}
		target := filepath.Join(dir, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
				return err
			}
			out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			out.Close()
			if err != nil {
				return err
			}
		}
	}
}

// importRootfsDir stores a directory tree as a one-layer image.
func (s *Store) importRootfsDir(ctx context.Context, name, dir string) (Image, error) {
	digest, size, err := s.addDirLayer(ctx, dir)
	if err != nil {
		return Image{}, fmt.Errorf("import %s: %w", name, err)
	}
	return s.Put(name, []string{digest}, defaultConfig(), size)
}

// addDirLayer stores the tree at dir as one layer.
func (s *Store) addDirLayer(ctx context.Context, dir string) (digest string, size int64, err error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarDir(ctx, dir, pw)) }() // ends when the tree is written or the reader fails
	digest, size, err = s.AddLayer(ctx, pr)
	pr.CloseWithError(err)
	return digest, size, err
}

// tarDir writes dir as a tar stream in a deterministic (lexical) order.
func tarDir(ctx context.Context, dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return nil // sockets and the like are not part of an image
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname = "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func (s *Store) importDocker(ctx context.Context, name, dir string) (Image, error) {
	var manifest []struct {
		Config string   `json:"Config"`
		Layers []string `json:"Layers"`
	}
	if err := readJSON(filepath.Join(dir, "manifest.json"), "manifest.json", &manifest); err != nil {
		return Image{}, fmt.Errorf("import %s: %w", name, err)
	}
	if len(manifest) == 0 {
		return Image{}, rung.Errorf(rung.ErrInvalid, "import %s: docker archive holds no image", name)
	}
	var srcs []layerSource
	for _, l := range manifest[0].Layers {
		rel, err := cleanName(l)
		if err != nil || rel == "" {
			return Image{}, rung.Errorf(rung.ErrInvalid, "import %s: bad layer path %q", name, l)
		}
		srcs = append(srcs, layerSource{path: filepath.Join(dir, rel)})
	}
	var cfg ociConfig
	if manifest[0].Config != "" {
		rel, err := cleanName(manifest[0].Config)
		if err != nil || rel == "" {
			return Image{}, rung.Errorf(rung.ErrInvalid, "import %s: bad config path %q", name, manifest[0].Config)
		}
		if err := readJSON(filepath.Join(dir, rel), "image config", &cfg); err != nil {
			return Image{}, fmt.Errorf("import %s: %w", name, err)
		}
	}
	return s.importLayers(ctx, name, srcs, cfg)
}

// layerSource is one layer of an image being imported.
type layerSource struct {
	path      string // the layer tar, plain or compressed
	digest    string // what the file must hash to; "" when the format names none (docker save)
	mediaType string // "" when the format gives none
}

func (s *Store) importLayers(ctx context.Context, name string, srcs []layerSource, oc ociConfig) (Image, error) {
	// diff_ids name each layer's uncompressed digest, which is the layer
	// cache's key, so a cached layer is known before reading it. An
	// image without them (hand-made) unpacks every layer.
	diffIDs := oc.RootFS.DiffIDs
	if len(diffIDs) != len(srcs) {
		diffIDs = nil
	}
	layers := make([]string, 0, len(srcs))
	var total int64
	for i, src := range srcs {
		diffID := ""
		if diffIDs != nil {
			if diffID = diffIDs[i]; !validDigest(diffID) {
				return Image{}, rung.Errorf(rung.ErrInvalid, "import %s: unsupported diff_id %q", name, diffID)
			}
		}
		digest, size, err := s.importLayer(ctx, src, diffID)
		if err != nil {
			return Image{}, fmt.Errorf("import %s: layer %d: %w", name, i+1, err)
		}
		layers, total = append(layers, digest), total+size
	}
	return s.Put(name, layers, imageConfig(oc), total)
}

// importLayer adds one layer to the cache, or finds it there when diffID
// (possibly "") names a layer already unpacked, and returns its digest
// and unpacked size.
//
// The skip trusts diffID without reading the layer: the config that
// names it was checked against the manifest's digest, and a layer that
// is read must hash to its diff_id, so for a well-formed image the skip
// gives what unpacking would.
func (s *Store) importLayer(ctx context.Context, src layerSource, diffID string) (string, int64, error) {
	start := time.Now()
	if diffID != "" {
		// AddLayer renames a complete temporary directory into place,
		// so a layer directory that exists is whole.
		if fi, err := os.Stat(s.LayerDir(diffID)); err == nil && fi.IsDir() {
			size, err := unpackedSize(ctx, s.LayerDir(diffID))
			if err != nil {
				return "", 0, fmt.Errorf("cached layer %s: %w", diffID, err)
			}
			s.log.DebugContext(ctx, "layer already unpacked", "layer", diffID, "duration", time.Since(start))
			return diffID, size, nil
		}
	}
	if src.digest != "" {
		if err := verifyBlob(src.path, src.digest); err != nil {
			return "", 0, err
		}
	}
	f, err := os.Open(src.path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", 0, rung.Errorf(rung.ErrInvalid, "layer file %s is not in the archive", filepath.Base(src.path))
	}
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	r, err := decompress(bufio.NewReaderSize(f, 1<<20), src.mediaType)
	if err != nil {
		return "", 0, err
	}
	defer r.Close()
	digest, size, err := s.AddLayer(ctx, r)
	if err != nil {
		return "", 0, err
	}
	if diffID != "" && digest != diffID {
		return "", 0, rung.Errorf(rung.ErrInvalid, "layer unpacks to %s, but the image config says %s", digest, diffID)
	}
	s.log.DebugContext(ctx, "layer unpacked", "layer", digest, "duration", time.Since(start))
	return digest, size, nil
}

// imageConfig maps an image config onto the defaults a container gets.
func imageConfig(oc ociConfig) Config {
	cfg := defaultConfig()
	if len(oc.Config.Env) > 0 {
		// Like docker, keep a PATH when the image sets none.
		env := slices.Clip(oc.Config.Env)
		if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "PATH=") }) {
			env = append([]string{cfg.Env[0]}, env...) // the default PATH
		}
		cfg.Env = env
	}
	if wd := oc.Config.WorkingDir; strings.HasPrefix(wd, "/") {
		cfg.WorkingDir = path.Clean(wd)
	}
	// User is kept: commands run as the image's user, as under docker.
	// Entrypoint and Cmd are not: a sandbox's container runs the agent as
	// its init, and execs in /workspace by default
	// (docs/decisions/container.md).
	cfg.User = strings.TrimSpace(oc.Config.User)
	return cfg
}

// readJSON decodes the JSON file at p, which an error calls what.
func readJSON(p, what string, v any) error {
	b, err := readHead(p)
	if errors.Is(err, fs.ErrNotExist) {
		return rung.Errorf(rung.ErrInvalid, "%s is missing", what)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	return decodeJSON(b, what, v)
}

// readHead returns the file at p, cut after maxJSONBlob+1 bytes: enough
// for decodeJSON to tell it is too large.
func readHead(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxJSONBlob+1))
}

func decodeJSON(b []byte, what string, v any) error {
	if len(b) > maxJSONBlob {
		return rung.Errorf(rung.ErrInvalid, "%s is larger than %d MiB", what, maxJSONBlob>>20)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return rung.Errorf(rung.ErrInvalid, "%s is not valid JSON: %v", what, err)
	}
	return nil
}

// missingBlobError says an OCI layout lacks a blob it names.
type missingBlobError struct{ digest string }

func (e *missingBlobError) Error() string { return "blob " + e.digest + " is not in the layout" }
func (e *missingBlobError) Unwrap() error { return rung.ErrInvalid }

// blobFile returns the path of a blob in an OCI layout; digest must be
// valid (validDigest), so it cannot name a path outside blobs/sha256.
func blobFile(dir, digest string) string {
	return filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

// verifyBlob checks that the file p hashes to digest.
func verifyBlob(p, digest string) error {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &missingBlobError{digest}
	}
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if "sha256:"+hex.EncodeToString(h.Sum(nil)) != digest {
		return rung.Errorf(rung.ErrInvalid, "blob %s does not match its digest", digest)
	}
	return nil
}

// readBlobJSON decodes the JSON blob digest of the layout in dir after
// checking its content against the digest.
func readBlobJSON(dir, digest string, v any) error {
	if !validDigest(digest) {
		return rung.Errorf(rung.ErrInvalid, "unsupported blob digest %q", digest)
	}
	b, err := readHead(blobFile(dir, digest))
	if errors.Is(err, fs.ErrNotExist) {
		return &missingBlobError{digest}
	}
	if err != nil {
		return err
	}
	if sum := sha256.Sum256(b); "sha256:"+hex.EncodeToString(sum[:]) != digest {
		if len(b) > maxJSONBlob {
			return rung.Errorf(rung.ErrInvalid, "blob %s is larger than %d MiB", digest, maxJSONBlob>>20)
		}
		return rung.Errorf(rung.ErrInvalid, "blob %s does not match its digest", digest)
	}
	return decodeJSON(b, "blob "+digest, v)
}
