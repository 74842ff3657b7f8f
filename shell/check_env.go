package shell

import (
	"fmt"
	"strings"
)

// checkEnv admits the environment an exec adds (the sandbox's and the
// request's variables): bash reads some at start-up (BASH_ENV, SHELLOPTS,
// exported functions), some change command lookup or the tools' locale
// and time zone, and the check cannot follow those in the script.
//
// git's HTTP transport variables (GIT_SSL_*, GIT_HTTP_*) are admitted:
// they configure only git's talk to an http(s) remote, which the tier's
// git never has (clone, fetch, pull, push and remote run in the
// container), so in-process they are what any variable is, text in the
// environment. The network tier gives every sandbox GIT_SSL_CAINFO (its
// certificate authority); refusing it sent every exec of a daemon with
// the network tier to the container.
func checkEnv(env map[string]string) error {
	for k := range env {
		switch {
		case strings.HasPrefix(k, "GIT_SSL_"), strings.HasPrefix(k, "GIT_HTTP_"):
		case tierAssigns[k], strings.HasPrefix(k, "BASH_FUNC_"), strings.HasPrefix(k, "LC_"),
			strings.HasPrefix(k, "GIT_"), k == "IFS", k == "PS4", k == "OPTIND":
			return fmt.Errorf("environment variable %s: %w", k, ErrUnsupported)
		}
	}
	return nil
}
