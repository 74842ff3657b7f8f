package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"rung.dev/rung"
)

// Import reads an image from path and stores it as name. path may be a
// root filesystem directory, an OCI image layout directory, or a tarball
// (optionally gzip-compressed) holding a root filesystem, an OCI image
// layout, or a `docker save` archive. The kind is detected from content.
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
		f, err := os.Open(path)
		if err != nil {
			return Image{}, err
		}
		defer f.Close()
		r, err := maybeGunzip(bufio.NewReader(f))
		if err != nil {
			return Image{}, fmt.Errorf("import %s: %w", name, err)
		}
		digest, size, err := s.AddLayer(ctx, r)
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

func maybeGunzip(r *bufio.Reader) (io.Reader, error) {
	magic, _ := r.Peek(2)
	if bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		return gzip.NewReader(r)
	}
	return r, nil
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
	r, err := maybeGunzip(bufio.NewReader(f))
	if err != nil {
		return "", err
	}
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
	r, err := maybeGunzip(bufio.NewReader(f))
	if err != nil {
		return err
	}
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
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarDir(ctx, dir, pw)) }() // ends when the tree is written or the reader fails
	digest, size, err := s.AddLayer(ctx, pr)
	pr.CloseWithError(err)
	if err != nil {
		return Image{}, fmt.Errorf("import %s: %w", name, err)
	}
	return s.Put(name, []string{digest}, defaultConfig(), size)
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

type ociDescriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
}

type ociManifest struct {
	Config ociDescriptor   `json:"config"`
	Layers []ociDescriptor `json:"layers"`
}

type ociConfig struct {
	Config struct {
		Env        []string `json:"Env"`
		WorkingDir string   `json:"WorkingDir"`
	} `json:"config"`
}

func (s *Store) importOCI(ctx context.Context, name, dir string) (Image, error) {
	var index struct {
		Manifests []ociDescriptor `json:"manifests"`
	}
	if err := readJSON(filepath.Join(dir, "index.json"), &index); err != nil {
		return Image{}, fmt.Errorf("import %s: index.json: %w", name, err)
	}
	if len(index.Manifests) == 0 {
		return Image{}, rung.Errorf(rung.ErrInvalid, "import %s: OCI index lists no manifest", name)
	}
	var m ociManifest
	if err := readBlobJSON(dir, index.Manifests[0].Digest, &m); err != nil {
		return Image{}, fmt.Errorf("import %s: manifest: %w", name, err)
	}
	var paths []string
	for _, l := range m.Layers {
		p, err := blobPath(dir, l.Digest)
		if err != nil {
			return Image{}, fmt.Errorf("import %s: %w", name, err)
		}
		paths = append(paths, p)
	}
	var cfg ociConfig
	readBlobJSON(dir, m.Config.Digest, &cfg) // a missing config gives defaults
	return s.importLayers(ctx, name, paths, cfg)
}

func (s *Store) importDocker(ctx context.Context, name, dir string) (Image, error) {
	var manifest []struct {
		Config string   `json:"Config"`
		Layers []string `json:"Layers"`
	}
	if err := readJSON(filepath.Join(dir, "manifest.json"), &manifest); err != nil {
		return Image{}, fmt.Errorf("import %s: manifest.json: %w", name, err)
	}
	if len(manifest) == 0 {
		return Image{}, rung.Errorf(rung.ErrInvalid, "import %s: docker archive holds no image", name)
	}
	var paths []string
	for _, l := range manifest[0].Layers {
		rel, err := cleanName(l)
		if err != nil || rel == "" {
			return Image{}, rung.Errorf(rung.ErrInvalid, "import %s: bad layer path %q", name, l)
		}
		paths = append(paths, filepath.Join(dir, rel))
	}
	var cfg ociConfig
	if rel, err := cleanName(manifest[0].Config); err == nil && rel != "" {
		readJSON(filepath.Join(dir, rel), &cfg)
	}
	return s.importLayers(ctx, name, paths, cfg)
}

func (s *Store) importLayers(ctx context.Context, name string, paths []string, oc ociConfig) (Image, error) {
	var layers []string
	var total int64
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return Image{}, fmt.Errorf("import %s: layer: %w", name, err)
		}
		r, err := maybeGunzip(bufio.NewReader(f))
		if err != nil {
			f.Close()
			return Image{}, fmt.Errorf("import %s: layer: %w", name, err)
		}
		digest, size, err := s.AddLayer(ctx, r)
		f.Close()
		if err != nil {
			return Image{}, fmt.Errorf("import %s: %w", name, err)
		}
		layers, total = append(layers, digest), total+size
	}
	cfg := defaultConfig()
	if len(oc.Config.Env) > 0 {
		cfg.Env = oc.Config.Env
	}
	return s.Put(name, layers, cfg, total)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// blobPath returns the path of a blob in an OCI layout after checking its
// content against its digest.
func blobPath(dir, digest string) (string, error) {
	if !validDigest(digest) {
		return "", rung.Errorf(rung.ErrInvalid, "unsupported blob digest %q", digest)
	}
	p := filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	if "sha256:"+hex.EncodeToString(h.Sum(nil)) != digest {
		return "", rung.Errorf(rung.ErrInvalid, "blob %s does not match its digest", digest)
	}
	return p, nil
}

func readBlobJSON(dir, digest string, v any) error {
	p, err := blobPath(dir, digest)
	if err != nil {
		return err
	}
	if err := readJSON(p, v); err != nil {
		return errors.Join(rung.ErrInvalid, err)
	}
	return nil
}
