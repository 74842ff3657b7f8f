package container_test

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
	"rung.dev/rung/internal/nettest"
	"rung.dev/rung/network"
)

// A container attached in egress mode reaches the proxy whatever it
// dials, with the address it dialled intact, and its root cannot change
// the link: containers have neither CAP_NET_ADMIN nor CAP_NET_RAW. The
// namespace is made before the container starts (gVisor needs that) and
// joined through the spec, under every runtime.
func TestNetworkEgress(t *testing.T) {
	e := newEnv(t)
	lease := nettest.Take(t)
	proxy, err := net.ListenTCP("tcp4", &net.TCPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	nm, err := network.Open(network.Config{
		StateDir: filepath.Join(t.TempDir(), "network"), Range: lease.Range, Table: lease.Table,
		ProxyPort: uint16(proxy.Addr().(*net.TCPAddr).Port), DNSPort: 1, // no DNS here
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := nm.Uninstall(context.Background()); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		nm.Close()
	})
	if _, err := nm.Reconcile(t.Context(), nil); err != nil { // a dead test process's leftovers in this lease
		t.Fatal(err)
	}
	id := rung.NewSandboxID()
	link, err := nm.Attach(t.Context(), id, "", network.Policy{Mode: rung.NetworkEgress})
	if err != nil {
		t.Fatal(err)
	}
	sub := subvolume(t)
	copyExecutable(t, escapeBuild.binary(t), filepath.Join(sub, "fs/workspace/escape"))
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, link.ResolvConf(), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := e.m.Start(t.Context(), container.StartRequest{Sandbox: id, Subvolume: sub, Image: e.lite,
		Size: rung.Presets["basic"], NetNS: link.NetNS, ResolvConf: resolv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.m.Stop(context.Background(), id) })

	served := make(chan error, 1)
	go func() { // ends after one connection, or when the listener closes
		served <- serveOnce(proxy, netip.MustParseAddrPort("1.2.3.4:80"))
	}()
	got := run(t, c, agent.ExecRequest{Command: "echo hello | nc 1.2.3.4 80", TimeoutMS: 20000})
	if got.stdout != "world\n" || got.exit.Code != 0 {
		t.Errorf("nc 1.2.3.4 80: %+v, want the proxy's answer", got)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the proxy saw no connection")
	}

	tests := []struct {
		name, cmd string
		check     func(out) bool
	}{
		{"resolv.conf names the host end", "cat /etc/resolv.conf", func(o out) bool {
			return strings.Contains(o.stdout, "nameserver "+link.HostIP.String()+"\n")
		}},
		{"resolv.conf is read-only", "echo nameserver 8.8.8.8 > /etc/resolv.conf", nonZeroExit},
		{"eth0 has the guest address", "ip -4 addr show eth0", func(o out) bool {
			return strings.Contains(o.stdout, link.GuestIP.String()+"/30")
		}},
		{"root cannot add an address", "ip addr add 10.9.9.9/32 dev eth0", nonZeroExit},
		{"root cannot take eth0 down", "ip link set eth0 down", nonZeroExit},
		{"root cannot open a raw socket", "ping -c 1 -W 1 " + link.HostIP.String(), nonZeroExit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if o := run(t, c, agent.ExecRequest{Command: tc.cmd, TimeoutMS: 10000}); !tc.check(o) {
				t.Errorf("%s: %+v", tc.cmd, o)
			}
		})
	}

	// What the policy refuses fails at once (an errno, not the probe's
	// 10 s timeout), and a change of mode reaches the running container.
	refusals := []struct {
		mode  rung.NetworkMode
		probe string
		want  []string
	}{
		{rung.NetworkEgress, "udp 203.0.113.9:123", []string{"ECONNREFUSED"}},
		{rung.NetworkOpen, "tcp 169.254.169.254:80", []string{"ECONNREFUSED"}},
		{rung.NetworkOpen, "tcp " + netip.AddrPortFrom(link.HostIP, uint16(proxy.Addr().(*net.TCPAddr).Port)).String(), []string{"ECONNREFUSED"}},
		{rung.NetworkEgress, "tcp " + netip.AddrPortFrom(link.HostIP, 9).String(), []string{"ok"}}, // to the proxy's backlog
	}
	for _, tc := range refusals {
		t.Run(string(tc.mode)+" "+tc.probe, func(t *testing.T) {
			if err := nm.SetPolicy(t.Context(), id, network.Policy{Mode: tc.mode}); err != nil {
				t.Fatal(err)
			}
			o := run(t, c, agent.ExecRequest{Command: "./escape " + tc.probe, TimeoutMS: 20000})
			if got := strings.TrimSpace(o.stdout); !slices.Contains(tc.want, got) {
				t.Errorf("escape %s: %q (%+v), want one of %q", tc.probe, got, o, tc.want)
			}
		})
	}
}

func nonZeroExit(o out) bool { return o.exit.Code != 0 }

// serveOnce accepts one connection on ln, checks that its peer dialled
// want, reads "hello" and answers "world".
func serveOnce(ln *net.TCPListener, want netip.AddrPort) error {
	ln.SetDeadline(time.Now().Add(20 * time.Second))
	c, err := ln.AcceptTCP()
	if err != nil {
		return err
	}
	defer c.Close()
	dst, err := nettest.OriginalDst(c)
	if err != nil {
		return err
	}
	if dst != want {
		return &net.AddrError{Err: "original destination " + dst.String() + ", want " + want.String()}
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if string(buf[:n]) != "hello\n" {
		return &net.AddrError{Err: "read " + string(buf[:n])}
	}
	_, err = c.Write([]byte("world\n"))
	return err
}
