package tools

import "rung.dev/rung/shell"

// addGit registers git: init, status, add, rm, mv, commit, log, show,
// diff, branch, tag, rev-parse, ls-files, config, reset, restore, switch
// and checkout (of branches) over go-git's object store
// on the sandbox's files. Subcommands needing a network remote, and
// those not implemented, fail as unsupported so the router sends them to
// a container.
func addGit(m map[string]shell.Tool) {
	m["git"] = shell.Tool{Run: runGit, Check: gitCheck}
}
