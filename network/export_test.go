package network

import (
	"strings"

	"github.com/google/nftables"
	"rung.dev/rung"
)

var (
	InNamespace     = inNamespace
	CreateNamespace = createNamespace
	RemoveNamespace = removeNamespace
	WriteSysctl     = writeSysctl
	ListLinks       = listLinks
)

// SpoofDrops returns how many packets with a forged source the filter
// chain of sandbox id dropped.
func SpoofDrops(m *Manager, id rung.SandboxID) (uint64, error) {
	m.mu.Lock()
	r := m.links[id].rec
	m.mu.Unlock()
	return m.spoofDrops(r)
}

// SandboxChains returns the names of the table's per-sandbox chains.
func SandboxChains(m *Manager) ([]string, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, err
	}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ch := range chains {
		if ch.Table.Name == m.table.Name && (strings.HasPrefix(ch.Name, "nat_") || strings.HasPrefix(ch.Name, "filter_")) {
			names = append(names, ch.Name)
		}
	}
	return names, nil
}

// SetBeforeLinkDown sets a function m's teardown runs between finding a
// link and taking it down; nil removes it.
func SetBeforeLinkDown(m *Manager, f func(iface string)) { m.beforeLinkDown = f }

// Settle waits until the links Detach took down are deleted.
func Settle(m *Manager) { m.settle() }

// Table is the manager's nftables table name.
func Table(m *Manager) string { return m.table.Name }
