package containers

import (
	"context"

	"rung.dev/rung"
)

// Network gives containers the network their sandboxes' policies say
// (package networks implements it; cmd/rung wires it through
// [Config].Network). Without one, every container has loopback only.
type Network interface {
	// Prepare readies sb's network before its container starts: the
	// network namespace to join ("" for a new one with loopback only),
	// the host path of the file to mount as its resolv.conf, which the
	// network rewrites in place when the sandbox's network changes while
	// it runs ("": the image's), and the certificate store to mount (nil:
	// the image's).
	Prepare(ctx context.Context, sb rung.Sandbox) (netns, resolvConf string, caBundle []byte, err error)
	// Started: sandbox id's container runs; its init is host pid.
	Started(id rung.SandboxID, pid int)
	// Stopped: sb's container is gone, or did not start after Prepare.
	Stopped(id rung.SandboxID)
	// Adopted: a restarted daemon took over sb's running container.
	Adopted(ctx context.Context, sb rung.Sandbox, pid int) error
	// Forget: sandbox id is gone for good (a warm spare destroyed
	// unclaimed); what Prepare kept for it goes.
	Forget(id rung.SandboxID)
}

// prepareNetwork runs the network's Prepare, if there is a network.
func (t *Tier) prepareNetwork(ctx context.Context, sb rung.Sandbox) (netns, resolvConf string, caBundle []byte, err error) {
	if t.cfg.Network == nil {
		return "", "", nil, nil
	}
	return t.cfg.Network.Prepare(ctx, sb)
}
