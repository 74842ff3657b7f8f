package e2b

import (
	"path"
	"strings"
)

// home is E2B's home directory and workspace is where its files live in
// rung (see the package doc).
const (
	home      = "/home/user"
	workspace = "/workspace"
)

// Home is E2B's home directory, which every create of the E2B API links
// to /workspace (controller.CreateRequest.LinkWorkspace): warm spares for
// its creates are a controller.WarmSpec with this LinkWorkspace.
const Home = home

// sandboxPath maps an E2B path to the controller's: "" and "~" are the
// home; relative paths and "~/" resolve against it; the home is
// /workspace. Other absolute paths pass through (the controller refuses
// those outside /workspace and /tmp as invalid_argument).
func sandboxPath(p string) string {
	switch {
	case p == "" || p == "~":
		return workspace
	case strings.HasPrefix(p, "~/"):
		p = home + p[1:]
	case !strings.HasPrefix(p, "/"):
		p = home + "/" + p
	}
	p = path.Clean(p)
	if rest, ok := within(p, home); ok {
		return workspace + rest
	}
	return p
}

// e2bPath maps a controller path back to what the SDK sees.
func e2bPath(p string) string {
	if rest, ok := within(p, workspace); ok {
		return home + rest
	}
	return p
}

// within reports whether p is dir or below it, and what follows dir.
func within(p, dir string) (rest string, ok bool) {
	rest, ok = strings.CutPrefix(p, dir)
	return rest, ok && (rest == "" || rest[0] == '/')
}
