package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/netip"
	"sync"
	"time"
)

// Certificate lifetimes. The CA outlives any sandbox; leaves are short and
// minted again well before they expire.
const (
	caLifetime    = 10 * 365 * 24 * time.Hour
	leafLifetime  = 7 * 24 * time.Hour
	leafRenew     = 24 * time.Hour // mint again when less than this is left
	backdate      = time.Hour      // tolerate a guest clock a little behind
	maxCachedLeaf = 1024
)

// CA is one sandbox's certificate authority for HTTPS interception: an
// ECDSA P-256 key made fresh by [NewCA], never shared between sandboxes;
// its private key never leaves the process. The container trusts
// [CA.CertPEM]. A CA is safe for concurrent use.
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	// leafKey is every leaf's key: minting then costs one signature.
	leafKey *ecdsa.PrivateKey
	now     func() time.Time

	mu     sync.Mutex // guards leaves
	leaves map[string]*tls.Certificate
}

// NewCA makes a certificate authority for the sandbox named name (its id,
// used in the certificate's subject).
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("new CA key: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("new leaf key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"rung"}, CommonName: "rung egress CA for " + name},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("new CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("new CA certificate: %w", err)
	}
	return &CA{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		leafKey: leafKey,
		now:     time.Now,
		leaves:  map[string]*tls.Certificate{},
	}, nil
}

// CertPEM returns the CA's certificate in PEM, for the container's trust
// store. The caller must not modify it.
func (ca *CA) CertPEM() []byte { return ca.certPEM }

// Certificate returns the CA's certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// String describes the CA without its key.
func (ca *CA) String() string { return ca.cert.Subject.CommonName }

// Leaf returns a certificate for host (a name, or an address literal),
// signed by the CA, minted on first use and cached until it is near its
// end.
func (ca *CA) Leaf(host string) (*tls.Certificate, error) {
	host = normalName(host)
	now := ca.now()
	ca.mu.Lock()
	c, ok := ca.leaves[host]
	ca.mu.Unlock()
	if ok && c.Leaf.NotAfter.Sub(now) > leafRenew {
		return c, nil
	}
	c, err := ca.mint(host, now)
	if err != nil {
		return nil, err
	}
	ca.mu.Lock()
	if len(ca.leaves) >= maxCachedLeaf {
		// Drop an arbitrary entry: a sandbox that talks to a thousand hosts
		// pays one signature (about 30µs) for the ones it comes back to.
		for k := range ca.leaves {
			delete(ca.leaves, k)
			break
		}
	}
	ca.leaves[host] = c
	ca.mu.Unlock()
	return c, nil
}

func (ca *CA) mint(host string, now time.Time) (*tls.Certificate, error) {
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(leafLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if tmpl.NotAfter.After(ca.cert.NotAfter) {
		tmpl.NotAfter = ca.cert.NotAfter
	}
	if a, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, a.AsSlice())
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("mint certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("mint certificate for %s: %w", host, err)
	}
	return &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: ca.leafKey, Leaf: leaf}, nil
}

// serial returns a random 128-bit serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		// crypto/rand does not fail on Linux (it blocks or panics itself).
		panic(err)
	}
	return n
}

// KeyPEM returns the CA's private key in PEM (PKCS #8), for the daemon to
// keep the CA across its own restarts (a container started under it goes
// on trusting it): the caller stores it where only the daemon reads it,
// never in a sandbox.
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// LoadCA is a CA from what [CA.CertPEM] and [CA.KeyPEM] returned. The key
// must be the certificate's, an ECDSA key, and the certificate a CA's.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("load CA: no PEM block")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("load CA: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("load CA: %w", err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok || !cert.IsCA || !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("load CA: the key is not the CA certificate's")
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("new leaf key: %w", err)
	}
	return &CA{cert: cert, key: key, certPEM: pem.EncodeToMemory(cb), leafKey: leafKey, now: time.Now,
		leaves: map[string]*tls.Certificate{}}, nil
}
