package egress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"time"
)

// kind is what a connection's first bytes say it is.
type kind int

const (
	kindUnknown kind = iota // need more bytes
	kindRaw
	kindTLS
	kindHTTP
)

func (k kind) String() string {
	switch k {
	case kindTLS:
		return "tls"
	case kindHTTP:
		return "http"
	case kindRaw:
		return "tcp"
	}
	return "unknown"
}

// maxPeek bounds what the proxy reads before it decides: a ClientHello
// (usually under 2 KiB, even with post-quantum key shares) or an HTTP
// request line.
const maxPeek = 16 << 10

// sniffed is what sniff learnt.
type sniffed struct {
	kind   kind
	sni    string // TLS: the server name, "" for none
	prefix []byte // the bytes read, to be replayed to whoever handles the connection
}

// sniff reads the first bytes of c: it waits up to first for the first
// byte (a server-first protocol sends nothing: then it is raw TCP) and up
// to rest for the remainder of a ClientHello or a request line. It leaves
// c with no deadline.
func sniff(c net.Conn, first, rest time.Duration) sniffed {
	buf := make([]byte, 0, 2048)
	c.SetReadDeadline(time.Now().Add(first))
	defer c.SetReadDeadline(time.Time{})
	for {
		s := classify(buf)
		if s.kind != kindUnknown {
			return s
		}
		if len(buf) == maxPeek {
			break
		}
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*cap(buf), maxPeek))
			copy(grown, buf)
			buf = grown
		}
		n, err := c.Read(buf[len(buf):cap(buf)])
		if len(buf) == 0 && n > 0 {
			c.SetReadDeadline(time.Now().Add(rest))
		}
		buf = buf[:len(buf)+n]
		if err != nil {
			break
		}
	}
	// Out of time, bytes or stream: decide on what there is.
	return classifyPartial(buf)
}

// classify decides what buf starts with, kindUnknown when it needs more.
func classify(buf []byte) sniffed {
	s := sniffed{prefix: buf}
	switch {
	case len(buf) == 0:
		return s
	case buf[0] == 0x16: // TLS handshake record
		if len(buf) < 2 {
			return s
		}
		if buf[1] != 3 {
			s.kind = kindRaw
			return s
		}
		sni, complete, err := parseClientHello(buf)
		switch {
		case err != nil:
			s.kind = kindRaw
		case complete:
			s.kind, s.sni = kindTLS, sni
		}
		return s
	}
	s.kind = httpLine(buf)
	return s
}

// classifyPartial decides on bytes that will not grow: an HTTP method
// without a whole line is still HTTP; anything else undecided is raw.
func classifyPartial(buf []byte) sniffed {
	s := classify(buf)
	if s.kind == kindUnknown {
		s.kind = kindRaw
		if sp := bytes.IndexByte(buf, ' '); sp > 0 && isMethod(buf[:sp]) && !bytes.HasPrefix(buf, []byte("PRI ")) {
			s.kind = kindHTTP
		}
	}
	return s
}

// httpLine looks for an HTTP/1.x request line: METHOD SP target SP
// HTTP/1.x CRLF. HTTP/2 with prior knowledge ("PRI * HTTP/2.0") is raw.
func httpLine(buf []byte) kind {
	sp := bytes.IndexByte(buf, ' ')
	if sp < 0 {
		if len(buf) < 16 && isMethod(buf) {
			return kindUnknown
		}
		return kindRaw
	}
	if !isMethod(buf[:sp]) {
		return kindRaw
	}
	nl := bytes.IndexByte(buf, '\n')
	if nl < 0 {
		return kindUnknown
	}
	line := bytes.TrimSuffix(buf[:nl], []byte("\r"))
	last := bytes.LastIndexByte(line, ' ')
	if last <= sp {
		return kindRaw
	}
	switch string(line[last+1:]) {
	case "HTTP/1.1", "HTTP/1.0":
		return kindHTTP
	}
	return kindRaw
}

