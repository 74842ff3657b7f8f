package egress

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// helloConn records what a TLS client writes and fails its reads, so that
// a handshake stops after the ClientHello.
type helloConn struct {
	net.Conn
	buf bytes.Buffer
}

func (c *helloConn) Write(b []byte) (int, error)      { return c.buf.Write(b) }
func (c *helloConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (c *helloConn) Close() error                     { return nil }
func (c *helloConn) SetDeadline(time.Time) error      { return nil }
func (c *helloConn) SetReadDeadline(time.Time) error  { return nil }
func (c *helloConn) SetWriteDeadline(time.Time) error { return nil }

// clientHello returns the bytes a Go TLS client sends first.
func clientHello(t *testing.T, name string) []byte {
	t.Helper()
	c := &helloConn{}
	tls.Client(c, &tls.Config{ServerName: name, InsecureSkipVerify: name == "", NextProtos: []string{"h2", "http/1.1"}}).Handshake()
	if c.buf.Len() == 0 {
		t.Fatal("no ClientHello written")
	}
	return c.buf.Bytes()
}

// splitRecords re-frames a one-record ClientHello as two records.
func splitRecords(rec []byte) []byte {
	body := rec[5:]
	half := len(body) / 2
	var out []byte
	for _, part := range [][]byte{body[:half], body[half:]} {
		hdr := []byte{0x16, 3, 1, 0, 0}
		binary.BigEndian.PutUint16(hdr[3:], uint16(len(part)))
		out = append(append(out, hdr...), part...)
	}
	return out
}

func TestClassify(t *testing.T) {
	t.Parallel()
	hello := clientHello(t, "registry.npmjs.org")
	noSNI := clientHello(t, "")
	tests := []struct {
		name string
		in   []byte
		kind kind
		sni  string
	}{
		{"client hello", hello, kindTLS, "registry.npmjs.org"},
		{"hello in two records", splitRecords(hello), kindTLS, "registry.npmjs.org"},
		{"hello without SNI", noSNI, kindTLS, ""},
		{"hello cut short", hello[:len(hello)-10], kindUnknown, ""},
		{"record header only", hello[:3], kindUnknown, ""},
		{"not a hello", []byte{0x16, 3, 1, 0, 4, 2, 0, 0, 0}, kindRaw, ""},
		{"GET", []byte("GET /x HTTP/1.1\r\nHost: a\r\n\r\n"), kindHTTP, ""},
		{"POST 1.0", []byte("POST /x HTTP/1.0\n"), kindHTTP, ""},
		{"absolute form", []byte("GET http://a/x HTTP/1.1\r\n"), kindHTTP, ""},
		{"method so far", []byte("GE"), kindUnknown, ""},
		{"line so far", []byte("GET /very/long"), kindUnknown, ""},
		{"h2 prior knowledge", []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), kindRaw, ""},
		{"irc", []byte("NICK rung\r\n"), kindRaw, ""},
		{"ssh", []byte("SSH-2.0-OpenSSH_9.6\r\n"), kindRaw, ""},
		{"binary", []byte{0, 1, 2, 3}, kindRaw, ""},
		{"lower case", []byte("get / HTTP/1.1\r\n"), kindRaw, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := classify(tc.in)
			if s.kind != tc.kind || s.sni != tc.sni {
				t.Errorf("classify = %v %q, want %v %q", s.kind, s.sni, tc.kind, tc.sni)
			}
		})
	}
}

func TestSniffConn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		write []string // written one after another
		close bool     // then half-close
		kind  kind
	}{
		{"tls in pieces", []string{string(clientHello(t, "a.example")[:7]), string(clientHello(t, "a.example")[7:])}, false, kindTLS},
		{"http in pieces", []string{"GE", "T / HTTP/1.1\r\n"}, false, kindHTTP},
		{"silent", nil, false, kindRaw},
		{"method then close", []string{"POST /upload"}, true, kindHTTP},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, server := tcpPair(t)
			go func() {
				for _, w := range tc.write {
					io.WriteString(client, w)
				}
				if tc.close {
					client.(*net.TCPConn).CloseWrite()
				}
			}()
			// A short first wait only for the silent case: it ends in a
			// timeout whatever the machine's speed.
			first := waitTimeout
			if tc.write == nil {
				first = time.Millisecond
			}
			s := sniff(server, first, waitTimeout)
			if s.kind != tc.kind {
				t.Errorf("sniff = %v, want %v", s.kind, tc.kind)
			}
			if got, want := string(s.prefix), strings.Join(tc.write, ""); got != want && tc.kind != kindTLS {
				t.Errorf("prefix %q, want %q", got, want)
			}
		})
	}
}

