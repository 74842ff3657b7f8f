// Package tools is the isolate tier's command set: Go implementations of
// coreutils, grep, sed, awk, find, jq, tar, git and friends over a sandbox's
// file view, each byte-for-byte faithful to the GNU tool on Debian 12 for
// the flags it accepts. Flags it does not implement are refused (through
// each tool's Check, and again at run time) rather than guessed at.
package tools

import "rung.dev/rung/shell"

// All returns a fresh map of every tool by command name.
func All() map[string]shell.Tool {
	m := map[string]shell.Tool{}
	addCore(m)   // core.go: coreutils-style file and text tools
	addSearch(m) // search.go: grep, sed, find, xargs, diff, patch, cmp
	addData(m)   // data.go: awk, jq, yq, tar, gzip
	addGit(m)    // git.go: git over go-git
	return m
}