// isMethod reports whether b is an upper-case method name (1-15 letters;
// so far, for a prefix).
func isMethod(b []byte) bool {
	if len(b) == 0 || len(b) > 15 {
		return false
	}
	for _, c := range b {
		if (c < 'A' || c > 'Z') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

var errNotHello = errors.New("not a TLS ClientHello")

// parseClientHello parses the TLS records at the start of buf for a
// ClientHello, which may span records. It returns the server name ("" for
// none), whether the message is complete in buf, and errNotHello for bytes
// that are not one.
func parseClientHello(buf []byte) (sni string, complete bool, err error) {
	var msg []byte
	for off := 0; ; {
		if len(buf)-off < 5 {
			return "", false, nil
		}
		if buf[off] != 0x16 || buf[off+1] != 3 {
			return "", false, errNotHello
		}
		n := int(binary.BigEndian.Uint16(buf[off+3:]))
		if n == 0 || n > 1<<14 {
			return "", false, errNotHello
		}
		if len(buf)-off-5 < n {
			return "", false, nil
		}
		msg = append(msg, buf[off+5:off+5+n]...)
		off += 5 + n
		if len(msg) < 4 {
			continue
		}
		if msg[0] != 1 { // client_hello
			return "", false, errNotHello
		}
		size := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
		if size > maxPeek {
			return "", false, errNotHello
		}
		if len(msg)-4 >= size {
			sni, err := helloSNI(msg[4 : 4+size])
			return sni, true, err
		}
	}
}

// helloSNI finds the host_name in a ClientHello body's server_name
// extension (RFC 8446 4.1.2, RFC 6066 3).
func helloSNI(b []byte) (string, error) {
	r := reader(b)
	if !r.skip(2+32) || !r.skipVec(1) || !r.skipVec(2) || !r.skipVec(1) {
		return "", errNotHello
	}
	if len(r) == 0 {
		return "", nil // no extensions
	}
	exts, ok := r.vec(2)
	if !ok {
		return "", errNotHello
	}
	for len(exts) > 0 {
		typ, ok1 := exts.u16()
		data, ok2 := exts.vec(2)
		if !ok1 || !ok2 {
			return "", errNotHello
		}
		if typ != 0 { // server_name
			continue
		}
		list, ok := data.vec(2)
		if !ok {
			return "", errNotHello
		}
		for len(list) > 0 {
			nameType, ok1 := list.u8()
			name, ok2 := list.vec(2)
			if !ok1 || !ok2 {
				return "", errNotHello
			}
			if nameType == 0 {
				return string(name), nil
			}
		}
		return "", nil
	}
	return "", nil
}

// reader reads big-endian fields and length-prefixed vectors.
type reader []byte

func (r *reader) skip(n int) bool {
	if len(*r) < n {
		return false
	}
	*r = (*r)[n:]
	return true
}

func (r *reader) u8() (byte, bool) {
	if len(*r) < 1 {
		return 0, false
	}
	v := (*r)[0]
	*r = (*r)[1:]
	return v, true
}

func (r *reader) u16() (uint16, bool) {
	if len(*r) < 2 {
		return 0, false
	}
	v := binary.BigEndian.Uint16(*r)
	*r = (*r)[2:]
	return v, true
}

// vec reads a vector with an n-byte (1 or 2) length.
func (r *reader) vec(n int) (reader, bool) {
	var l int
	switch n {
	case 1:
		v, ok := r.u8()
		if !ok {
			return nil, false
		}
		l = int(v)
	default:
		v, ok := r.u16()
		if !ok {
			return nil, false
		}
		l = int(v)
	}
	if len(*r) < l {
		return nil, false
	}
	v := (*r)[:l]
	*r = (*r)[l:]
	return v, true
}

func (r *reader) skipVec(n int) bool {
	_, ok := r.vec(n)
	return ok
}
