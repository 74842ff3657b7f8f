// Package image keeps the root filesystems containers start from: a store
// of content-addressed layers unpacked once into a layer cache, images
// that name an ordered list of layers and are pinned by digest, the
// built-in images (lite from busybox-static; base and debian by
// debootstrap), the accounts an image's /etc/passwd lists, and the
// allowlist that says which images a tenant may start.
package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"rung.dev/rung"
)

// Image is a named, digest-pinned root filesystem.
type Image struct {
	Name string `json:"name"`
	// Digest is "sha256:" + hex of the image's canonical description
	// (its layers and config). It never changes for a given image.
	Digest string `json:"digest"`
	// Layers are the layer digests ("sha256:" + hex of the uncompressed
	// layer tar), bottom first.
	Layers    []string  `json:"layers"`
	Config    Config    `json:"config"`
	SizeBytes int64     `json:"size_bytes"` // unpacked, all layers
	Created   time.Time `json:"created"`
}

// Config is what a container started from the image gets by default.
type Config struct {
	Env        []string `json:"env,omitempty"`
	WorkingDir string   `json:"working_dir,omitempty"`
	Shell      string   `json:"shell,omitempty"` // the shell execs run under; default /bin/sh
	// User is who a sandbox's commands run as unless the sandbox or the
	// exec names another: a name or uid of the image's /etc/passwd,
	// optionally ":group" (an OCI image's User). "" is root.
	User string `json:"user,omitempty"`
}

// Ref returns "name@sha256:…", the pinned reference.
func (im Image) Ref() string { return im.Name + "@" + im.Digest }

// ShortDigest returns the digest cut to "sha256:" and 12 hex digits, for
// people to read; refer to images by the full digest.
func (im Image) ShortDigest() string {
	if len(im.Digest) > len("sha256:")+12 {
		return im.Digest[:len("sha256:")+12]
	}
	return im.Digest
}

// Version is one kept version of an image, as [Store.List] returns it.
// A store keeps every version until it is removed, so sandboxes pinned
// to an older one keep working after a rebuild.
type Version struct {
	Image
	// Current reports whether the bare name resolves to this version,
	// the newest kept.
	Current bool `json:"current"`
}

// digestOf computes an image's digest from its layers and config.
func digestOf(layers []string, cfg Config) string {
	b, _ := json.Marshal(struct {
		Layers []string `json:"layers"`
		Config Config   `json:"config"`
	}{layers, cfg})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParseRef splits "name" or "name@sha256:hex" and validates both parts.
func ParseRef(ref string) (name, digest string, err error) {
	name, digest, _ = strings.Cut(ref, "@")
	if !rung.ValidName(name) {
		return "", "", rung.Errorf(rung.ErrInvalid, "invalid image name %q", name)
	}
	if digest != "" && !validDigest(digest) {
		return "", "", rung.Errorf(rung.ErrInvalid, "invalid image digest %q (want sha256:<64 hex>)", digest)
	}
	return name, digest, nil
}

func validDigest(d string) bool {
	hexPart, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexPart) != 64 {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil && strings.ToLower(hexPart) == hexPart
}

// Allowlist says which pinned images each tenant may start. The zero
// value allows nothing.
type Allowlist struct {
	// Tenants maps a tenant to its allowed references, each
	// "name@sha256:…". The tenant "*" applies to every tenant.
	Tenants map[rung.TenantID][]string `json:"tenants"`
}

// Check returns nil when tenant may start im, and an error wrapping
// rung.ErrPermission otherwise (another image, or the same name pinned
// to another digest).
func (a Allowlist) Check(tenant rung.TenantID, im Image) error {
	sameName := false
	for _, t := range []rung.TenantID{tenant, "*"} {
		for _, ref := range a.Tenants[t] {
			name, digest, _ := strings.Cut(ref, "@")
			if name != im.Name {
				continue
			}
			if digest == im.Digest {
				return nil
			}
			sameName = true
		}
	}
	if sameName {
		return rung.Errorf(rung.ErrPermission, "image %s has digest %s, which the allowlist does not pin", im.Name, im.Digest)
	}
	return rung.Errorf(rung.ErrPermission, "image %s is not on this server's allowlist", im.Name)
}
