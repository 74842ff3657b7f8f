package network

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"rung.dev/rung"
)

// A record is what the state directory holds for one attached sandbox
// (links/SANDBOX.json): enough to remove everything the attachment made,
// or to take it over, after a crash.
type record struct {
	Sandbox rung.SandboxID `json:"sandbox"`
	Subnet  netip.Prefix   `json:"subnet"` // the sandbox's /30
	NetNS   string         `json:"netns"`
	// OwnsNS: the manager created NetNS (under its state directory) and
	// removes it at Detach.
	OwnsNS bool   `json:"owns_netns,omitempty"`
	Policy Policy `json:"policy"`
}

// tag names the record's kernel objects: the subnet's address in hex,
// unique on the host as long as managers' ranges do not overlap.
func (r record) tag() string {
	a := r.Subnet.Addr().As4()
	return fmt.Sprintf("%08x", binary.BigEndian.Uint32(a[:]))
}

// hostIface is the host end's name: "rung" and the tag, 12 bytes of the
// kernel's 15.
func (r record) hostIface() string { return ifacePrefix + r.tag() }

const ifacePrefix = "rung"

func (r record) hostIP() netip.Addr  { return r.Subnet.Addr().Next() }
func (r record) guestIP() netip.Addr { return r.Subnet.Addr().Next().Next() }

// subnetOfIface returns the subnet a host end's name encodes, if it is one.
func subnetOfIface(name string) (netip.Prefix, bool) {
	hex, ok := strings.CutPrefix(name, ifacePrefix)
	if !ok || len(hex) != 8 {
		return netip.Prefix{}, false
	}
	var v uint32
	if _, err := fmt.Sscanf(hex, "%08x", &v); err != nil {
		return netip.Prefix{}, false
	}
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], v)
	return netip.PrefixFrom(netip.AddrFrom4(a), subnetBits), true
}

// subnetBits: a /30 holds the host end, the guest end, and nothing else.
const subnetBits = 30

// subnet returns the i-th /30 of rng.
func subnet(rng netip.Prefix, i int) netip.Prefix {
	a := rng.Masked().Addr().As4()
	v := binary.BigEndian.Uint32(a[:]) + uint32(i)<<(32-subnetBits)
	binary.BigEndian.PutUint32(a[:], v)
	return netip.PrefixFrom(netip.AddrFrom4(a), subnetBits)
}

// subnetIndex is subnet's inverse: the index of p in rng, or false.
func subnetIndex(rng netip.Prefix, p netip.Prefix) (int, bool) {
	if p.Bits() != subnetBits || !rng.Contains(p.Addr()) || p.Masked() != p {
		return 0, false
	}
	base, a := rng.Masked().Addr().As4(), p.Addr().As4()
	return int((binary.BigEndian.Uint32(a[:]) - binary.BigEndian.Uint32(base[:])) >> (32 - subnetBits)), true
}

func (m *Manager) linksDir() string { return filepath.Join(m.cfg.StateDir, "links") }
func (m *Manager) nsDir() string    { return filepath.Join(m.cfg.StateDir, "ns") }

// writeRecord replaces r's file whole: a crash leaves the old record or
// the new one, never a torn one. There is no fsync: what a record
// describes (links, rules, namespace mounts) lives in the kernel and dies
// with it, and after a reboot Reconcile removes records of what is gone.
func (m *Manager) writeRecord(r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	path := filepath.Join(m.linksDir(), string(r.Sandbox)+".json")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write network record: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write network record: %w", err)
	}
	return nil
}

func (m *Manager) removeRecord(id rung.SandboxID) error {
	err := os.Remove(filepath.Join(m.linksDir(), string(id)+".json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove network record: %w", err)
	}
	return nil
}

// readRecords returns the records in the state directory. A file that is
// not a record of this manager's range (a temporary file a crash left, a
// record from another range) is removed or skipped with a warning.
func (m *Manager) readRecords() ([]record, error) {
	ents, err := os.ReadDir(m.linksDir())
	if err != nil {
		return nil, fmt.Errorf("read network records: %w", err)
	}
	var recs []record
	for _, e := range ents {
		path := filepath.Join(m.linksDir(), e.Name())
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			os.Remove(path) // a write a crash interrupted
			continue
		}
		var r record
		b, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if _, in := subnetIndex(m.cfg.Range, r.Subnet); err != nil || !in || string(r.Sandbox) != name {
			m.log.Warn("skipping network record", "path", path, "err", err)
			continue
		}
		recs = append(recs, r)
	}
	return recs, nil
}
