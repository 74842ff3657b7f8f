package egress

import (
	"crypto/x509"
	"testing"
)

// A CA saved with CertPEM and KeyPEM loads back and signs leaves the
// original's certificate verifies; a key of another CA does not load.
func TestLoadCA(t *testing.T) {
	ca, err := NewCA("sbx_a")
	if err != nil {
		t.Fatal(err)
	}
	key, err := ca.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	back, err := LoadCA(ca.CertPEM(), key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := back.Leaf("example.com")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "example.com"}); err != nil {
		t.Errorf("a leaf of the loaded CA does not verify under the original: %v", err)
	}
	other, _ := NewCA("sbx_b")
	otherKey, _ := other.KeyPEM()
	if _, err := LoadCA(ca.CertPEM(), otherKey); err == nil {
		t.Error("LoadCA took another CA's key")
	}
	if _, err := LoadCA([]byte("junk"), key); err == nil {
		t.Error("LoadCA took junk")
	}
}
