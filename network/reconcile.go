package network

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"rung.dev/rung"
)

// Reconcile settles what an earlier daemon left, after [Open] and before
// any Attach: it removes the links, rules, namespaces and records of the
// sandboxes keep does not report, and of kept ones whose link is gone (its
// namespace died with its container); it takes the other kept ones over,
// with their rules rewritten from their records. Then it removes what no
// record describes: host ends in the range, per-sandbox chains of the
// table, namespaces under the state directory. It returns the sandboxes
// whose links it removed; it goes on past a failure and reports them all.
func (m *Manager) Reconcile(ctx context.Context, keep func(rung.SandboxID) bool) ([]rung.SandboxID, error) {
	m.mu.Lock()
	var old []record
	for _, e := range m.links {
		if e.state == stale && !m.busy[e.rec.Sandbox] {
			old = append(old, e.rec)
			m.busy[e.rec.Sandbox] = true
		}
	}
	m.mu.Unlock()
	var removed []rung.SandboxID
	var errs []error
	for _, r := range old {
		if keep != nil && keep(r.Sandbox) {
			if ok, err := m.takeOver(r); err != nil {
				errs = append(errs, err)
				m.end(r.Sandbox)
				continue
			} else if ok {
				m.end(r.Sandbox)
				continue
			}
		}
		l, err := m.teardown(r)
		if err != nil {
			errs = append(errs, fmt.Errorf("remove network of %s: %w", r.Sandbox, err))
			m.end(r.Sandbox)
			continue
		}
		m.release(r, l)
		m.end(r.Sandbox)
		removed = append(removed, r.Sandbox)
	}
	if err := m.sweep(ctx); err != nil {
		errs = append(errs, err)
	}
	m.settle() // what it removed is gone when it returns
	if len(removed) > 0 {
		m.log.InfoContext(ctx, "removed stale sandbox networks", "count", len(removed))
	}
	return removed, errors.Join(errs...)
}

// takeOver makes a kept record's attachment this manager's: false if its
// link is gone, and with it anything to take over.
func (m *Manager) takeOver(r record) (bool, error) {
	if _, err := m.host.LinkByName(r.hostIface()); isLinkNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if err := m.installSandbox(r); err != nil {
		return false, err
	}
	if r.Policy.Mode == rung.NetworkOpen {
		if err := m.forwarding(); err != nil {
			return false, err
		}
	}
	m.mu.Lock()
	m.links[r.Sandbox].state = ready
	m.mu.Unlock()
	return true, nil
}

// sweep removes kernel objects and namespaces in the manager's range,
// table and state directory that no record describes (a crash between a
// record's removal and theirs cannot leave any, but an operator's deleted
// state directory can).
func (m *Manager) sweep(ctx context.Context) error {
	m.mu.Lock()
	known := map[string]bool{} // tags and sandbox ids with a record or an operation
	for id, e := range m.links {
		known[e.rec.tag()], known[string(id)] = true, true
	}
	for i := range m.used { // links being deleted in the background among them
		known[record{Subnet: subnet(m.cfg.Range, i)}.tag()] = true
	}
	m.mu.Unlock()
	var errs []error
	links, err := listLinks(m.host)
	if err != nil {
		return err
	}
	for _, l := range links {
		p, ok := subnetOfIface(l.Attrs().Name)
		if _, in := subnetIndex(m.cfg.Range, p); !ok || !in || known[record{Subnet: p}.tag()] {
			continue
		}
		m.log.InfoContext(ctx, "removing a stray sandbox link", "link", l.Attrs().Name)
		if err := m.host.LinkDel(l); err != nil && !isLinkNotFound(err) {
			errs = append(errs, err)
		}
	}
	c, err := nftables.New()
	if err != nil {
		return err
	}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, ch := range chains {
		if ch.Table.Name != m.table.Name {
			continue
		}
		tag, ok := strings.CutPrefix(ch.Name, "filter_")
		if !ok {
			tag, ok = strings.CutPrefix(ch.Name, "nat_")
		}
		p, isSandbox := subnetOfIface(ifacePrefix + tag)
		if !ok || !isSandbox || known[tag] {
			continue
		}
		known[tag] = true // its pair goes with it
		if err := m.removeSandbox(record{Sandbox: "stray", Subnet: p}); err != nil {
			errs = append(errs, err)
		}
	}
	ents, _ := os.ReadDir(m.nsDir())
	for _, e := range ents {
		if !known[e.Name()] {
			errs = append(errs, removeNamespace(filepath.Join(m.nsDir(), e.Name())))
		}
	}
	return errors.Join(errs...)
}

// listLinks lists the host's links. A dump the kernel interrupted
// because links changed meanwhile (other sandboxes coming and going) is
// taken again.
func listLinks(h *netlink.Handle) ([]netlink.Link, error) {
	for range 100 {
		links, err := h.LinkList()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return links, err
		}
	}
	return nil, errors.New("list links: every dump was interrupted")
}

// Adopt returns the link of sandbox id that [Manager.Reconcile] kept, for a
// container the daemon adopts, after checking that its host end is still
// there. Errors: rung.ErrNotFound (no link: it was never attached, was
// removed, or its namespace died), rung.ErrConflict (not reconciled yet,
// or an operation on id is under way).
func (m *Manager) Adopt(ctx context.Context, id rung.SandboxID) (Link, error) {
	m.mu.Lock()
	e := m.links[id]
	switch {
	case e == nil:
		m.mu.Unlock()
		return Link{}, rung.Errorf(rung.ErrNotFound, "sandbox %s has no network link", id)
	case e.state != ready:
		m.mu.Unlock()
		return Link{}, rung.Errorf(rung.ErrConflict, "sandbox %s: network not reconciled yet", id)
	}
	r := e.rec
	m.mu.Unlock()
	if _, err := m.host.LinkByName(r.hostIface()); isLinkNotFound(err) {
		return Link{}, rung.Errorf(rung.ErrNotFound, "sandbox %s: its network link is gone", id)
	} else if err != nil {
		return Link{}, err
	}
	return r.link(), nil
}

// Uninstall detaches every sandbox the manager knows (records a previous
// daemon left included) and removes its nftables table: for tests, and for
// taking rung off a host. The manager is of no use after it.
func (m *Manager) Uninstall(ctx context.Context) error {
	m.mu.Lock()
	ids := make([]rung.SandboxID, 0, len(m.links))
	for id := range m.links {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	var errs []error
	for _, id := range ids {
		errs = append(errs, m.Detach(ctx, id))
	}
	m.settle()
	c, err := nftables.New()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	c.DelTable(m.table)
	if err := c.Flush(); err != nil && !errors.Is(err, syscall.ENOENT) {
		errs = append(errs, fmt.Errorf("delete nftables table %s: %w", m.table.Name, err))
	}
	return errors.Join(errs...)
}

// Links returns the links of the sandboxes attached or taken over, in no
// particular order.
func (m *Manager) Links() []Link {
	m.mu.Lock()
	defer m.mu.Unlock()
	var links []Link
	for _, e := range m.links {
		if e.state == ready {
			links = append(links, e.rec.link())
		}
	}
	return links
}

// Link returns sandbox id's link, if it has one.
func (m *Manager) Link(id rung.SandboxID) (Link, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.links[id]
	if e == nil || e.state != ready {
		return Link{}, false
	}
	return e.rec.link(), true
}
