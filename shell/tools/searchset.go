package tools

import "rung.dev/rung/shell"

// addSearch registers the search and edit family: grep (and egrep,
// fgrep), sed, find, xargs, diff, cmp and patch.
func addSearch(m map[string]shell.Tool) {
	addGrep(m)
	addSed(m)
	addFind(m)
	addXargs(m)
	addDiff(m)
	addPatch(m)
}
