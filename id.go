package rung

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

// Typed identifiers, so that a sandbox ID cannot be passed where a tenant
// ID is expected.
type (
	SandboxID  string // "sbx_" + 26 base32 characters, unguessable
	SnapshotID string // "snp_" + 26 base32 characters
	ExecID     string // "exe_" + 26 base32 characters
	TenantID   string // a tenant name chosen by an admin, see [ValidName]
	ProcessID  string // "prc_" + 26 base32 characters
	EffectKey  string // idempotency key of a declared external effect
)

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID returns prefix + 128 random bits in lowercase base32.
func newID(prefix string) string {
	var b [16]byte
	rand.Read(b[:]) // never fails on Linux (Go 1.24+ crashes instead)
	return prefix + idEncoding.EncodeToString(b[:])
}

// NewSandboxID returns a fresh, unguessable sandbox ID.
func NewSandboxID() SandboxID { return SandboxID(newID("sbx_")) }

// NewSnapshotID returns a fresh, unguessable snapshot ID.
func NewSnapshotID() SnapshotID { return SnapshotID(newID("snp_")) }

// NewExecID returns a fresh exec ID.
func NewExecID() ExecID { return ExecID(newID("exe_")) }

// NewProcessID returns a fresh process ID.
func NewProcessID() ProcessID { return ProcessID(newID("prc_")) }

// validID reports whether s is prefix followed by 26 base32 characters.
func validID(s, prefix string) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != 26 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// Valid reports whether id has the form NewSandboxID returns.
func (id SandboxID) Valid() bool { return validID(string(id), "sbx_") }

// Valid reports whether id has the form NewSnapshotID returns.
func (id SnapshotID) Valid() bool { return validID(string(id), "snp_") }

// Valid reports whether id has the form NewExecID returns.
func (id ExecID) Valid() bool { return validID(string(id), "exe_") }

// MaxNameLen is the longest sandbox, snapshot, tenant or image name.
const MaxNameLen = 63

// ValidName reports whether s may name a sandbox, snapshot, tenant or image:
// 1 to 63 characters of [a-z0-9._-], starting with a letter or digit. The
// rule keeps names safe in paths, URLs, labels and log lines.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '.' || c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// NewShareID returns a fresh, unguessable ID for a shared port URL.
func NewShareID() string { return newID("shr_") }

// ValidShareID reports whether s has the form NewShareID returns.
func ValidShareID(s string) bool { return validID(s, "shr_") }

// ValidSecretName reports whether s may name a secret: 1 to 64
// characters of [A-Za-z0-9_], not starting with a digit (the form of an
// environment variable's name, which is how agents' tools look for
// credentials).
func ValidSecretName(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