func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		s.Close()
	})
	return c, s
}

func TestCA(t *testing.T) {
	t.Parallel()
	a, err := NewCA("sbx_a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewCA("sbx_b")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.CertPEM(), b.CertPEM()) || a.key.Equal(b.key) {
		t.Fatal("two sandboxes share a CA")
	}
	if a.cert.PublicKeyAlgorithm != x509.ECDSA || !a.cert.IsCA || !a.cert.MaxPathLenZero {
		t.Errorf("CA certificate: %v IsCA=%v", a.cert.PublicKeyAlgorithm, a.cert.IsCA)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(a.CertPEM()) {
		t.Fatal("CertPEM does not parse")
	}
	for _, host := range []string{"api.github.com", "203.0.113.7"} {
		leaf, err := a.Leaf(host)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool}); err != nil {
			t.Errorf("leaf for %s: %v", host, err)
		}
		again, _ := a.Leaf(strings.ToUpper(host))
		if again != leaf {
			t.Errorf("leaf for %s minted twice", host)
		}
	}
	other := x509.NewCertPool()
	other.AppendCertsFromPEM(b.CertPEM())
	leaf, _ := a.Leaf("api.github.com")
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "api.github.com", Roots: other}); err == nil {
		t.Error("another sandbox's CA trusts this one's leaf")
	}
	// A leaf near its end is minted again.
	a.now = func() time.Time { return time.Now().Add(leafLifetime - time.Hour) }
	if fresh, _ := a.Leaf("api.github.com"); fresh == leaf {
		t.Error("a leaf near its end was not renewed")
	}
}

func TestMaskReader(t *testing.T) {
	t.Parallel()
	values := []string{"s3cret", "tok"}
	in := "a s3cret and tok, s3s3cret tokto" + strings.Repeat("x", 100) + "s3cret"
	want := in
	for _, v := range values {
		want = strings.ReplaceAll(want, v, strings.Repeat("*", len(v)))
	}
	for name, wrap := range map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"half":     iotest.HalfReader,
		"data+EOF": iotest.DataErrReader,
	} {
		m := newMaskReader(io.NopCloser(wrap(strings.NewReader(in))), values)
		got, err := io.ReadAll(iotest.OneByteReader(m))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	// An error other than EOF comes through after the data.
	m := newMaskReader(io.NopCloser(iotest.TimeoutReader(strings.NewReader("abc"))), values)
	if _, err := io.ReadAll(m); !errors.Is(err, iotest.ErrTimeout) {
		t.Errorf("error %v, want the reader's", err)
	}
}

func TestSecretRedacted(t *testing.T) {
	t.Parallel()
	s := Secret{Name: "TOKEN", Value: "v4lue"}
	for _, got := range []string{s.String(), s.GoString(), s.LogValue().String()} {
		if strings.Contains(got, "v4lue") {
			t.Errorf("%q shows the value", got)
		}
	}
}

func TestAddrGuard(t *testing.T) {
	t.Parallel()
	g := newAddrGuard(nil)
	for addr, refused := range map[string]bool{
		"127.0.0.1": true, "169.254.169.254": true, "10.0.0.1": true, "172.16.0.1": true, "172.32.0.1": false,
		"192.168.1.1": true, "100.64.0.1": true, "0.0.0.0": true, "224.0.0.1": true, "255.255.255.255": true,
		"::1": true, "::": true, "fe80::1": true, "fd00::1": true, "::ffff:127.0.0.1": true,
		"64:ff9b::a00:1": true, "2002:7f00:1::": true, "2002:cb00:7101::": false,
		"203.0.113.1": false, "2001:db8::1": false, "8.8.8.8": false,
	} {
		a := mustAddr(t, addr)
		if got := g.refusal(a) != ""; got != refused {
			t.Errorf("refusal(%s) = %q, want refused %v", addr, g.refusal(a), refused)
		}
	}
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
