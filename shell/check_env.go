package shell

import (
	"fmt"
	"strings"
)

// checkEnv admits the environment an exec adds (the sandbox's and the
// request's variables): bash reads some at start-up (BASH_ENV, SHELLOPTS,
// exported functions), some change command lookup or the tools' locale
// and time zone, and the check cannot follow those in the script.
func checkEnv(env map[string]string) error {
	for k := range env {
		switch {
		case tierAssigns[k], strings.HasPrefix(k, "BASH_FUNC_"), strings.HasPrefix(k, "LC_"),
			strings.HasPrefix(k, "GIT_"), k == "IFS", k == "PS4", k == "OPTIND":
			return fmt.Errorf("environment variable %s: %w", k, ErrUnsupported)
		}
	}
	return nil
}
