package controller

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"

	"rung.dev/rung/shell"
)

// imageLookPath is the PATH lookup of a's image for the isolate tier's
// check, or nil without a container tier (the isolate tier is then the
// only one, and its tools are all there is).
func (c *Controller) imageLookPath(a *actor) func(string) string {
	t, err := c.containers()
	if err != nil {
		return nil
	}
	lookPath, _ := t.ImagePath(c.sandbox(a).Image)
	return lookPath
}

// isolateShellName is the isolate tier's $0 for a's execs: the name
// bash has in a's container, so that messages read the same.
func (c *Controller) isolateShellName(a *actor) string {
	t, err := c.containers()
	if err != nil {
		return ""
	}
	_, shell := t.ImagePath(c.sandbox(a).Image)
	return shell
}

// isolateEnv is the environment an exec adds in the isolate tier: the
// sandbox's variables, overlaid with the request's.
func isolateEnv(sandbox, request map[string]string) map[string]string {
	env := make(map[string]string, len(sandbox)+len(request))
	maps.Copy(env, sandbox)
	maps.Copy(env, request)
	return env
}

// loginShell is what the isolate tier needs to run a's exec as who's
// login shell (shell.Login): the image's startup files as the sandbox's
// container sees them, and the home, which must be a link into the view
// (an E2B sandbox's /home/user, linked to /workspace).
func (c *Controller) loginShell(a *actor, who Identity) (*shell.Login, error) {
	t, err := c.containers()
	if err != nil {
		return nil, err
	}
	ref := c.sandbox(a).Image
	upper := filepath.Join(c.pool.Path(string(a.id)), "rootfs", "upper")
	il, err := t.LoginFiles(ref, upper)
	if err != nil {
		return nil, err
	}
	if il.Path == "" {
		return nil, errors.New("the image's environment sets no PATH")
	}
	target, err := t.HomeLink(ref, upper, who.Home)
	if err != nil {
		return nil, fmt.Errorf("home %s: %w", who.Home, err)
	}
	if path.Clean(target) != "/workspace" {
		return nil, fmt.Errorf("home %s is not a link to /workspace", who.Home)
	}
	return &shell.Login{Files: il.Files, Home: who.Home, HomeView: "/workspace", Path: il.Path, UID: who.UID, GID: who.GID, Key: il.Key}, nil
}
