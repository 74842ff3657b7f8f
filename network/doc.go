// Package network gives a sandbox's container a network link whose policy is
// enforced on the host, outside anything the sandbox can change.
//
// A [Manager] carves an address range (10.231.0.0/16 by default) into one /30
// per sandbox: the host end of a veth pair takes the subnet's first address,
// the guest end, named eth0 inside the sandbox's network namespace, the
// second, with a default route via the host end. Every rule is in one
// nftables table of family inet ("rung" by default) and matches on the
// host end's name, the interface the sandbox's packets arrive on: never on
// their source address, which root in the sandbox could change. A packet
// whose source is not the sandbox's own address is dropped before anything
// else looks at it.
//
// What the two modes do with a packet the sandbox sends (none is no link at
// all: [Manager.Detach] leaves the namespace with loopback only):
//
//   - egress: every TCP connection is redirected (DNAT) to the host end's
//     proxy port, where the daemon's proxy recovers the address the sandbox
//     dialled with getsockopt(SO_ORIGINAL_DST); UDP and TCP to port 53, to any
//     address, go to the host end's DNS port. Everything else (other UDP,
//     ICMP, any other protocol) is rejected at once: TCP with a reset, UDP
//     with an ICMP "port unreachable" (a connected socket's next call fails
//     with ECONNREFUSED, under Linux and gVisor alike), the rest with an
//     ICMP "administratively prohibited". Nothing is forwarded.
//   - open: DNS is redirected as in egress; everything else is forwarded
//     and masqueraded through the host's routes, except what is rejected at
//     once: the host's own addresses (whatever interface holds them,
//     loopback included), broadcast and multicast, 0/8, 127/8, 240/4, the
//     manager's whole range (other sandboxes and their host ends), and,
//     unless the sandbox's [Policy] allows a prefix explicitly, 10/8,
//     172.16/12, 192.168/16, 100.64/10 and 169.254/16 (cloud metadata).
//
// A refusal by ICMP is subject to the host's ICMP rate limit
// (net.ipv4.icmp_ratelimit, per destination: a burst of 6, then one a
// second by default): a sandbox that sends a flood of datagrams the policy
// refuses gets its first answers at once and then fewer; TCP resets are
// not limited.
//
// IPv6 is off on both ends of the link: a sandbox's IPv6 socket fails at
// once with ENETUNREACH, and the host end drops any IPv6 packet that root in
// the sandbox might still send. Loopback keeps ::1.
//
// Packets the host sends into a sandbox (the daemon's own connections to a
// sandbox's ports) and the sandbox's answers pass in every mode; nothing
// else from outside reaches a sandbox.
//
// The kernel holds the links and rules, not the daemon: they outlive a
// daemon crash. The manager records each attachment in its state directory
// before it creates anything, so that [Manager.Reconcile] can find and
// remove what a crashed daemon left, or take it over.
package network
