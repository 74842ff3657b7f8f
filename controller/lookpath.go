package controller

import "maps"

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
