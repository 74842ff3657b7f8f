package e2b

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"rung.dev/rung"
)

// A sandbox's envd access token (create's envdAccessToken) is
// accessPrefix, an HMAC of the tenant and the sandbox id under the
// server's key in hex, "_" and the tenant: it opens that sandbox's envd
// and no other, rung can recompute it (so it stores none), and it is
// what the SDK signs /files URLs with. X-Access-Token also takes the
// tenant's API key, for clients that send that.
const accessPrefix = "ea_"

// trafficPrefix starts every traffic access token (trafficToken), made
// the same way under its own purpose.
const trafficPrefix = "ta_"

// accessToken returns the envd access token of tenant's sandbox id.
func (s *Server) accessToken(tenant rung.TenantID, id rung.SandboxID) string {
	return s.sandboxMAC(accessPrefix, "", tenant, id)
}

// sandboxToken reports the tenant whose access token to sandbox id tok
// is, comparing in constant time.
func (s *Server) sandboxToken(tok, id string) (rung.TenantID, bool) {
	return s.macTenant(accessPrefix, "", tok, rung.SandboxID(id))
}

// trafficToken is sandbox id's traffic access token (E2B's
// trafficAccessToken, given to a sandbox created with allowPublicTraffic
// false): sent as the E2b-Traffic-Access-Token header, it opens the
// sandbox's ports on the preview hosts and the ports API. Like the
// access token, an HMAC of tenant and id, never stored; its own purpose
// keeps one from passing for the other.
func (s *Server) trafficToken(tenant rung.TenantID, id rung.SandboxID) string {
	return s.sandboxMAC(trafficPrefix, "traffic", tenant, id)
}

// TrafficTenant reports the tenant whose traffic access token to
// sandbox id tok is, comparing in constant time (api.Config's
// TrafficToken).
func (s *Server) TrafficTenant(tok string, id rung.SandboxID) (rung.TenantID, bool) {
	return s.macTenant(trafficPrefix, "traffic", tok, id)
}

// sandboxMAC is a token of tenant's sandbox id: prefix, the hex HMAC of
// purpose (when not "", then a zero byte), tenant, a zero byte and id
// under the tokens' key, "_" and the tenant. The envd access token has
// no purpose (its tokens predate the others and must stay valid).
func (s *Server) sandboxMAC(prefix, purpose string, tenant rung.TenantID, id rung.SandboxID) string {
	mac := hmac.New(sha256.New, s.tokenKey)
	if purpose != "" {
		mac.Write([]byte(purpose))
		mac.Write([]byte{0})
	}
	mac.Write([]byte(tenant))
	mac.Write([]byte{0})
	mac.Write([]byte(id))
	return prefix + hex.EncodeToString(mac.Sum(nil)) + "_" + string(tenant)
}

// macTenant reports the tenant whose sandboxMAC(prefix, purpose) token
// to sandbox id tok is, comparing in constant time.
func (s *Server) macTenant(prefix, purpose, tok string, id rung.SandboxID) (rung.TenantID, bool) {
	rest, ok := strings.CutPrefix(tok, prefix)
	if !ok || len(rest) < 66 || rest[64] != '_' || len(tok) > 256 {
		return "", false
	}
	tenant := rung.TenantID(rest[65:])
	want := s.sandboxMAC(prefix, purpose, tenant, id)
	return tenant, subtle.ConstantTimeCompare([]byte(want), []byte(tok)) == 1
}

// tokenKeyOf derives the access tokens' key from the server's key, so
// no other use of that key (sealing secrets, signing shares) can be made
// to produce one. Without a server key the tokens last as long as the
// process.
func tokenKeyOf(key []byte) []byte {
	if len(key) == 0 {
		key = make([]byte, 32)
		rand.Read(key)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("rung e2b envd access token v1"))
	return mac.Sum(nil)
}

// maxSigners bounds the sandboxes a signed URL is checked against.
const maxSigners = 100_000

// signerTable holds the sandboxes whose access tokens this server handed
// out (create, connect, fork) or saw used: a signed /files URL names no
// sandbox, so it is checked against each of theirs. After a restart a
// sandbox joins again at its client's next envd call or connect. It is
// safe for concurrent use.
type signerTable struct {
	mu sync.Mutex                       // guards m
	m  map[rung.SandboxID]rung.TenantID // at most maxSigners
}

func (t *signerTable) add(tenant rung.TenantID, id rung.SandboxID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[rung.SandboxID]rung.TenantID{}
	}
	if _, ok := t.m[id]; !ok && len(t.m) >= maxSigners {
		for k := range t.m { // forget one: its URLs work again after its next call
			delete(t.m, k)
			break
		}
	}
	t.m[id] = tenant
}

func (t *signerTable) remove(id rung.SandboxID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, id)
}

func (t *signerTable) all() map[rung.SandboxID]rung.TenantID {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[rung.SandboxID]rung.TenantID, len(t.m))
	for k, v := range t.m {
		out[k] = v
	}
	return out
}

// signature is the SDK's /files URL signature: "v1_" and the unpadded
// base64 of the SHA-256 of path:operation:user:token, with
// :expiration (Unix seconds) when it expires.
func signature(path, op, user, token, exp string) string {
	raw := path + ":" + op + ":" + user + ":" + token
	if exp != "" {
		raw += ":" + exp
	}
	sum := sha256.Sum256([]byte(raw))
	return "v1_" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// signedCaller authenticates a /files request by its URL's signature
// (signature, signature_expiration, path, username), for operation op
// ("read" or "write"): the sandbox is the one whose token signed it. A
// missing, wrong or expired signature is unauthenticated (401), with
// envd's messages: the SDK's tests compare the whole body.
func (s *Server) signedCaller(ctx context.Context, q url.Values, op string) (caller, error) {
	sig := q.Get("signature")
	if sig == "" {
		return caller{}, rung.Errorf(rung.ErrUnauthenticated, "missing signature query parameter")
	}
	exp := q.Get("signature_expiration")
	var expires int64
	if exp != "" {
		n, err := strconv.ParseInt(exp, 10, 64)
		if err != nil {
			return caller{}, rung.Errorf(rung.ErrUnauthenticated, "invalid signature_expiration")
		}
		expires = n
	}
	p, user := q.Get("path"), q.Get("username")
	var found caller
	ok := false
	for id, tenant := range s.signers.all() {
		want := signature(p, op, user, s.accessToken(tenant, id), exp)
		if subtle.ConstantTimeCompare([]byte(want), []byte(sig)) == 1 {
			found, ok = caller{tenant: tenant, sandbox: string(id)}, true
		}
	}
	if !ok {
		return caller{}, rung.Errorf(rung.ErrUnauthenticated, "invalid signature")
	}
	if exp != "" && time.Now().Unix() > expires {
		return caller{}, rung.Errorf(rung.ErrUnauthenticated, "signature is already expired")
	}
	sb, err := s.ctrl.Get(ctx, found.tenant, found.sandbox)
	if err != nil {
		s.signers.remove(rung.SandboxID(found.sandbox))
		return caller{}, err
	}
	if paused(sb) {
		return caller{}, rung.Errorf(rung.ErrUnavailable, "sandbox %s is paused: connect to it to resume it", sb.ID)
	}
	return found, nil
}
