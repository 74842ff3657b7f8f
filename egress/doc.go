// Package egress enforces one sandbox's network egress policy: a
// transparent TCP proxy and a DNS server that the daemon serves on that
// sandbox's host-side address, to which package network redirects every
// TCP connection and DNS query the sandbox makes in egress mode.
//
// # What the proxy sees
//
// The proxy takes each connection's original destination from the kernel
// (SO_ORIGINAL_DST, see [OriginalDst]) and peeks at its first bytes:
//
//   - A TLS ClientHello is matched on its server name (SNI). When nothing
//     needs to look inside (no header rule or secret bound to the host, no
//     method or path rule for it, and the policy allows it) the bytes are
//     spliced to the SNI name as the daemon resolves it, never to the
//     address the sandbox dialed. Otherwise the proxy terminates TLS with a
//     certificate from the sandbox's own [CA], checks that each request's
//     Host is the SNI name, and proxies HTTP requests as below.
//   - Plain HTTP/1.x is reverse proxied request by request, each checked
//     on its Host, method and path, with keep-alive on both sides and
//     protocol upgrades (WebSocket) passed through.
//   - Anything else (including TLS without SNI, HTTP/2 with prior
//     knowledge, and protocols whose server speaks first, which send
//     nothing within [Config.PeekTimeout]) is raw TCP, matched on the
//     address, the port and the name the sandbox last looked up for that
//     address through the proxy's DNS server.
//
// Every address the proxy dials is checked after resolution (so a name
// that resolves to 127.0.0.1 is refused: no DNS rebinding): loopback,
// link-local (cloud metadata), private, shared (100.64/10), unique-local,
// multicast and unspecified addresses, the host's own addresses and
// [Config.Forbidden] are refused unless an allow rule names a CIDR that
// contains the address.
//
// The port is always the original destination's (a Host header's port is
// not used). HTTP requests are decided one by one under the policy in
// force when each arrives, so [Proxy.SetPolicy] reaches kept-alive
// connections at their next request; raw TCP and passed-through TLS
// connections finish under the policy they started with.
//
// # Denials
//
// A denied HTTP request (plain or intercepted) gets a 403 whose body says
// what was denied and what is allowed, for example
//
//	rung: egress to example.com denied by policy; allowed: api.github.com, *.npmjs.org
//
// with the header X-Rung-Egress: denied. A denied TLS connection is
// intercepted so that the 403 can be read; a client that does not trust the
// sandbox's CA sees a certificate error instead. A denied raw TCP
// connection is reset at once. Limits give 429 (HTTP) or a reset.
//
// # DNS
//
// The DNS server answers A and AAAA for names the policy could allow,
// resolving them with [Config.Resolver] and recording each address's name
// for raw TCP matching; a denied name gets NXDOMAIN (with an Extended DNS
// Error, "Blocked", when the query has EDNS). See [Config.DNSConn].
//
// # Credentials
//
// [rung.HeaderRule] values and secret placeholders are filled from a
// [SecretSource] on requests to the secret's bound hosts only, in headers
// and the URL; bodies are never rewritten. A secret's value never appears
// in a response the proxy writes itself, nor in an [Event]; response
// headers and identity-encoded response bodies that echo a value the proxy
// injected have it masked.
package egress
