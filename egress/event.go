package egress

import (
	"net/netip"
	"time"
)

// EventKind says what an [Event] records.
type EventKind string

// Event kinds.
const (
	EventConnection EventKind = "connection" // one TCP connection from the sandbox, at its end
	EventRequest    EventKind = "request"    // one HTTP request (plain or intercepted), at its end
	EventDNS        EventKind = "dns"        // a DNS query answered with a denial
)

// Protocol is how the proxy handled a connection or request.
type Protocol string

// Protocols.
const (
	ProtoTCP   Protocol = "tcp"   // raw TCP, spliced to the original destination
	ProtoTLS   Protocol = "tls"   // TLS passed through to the server name, not intercepted
	ProtoHTTP  Protocol = "http"  // plain HTTP, proxied request by request
	ProtoHTTPS Protocol = "https" // TLS intercepted with the sandbox's CA, proxied request by request
	ProtoDNS   Protocol = "dns"
)

// Verdict is what became of a connection or request.
type Verdict string

// Verdicts.
const (
	VerdictAllowed Verdict = "allowed" // the policy allowed it (an upstream error is still allowed; see Message)
	VerdictDenied  Verdict = "denied"  // the policy, or an address rung does not dial, refused it
	VerdictLimited Verdict = "limited" // a limit refused it
	VerdictFailed  Verdict = "failed"  // it could not be served (no original destination, DNS failure, upstream unreachable)
)

// Event is one journal record of the sandbox's egress: one per connection
// and one per HTTP request. It never holds a secret's value: Path is the
// path as the sandbox sent it (placeholders, not values), and Secrets
// names the secrets that were filled in.
type Event struct {
	Time     time.Time  `json:"time"` // when the connection or request began
	Kind     EventKind  `json:"kind"`
	Protocol Protocol   `json:"protocol"`
	Host     string     `json:"host,omitempty"` // SNI, Host, or the name looked up for IP
	IP       netip.Addr `json:"ip,omitzero"`    // the address dialed, else the original destination's
	Port     uint16     `json:"port,omitempty"`
	Method   string     `json:"method,omitempty"`
	Path     string     `json:"path,omitempty"` // without the query
	Status   int        `json:"status,omitempty"`
	// BytesUp and BytesDown count what the sandbox sent and received: of the
	// whole connection, or of a request's bodies.
	BytesUp   int64         `json:"bytes_up"`
	BytesDown int64         `json:"bytes_down"`
	Duration  time.Duration `json:"duration"`
	Verdict   Verdict       `json:"verdict"`
	// Rule is the index of the policy rule that decided, -1 for the
	// default or when no rule was consulted; RuleText describes it.
	Rule     int      `json:"rule"`
	RuleText string   `json:"rule_text,omitempty"`
	Secrets  []string `json:"secrets,omitempty"` // names of the secrets filled in
	Message  string   `json:"message,omitempty"` // what the sandbox was told, or what went wrong
}
