package controller

import (
	"fmt"
	"maps"

	"rung.dev/rung"
	"rung.dev/rung/router"
	"rung.dev/rung/storage"
)

// Identity is who a sandbox's command runs as, and everything that
// follows from it for the tiers: the uid, gid and groups the container's
// agent starts it with, the owner of the files the file API and the
// isolate tier create (the sandbox's identity), and the variables HOME,
// USER and LOGNAME. It is decided here, once per exec, and handed to
// whichever tier runs the command.
type Identity struct {
	User   string   // login name ("root", "user"), or the uid for an unnamed one
	UID    uint32   // user id
	GID    uint32   // primary group id
	Groups []uint32 // supplementary groups
	Home   string   // home directory
}

// rootIdentity is who commands run as in a sandbox without a user (made
// before users existed) and on a server without a container tier.
var rootIdentity = Identity{User: "root", Home: "/root"}

// Env returns the variables the identity sets, as login(1) does: HOME,
// USER and LOGNAME. They go over the image's environment and under the
// sandbox's and the request's (see [commandEnv]).
func (id Identity) Env() map[string]string {
	return map[string]string{"HOME": id.Home, "USER": id.User, "LOGNAME": id.User}
}

// commandEnv is a command's environment on top of its image's: the
// identity's variables, overlaid with the sandbox's, then the request's.
// The container tier gets it whole. The isolate tier gets the sandbox's
// and the request's only, and USER through its shell: its file view has
// no /home yet, so HOME there stays its own default until it sees the
// container's root filesystem (issue 11); that change takes this
// function.
func commandEnv(id Identity, sandbox, request map[string]string) map[string]string {
	env := id.Env()
	maps.Copy(env, sandbox)
	maps.Copy(env, request)
	return env
}

// maxUserName bounds a user name from a caller: useradd's own limit is 32.
const maxUserName = 64

// checkUserName refuses what cannot name a user of /etc/passwd, with the
// optional ":group" an image's User may carry.
func checkUserName(name string) error {
	if name == "" || len(name) > maxUserName {
		return rung.Errorf(rung.ErrInvalid, "invalid user %q: want 1 to %d characters", clip(name), maxUserName)
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == ':' ||
			i > 0 && (c == '-' || c == '.' || c == '$')
		if !ok {
			return rung.Errorf(rung.ErrInvalid, "invalid user %q: want letters, digits and _ - . (a name of the image's /etc/passwd)", clip(name))
		}
	}
	return nil
}

// resolveIdentity resolves user ("" is "root") against the accounts of
// sb's image (its pinned image, or the container tier's default for a
// sandbox without one). An unknown or malformed user is rung.ErrInvalid
// naming it. Without a container tier there are no images: only root
// exists.
func (c *Controller) resolveIdentity(sb rung.Sandbox, user string) (Identity, error) {
	if user == "" {
		user = "root"
	}
	if err := checkUserName(user); err != nil {
		return Identity{}, err
	}
	t, err := c.containers()
	if err != nil {
		if user == "root" {
			return rootIdentity, nil
		}
		return Identity{}, rung.Errorf(rung.ErrInvalid, "unknown user %q: this server has no container tier, and the isolate tier runs as root only", user)
	}
	return t.Identity(sb.Image, user)
}

// execIdentity is who an exec or process asking for user ("" for the
// sandbox's own) runs as. The sandbox's own identity is a's, resolved
// once when a was activated; another user is resolved now.
func (c *Controller) execIdentity(a *actor, user string) (Identity, error) {
	if a.identErr == nil && (user == "" || user == a.ident.User) {
		return a.ident, nil
	}
	sb := c.sandbox(a).Sandbox
	if user == "" {
		user = sb.User
	}
	return c.resolveIdentity(sb, user)
}

// routeUser adjusts rr for an exec as who: only the container tier can
// switch users, so an exec as anyone but the sandbox's user goes there
// (auto), or is refused (isolate, rung.ErrInvalid). reason is what the
// result then says about the choice, or "".
func routeUser(a *actor, who Identity, rr *router.Request) (reason string, err error) {
	if who.User == a.ident.User {
		return "", nil
	}
	switch rr.Backend {
	case rung.BackendIsolate:
		return "", rung.Errorf(rung.ErrInvalid, "user %q: the isolate tier runs commands as the sandbox's user (%s) only; use backend auto or container", who.User, a.ident.User)
	case "", rung.BackendAuto:
		rr.Backend = rung.BackendContainer
		return fmt.Sprintf("runs as user %s, not the sandbox's user %s: only the container tier switches users", who.User, a.ident.User), nil
	}
	return "", nil
}

