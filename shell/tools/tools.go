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
	addFiles(m)   // fileset.go: ls, cp, mv, rm, mkdir, stat, du, ...
	addText(m)    // textset.go: head, sort, cut, tr, wc, od, date, ...
	addSearch(m)  // searchset.go: grep, sed, find, xargs, diff, patch, cmp
	addData(m)    // dataset.go: awk, jq, yq, tar, gzip
	addGit(m)     // gitset.go: git over go-git
	addStrings(m) // stringsset.go: strings
	return m
}
