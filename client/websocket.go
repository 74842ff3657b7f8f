package client

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// wsConn is the client side of a WebSocket (RFC 6455), as much of it as
// the exec WebSocket needs: text messages each way, close, ping. It is
// here because the SDK imports only the standard library. Reads are for
// one goroutine; writes are safe for concurrent use.
type wsConn struct {
	rw io.ReadWriteCloser
	br *bufio.Reader

	wmu sync.Mutex // guards writes to rw
}

// wsGUID is RFC 6455's fixed key suffix (section 1.3).
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// maxWSMessage bounds a message the server sends (a frame carries at
// most 64 KiB of output; the exit frame holds no output on a stream).
const maxWSMessage = 16 << 20

// dialWS opens a WebSocket to path. An HTTP error answer (no upgrade) is
// the API's *Error.
func (c *Client) dialWS(ctx context.Context, path string) (*wsConn, error) {
	var nonce [16]byte
	rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req, err := c.newRequest(ctx, http.MethodGet, path, nil, nil, "")
	if err != nil {
		return nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", key)
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	rw, ok := resp.Body.(io.ReadWriteCloser)
	if resp.StatusCode != http.StatusSwitchingProtocols || !ok || resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: no WebSocket upgrade (HTTP %d)", path, resp.StatusCode)
	}
	return &wsConn{rw: rw, br: bufio.NewReader(rw)}, nil
}

// The opcodes used (RFC 6455 section 5.2).
const (
	wsContinuation = 0x0
	wsText         = 0x1
	wsBinary       = 0x2
	wsClose        = 0x8
	wsPing         = 0x9
	wsPong         = 0xA
)

// writeFrame sends one final frame, masked as a client must.
func (w *wsConn) writeFrame(op byte, payload []byte) error {
	hdr := make([]byte, 0, 14)
	hdr = append(hdr, 0x80|op)
	switch n := len(payload); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xFFFF:
		hdr = append(hdr, 0x80|126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	var mask [4]byte
	rand.Read(mask[:])
	hdr = append(hdr, mask[:]...)
	buf := make([]byte, len(hdr)+len(payload))
	copy(buf, hdr)
	for i, b := range payload {
		buf[len(hdr)+i] = b ^ mask[i%4]
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	_, err := w.rw.Write(buf)
	return err
}

// writeText sends one text message.
func (w *wsConn) writeText(b []byte) error { return w.writeFrame(wsText, b) }

// errWSClosed is the server's close frame.
var errWSClosed = errors.New("websocket closed")

// readMessage returns the next text or binary message, answering pings
// on the way; a close frame is errWSClosed.
func (w *wsConn) readMessage() ([]byte, error) {
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.br, h[:]); err != nil {
			return nil, err
		}
		fin, op, masked := h[0]&0x80 != 0, h[0]&0x0F, h[1]&0x80 != 0
		n := uint64(h[1] & 0x7F)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(w.br, b[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(w.br, b[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		if n > maxWSMessage || uint64(len(msg))+n > maxWSMessage {
			return nil, fmt.Errorf("websocket message over %d bytes", maxWSMessage)
		}
		var mask [4]byte
		if masked {
			if _, err := io.ReadFull(w.br, mask[:]); err != nil {
				return nil, err
			}
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(w.br, payload); err != nil {
			return nil, err
		}
		if masked {
			for i := range payload {
				payload[i] ^= mask[i%4]
			}
		}
		switch op {
		case wsPing:
			if err := w.writeFrame(wsPong, payload); err != nil {
				return nil, err
			}
			continue
		case wsPong:
			continue
		case wsClose:
			w.writeFrame(wsClose, nil)
			return nil, errWSClosed
		case wsText, wsBinary, wsContinuation:
			msg = append(msg, payload...)
		default:
			return nil, fmt.Errorf("websocket opcode %#x", op)
		}
		if fin {
			return msg, nil
		}
	}
}

// Close closes the connection without a closing handshake.
func (w *wsConn) Close() error { return w.rw.Close() }
