package image

// Reading OCI image layouts: the index, nested indexes and docker manifest
// lists down to the image for this host's platform.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"rung.dev/rung"
)

// Media types that decide how a descriptor is read. Layouts written by
// hand often omit mediaType; the blob's own fields decide then.
const (
	mediaOCIIndex     = "application/vnd.oci.image.index.v1+json"
	mediaDockerList   = "application/vnd.docker.distribution.manifest.list.v2+json"
	mediaOCIConfig    = "application/vnd.oci.image.config.v1+json"
	mediaDockerConfig = "application/vnd.docker.container.image.v1+json"
)

// maxJSONBlob bounds the index, manifest and config blobs read into
// memory. Registries cap manifests at 4 MiB; configs with long histories
// are larger but far below this.
const maxJSONBlob = 16 << 20

// An index nests at most maxIndexDepth deep and lists at most
// maxDescriptors manifests in all. Real layouts nest once (index.json
// names a multi-platform index) and list a few dozen.
const (
	maxIndexDepth  = 4
	maxDescriptors = 4096
)

type ociPlatform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant,omitempty"`
}

func (p ociPlatform) String() string {
	if p.Variant != "" {
		return p.OS + "/" + p.Architecture + "/" + p.Variant
	}
	return p.OS + "/" + p.Architecture
}

// matchesHost reports whether p runs here. The variant is ignored: amd64
// variants (v2, v3) are CPU levels any amd64 image index also offers as
// plain amd64, and arm64 has only v8.
func (p ociPlatform) matchesHost() bool {
	return p.OS == runtime.GOOS && p.Architecture == runtime.GOARCH
}

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Platform    *ociPlatform      `json:"platform"`
	Annotations map[string]string `json:"annotations"`
}

// isAttestation reports a BuildKit attestation (provenance, SBOM): a
// manifest listed next to the images, which has no root filesystem.
func (d ociDescriptor) isAttestation() bool {
	if d.Annotations["vnd.docker.reference.type"] == "attestation-manifest" {
		return true
	}
	return d.Platform != nil && d.Platform.OS == "unknown" && d.Platform.Architecture == "unknown"
}

// ociBlob decodes an OCI image index, a docker manifest list or an image
// manifest (OCI or docker schema 2): the fields do not overlap.
type ociBlob struct {
	MediaType string          `json:"mediaType"`
	Manifests []ociDescriptor `json:"manifests"`
	Config    ociDescriptor   `json:"config"`
	Layers    []ociDescriptor `json:"layers"`
}

func (b ociBlob) isIndex(d ociDescriptor) bool {
	for _, mt := range []string{d.MediaType, b.MediaType} {
		if mt == mediaOCIIndex || mt == mediaDockerList {
			return true
		}
	}
	return b.Manifests != nil && b.Layers == nil && b.Config.Digest == ""
}