// ownFiles resolves who a's sandbox runs as and makes its file view
// create files as that user. A failure leaves files to root and is
// logged; execs resolve again and fail with it.
func (a *actor) ownFiles(c *Controller) {
	sb := c.sandbox(a).Sandbox
	a.ident, a.identErr = c.resolveIdentity(sb, sb.User)
	if a.identErr != nil {
		c.log.Warn("sandbox user", "sandbox", a.id, "user", sb.User, "err", a.identErr)
		return
	}
	a.root.SetOwner(a.ident.UID, a.ident.GID)
}

// route picks the tier for req (see router.Route; liveStdin: its stdin
// is streamed while it runs), run as req.User: an
// unknown user is an error, and one other than the sandbox's goes to the
// container tier (routeUser).
func (c *Controller) route(a *actor, req rung.ExecRequest, liveStdin bool) (router.Decision, error) {
	who, err := c.execIdentity(a, req.User)
	if err != nil {
		return router.Decision{}, err
	}
	rr := router.Request{Script: req.Command, Backend: req.Backend, ContainerAvailable: c.tier != nil,
		Dir: req.Dir, Env: isolateEnv(c.envOf(c.sandbox(a).Sandbox), req.Env), LookPath: c.imageLookPath(a), PTY: req.PTY != nil, LiveStdin: liveStdin,
		Login: req.Login}
	why, err := routeUser(a, who, &rr)
	if err != nil {
		return router.Decision{}, err
	}
	d := router.Route(rr, a.sh)
	if why != "" && d.Err == nil && !rr.PTY {
		d.Reason, d.Class = why, router.ClassUser
	}
	if req.Login && d.Program != nil && c.tier != nil {
		// (Without a container tier there is no image, so no startup
		// file: the isolate tier runs the command as it is.)
		if d.Login, err = c.loginShell(a, who); err != nil {
			// The container runs the login shell itself.
			d = router.Decision{Backend: rung.BackendContainer, Class: router.ClassUnsupported,
				Reason: "a login shell the isolate tier cannot start: " + err.Error()}
		}
	}
	return d, nil
}

// createIdentity is who a new sandbox of image ref (pinned, or "" for the
// default) runs as: user, or the image's default user (its Config.User;
// root when it names none).
func (c *Controller) createIdentity(ref, user string) (Identity, error) {
	if t, err := c.containers(); err == nil && user == "" {
		if user, err = t.ImageUser(ref); err != nil {
			return Identity{}, err
		}
	}
	return c.resolveIdentity(rung.Sandbox{Image: ref}, user)
}

// ownWorkspace gives a new sandbox's /workspace to its user, who must be
// able to write there; /tmp is everyone's (mode 1777) already.
func (c *Controller) ownWorkspace(id rung.SandboxID, who Identity) error {
	if who.UID == 0 && who.GID == 0 {
		return nil
	}
	if err := c.chownWorkspace(id, who.UID, who.GID); err != nil {
		return fmt.Errorf("give /workspace to user %s: %w", who.User, err)
	}
	return nil
}

// workspaceOwner returns the owner of sandbox id's /workspace.
func (c *Controller) workspaceOwner(id rung.SandboxID) (uid, gid uint32, err error) {
	root, err := c.pool.Root(string(id))
	if err != nil {
		return 0, 0, err
	}
	defer root.Close()
	fi, err := root.Lstat("/workspace")
	if err != nil {
		return 0, 0, err
	}
	uid, gid, ok := storage.FileOwner(fi)
	if !ok {
		return 0, 0, fmt.Errorf("owner of /workspace: not a file of the pool")
	}
	return uid, gid, nil
}

// chownWorkspace sets the owner of sandbox id's /workspace.
func (c *Controller) chownWorkspace(id rung.SandboxID, uid, gid uint32) error {
	root, err := c.pool.Root(string(id))
	if err != nil {
		return err
	}
	defer root.Close()
	return root.Lchown("/workspace", uid, gid)
}
