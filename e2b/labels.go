package e2b

import (
	"fmt"
	"strconv"
	"strings"
)

// E2B metadata keys are free-form ("sandboxTestId"); rung's label keys are
// 1 to 63 of [a-z0-9._-]. A metadata key is stored as the label
// metaPrefix + its escape: a byte of [a-z0-9.-] stays, any other becomes
// "_" and two hex digits, so the mapping is reversible and the keys rung's
// own API lists stay readable.
const (
	metaPrefix    = "m."
	templateLabel = "e2b.template" // the templateID a sandbox was created from
	// privateTrafficLabel marks a sandbox created with allowPublicTraffic
	// false: create and connect answer its traffic access token.
	privateTrafficLabel = "e2b.private-traffic"
)

func metaKey(k string) (string, error) {
	var b strings.Builder
	b.WriteString(metaPrefix)
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	if k == "" || b.Len() > 63 {
		return "", fmt.Errorf("metadata key %q: empty, or too long once escaped (at most 63 bytes)", clip(k))
	}
	return b.String(), nil
}

func unmetaKey(label string) (string, bool) {
	s, ok := strings.CutPrefix(label, metaPrefix)
	if !ok {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '_' {
			b.WriteByte(s[i])
			continue
		}
		if i+3 > len(s) {
			return "", false
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), true
}

// labelsOf returns the labels that store metadata md.
func labelsOf(md map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(md)+1)
	for k, v := range md {
		lk, err := metaKey(k)
		if err != nil {
			return nil, err
		}
		out[lk] = v
	}
	return out, nil
}

// metadataOf returns the metadata stored in labels.
func metadataOf(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if mk, ok := unmetaKey(k); ok {
			out[mk] = v
		}
	}
	return out
}