// ociConfig is the part of an OCI (or docker) image config that import
// uses.
type ociConfig struct {
	ociPlatform
	Config struct {
		Env        []string `json:"Env"`
		WorkingDir string   `json:"WorkingDir"`
		User       string   `json:"User"`
		Entrypoint []string `json:"Entrypoint"`
		Cmd        []string `json:"Cmd"`
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

func (s *Store) importOCI(ctx context.Context, name, dir string) (Image, error) {
	var index ociBlob
	if err := readJSON(filepath.Join(dir, "index.json"), "index.json", &index); err != nil {
		return Image{}, fmt.Errorf("import %s: %w", name, err)
	}
	if len(index.Manifests) == 0 {
		return Image{}, rung.Errorf(rung.ErrInvalid, "import %s: OCI index lists no manifest", name)
	}
	m, cfg, err := selectImage(dir, index.Manifests)
	if err != nil {
		return Image{}, fmt.Errorf("import %s: %w", name, err)
	}
	srcs := make([]layerSource, len(m.Layers))
	for i, l := range m.Layers {
		if !validDigest(l.Digest) {
			return Image{}, rung.Errorf(rung.ErrInvalid, "import %s: unsupported layer digest %q", name, l.Digest)
		}
		if strings.Contains(l.MediaType, "+encrypted") {
			return Image{}, rung.Errorf(rung.ErrInvalid, "import %s: layer %s is encrypted (%s), which import does not support", name, l.Digest, l.MediaType)
		}
		srcs[i] = layerSource{path: blobFile(dir, l.Digest), digest: l.Digest, mediaType: l.MediaType}
	}
	return s.importLayers(ctx, name, srcs, cfg)
}

// imageCandidate is an image manifest found under an index.
type imageCandidate struct {
	desc     ociDescriptor
	manifest ociBlob
}

// selectImage finds the image for this host's platform under the index
// entries descs, following nested indexes, and returns its manifest and
// config. Attestations, artifacts and entries whose blobs are not in the
// layout (a `docker save` of one platform keeps the full index) are
// skipped; when nothing fits, the error lists what the layout offers.
func selectImage(dir string, descs []ociDescriptor) (ociBlob, ociConfig, error) {
	w := indexWalk{dir: dir}
	if err := w.walk(descs, 0); err != nil {
		return ociBlob{}, ociConfig{}, err
	}
	// A descriptor that names this platform beats one that names none
	// (hand-made layouts), whose config is checked instead.
	slices.SortStableFunc(w.found, func(a, b imageCandidate) int {
		return cmpBool(a.desc.Platform == nil, b.desc.Platform == nil)
	})
	for _, c := range w.found {
		var cfg ociConfig
		if c.manifest.Config.Digest != "" {
			if err := readBlobJSON(dir, c.manifest.Config.Digest, &cfg); err != nil {
				return ociBlob{}, ociConfig{}, fmt.Errorf("image config: %w", err)
			}
		}
		if c.desc.Platform == nil && cfg.Architecture != "" && !cfg.matchesHost() {
			w.seen = append(w.seen, cfg.ociPlatform.String())
			continue
		}
		return c.manifest, cfg, nil
	}
	seen := "nothing"
	if len(w.seen) > 0 {
		seen = strings.Join(w.seen, ", ")
	}
	return ociBlob{}, ociConfig{}, rung.Errorf(rung.ErrInvalid, "OCI layout has no image for %s/%s (found %s)", runtime.GOOS, runtime.GOARCH, seen)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// indexWalk collects the image manifests under an index.
type indexWalk struct {
	dir   string
	n     int              // descriptors visited, bounded by maxDescriptors
	found []imageCandidate // manifests that may fit this host, in index order
	seen  []string         // what was passed over, for the error
}

func (w *indexWalk) walk(descs []ociDescriptor, depth int) error {
	if depth > maxIndexDepth {
		return rung.Errorf(rung.ErrInvalid, "OCI indexes nest deeper than %d", maxIndexDepth)
	}
	for _, d := range descs {
		if w.n++; w.n > maxDescriptors {
			return rung.Errorf(rung.ErrInvalid, "OCI indexes list more than %d manifests", maxDescriptors)
		}
		if d.isAttestation() {
			continue
		}
		if d.Platform != nil && !d.Platform.matchesHost() {
			w.seen = append(w.seen, d.Platform.String())
			continue
		}
		var b ociBlob
		err := readBlobJSON(w.dir, d.Digest, &b)
		if _, missing := errors.AsType[*missingBlobError](err); missing {
			w.seen = append(w.seen, describe(d)+" (blob not in the layout)")
			continue
		}
		if err != nil {
			return fmt.Errorf("manifest: %w", err)
		}
		if b.isIndex(d) {
			if err := w.walk(b.Manifests, depth+1); err != nil {
				return err
			}
			continue
		}
		if mt := b.Config.MediaType; mt != "" && mt != mediaOCIConfig && mt != mediaDockerConfig {
			w.seen = append(w.seen, describe(d)+" (artifact "+mt+")")
			continue
		}
		w.found = append(w.found, imageCandidate{desc: d, manifest: b})
	}
	return nil
}

// describe names a descriptor in an error: its platform, else its digest.
func describe(d ociDescriptor) string {
	if d.Platform != nil {
		return d.Platform.String()
	}
	return d.Digest
}
