package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// This file implements "git check-ignore [-v] [-q] [-n] [--no-index]
// PATH...", with the matcher status uses (go-git's patterns over
// .git/info/exclude and each directory's .gitignore).

var gitCheckIgnoreOpts = NewOptions("v,verbose", "q,quiet", "n,non-matching", "no-index")

// gitIgnoreRule is one pattern with where it was read.
type gitIgnoreRule struct {
	p      gitignore.Pattern
	source string // ".gitignore", "d/.gitignore", ".git/info/exclude"
	line   int
	text   string
}

// ignoreRules reads the patterns of file (a path from the top) for the
// directory parts, numbering lines as git does (comments and blank
// lines count).
func (g *gitCtx) ignoreRules(file string, parts []string) []gitIgnoreRule {
	b, err := g.readFile(g.top + "/" + file)
	if err != nil {
		return nil
	}
	var out []gitIgnoreRule
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, gitIgnoreRule{gitignore.ParsePattern(line, parts), file, i + 1, line})
	}
	return out
}

// lastMatch returns the rule deciding path (its parts) among rules, the
// last one that matches, or nil.
func gitLastMatch(rules []gitIgnoreRule, parts []string, isDir bool) *gitIgnoreRule {
	for i := len(rules) - 1; i >= 0; i-- {
		if rules[i].p.Match(parts, isDir) != gitignore.NoMatch {
			return &rules[i]
		}
	}
	return nil
}

func gitCheckIgnore(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	verbose, quiet, nonMatching, noIndex := false, false, false, false
	for _, o := range opts {
		switch o.Key {
		case "verbose":
			verbose = true
		case "quiet":
			quiet = true
		case "non-matching":
			nonMatching = true
		case "no-index":
			noIndex = true
		}
	}
	var paths []string
	for _, a := range args {
		if a != "--" {
			paths = append(paths, a)
		}
	}
	switch {
	case len(paths) == 0:
		return g.fatal("no path specified")
	case quiet && verbose:
		return g.fatal("cannot have both --quiet and --verbose")
	case quiet && len(paths) > 1:
		return g.fatal("--quiet is only valid with a single pathname")
	case nonMatching && !verbose:
		return g.fatal("--non-matching is only valid with --verbose")
	}
	if g.globalExcludes() {
		return g.c.Fail("git check-ignore with a global excludes file")
	}
	if v, set := g.config("core.ignorecase"); set && v != "false" {
		return g.c.Fail("git check-ignore with core.ignoreCase")
	}
	tracked := map[string]bool{}
	if !noIndex {
		idx, err := g.index()
		if err != nil {
			return g.fatal("%v", err)
		}
		for _, e := range idx.Entries {
			tracked[e.Name] = true
		}
	}
	base := g.ignoreRules(".git/info/exclude", nil)
	// Each directory's rules, read once: its parents' and its own.
	dirRules := map[string][]gitIgnoreRule{}
	var rulesFor func(dir string) []gitIgnoreRule
	rulesFor = func(dir string) []gitIgnoreRule {
		if r, ok := dirRules[dir]; ok {
			return r
		}
		var parent []gitIgnoreRule
		var parts []string
		file := ".gitignore"
		if dir == "" {
			parent = base
		} else {
			i := strings.LastIndexByte(dir, '/')
			pd := ""
			if i >= 0 {
				pd = dir[:i]
			}
			parent = rulesFor(pd)
			parts = strings.Split(dir, "/")
			file = dir + "/.gitignore"
		}
		r := append(parent[:len(parent):len(parent)], g.ignoreRules(file, parts)...)
		dirRules[dir] = r
		return r
	}
	type result struct {
		arg  string
		rule *gitIgnoreRule
	}
	var results []result
	for _, a := range paths {
		if ctx.Err() != nil {
			return 130
		}
		rp, ok := g.pathspec(a)
		if !ok {
			return g.fatal("%s: '%s' is outside repository at '%s'", a, a, g.top)
		}
		if rp == "" || rp == ".git" || strings.HasPrefix(rp, ".git/") {
			return g.c.Fail("git check-ignore of the top or .git")
		}
		if tracked[rp] {
			results = append(results, result{a, nil})
			continue
		}
		parts := strings.Split(rp, "/")
		// A leading directory git excludes excludes what is below it.
		var rule *gitIgnoreRule
		dir := ""
		for i := 0; i < len(parts)-1 && rule == nil; i++ {
			r := gitLastMatch(rulesFor(dir), parts[:i+1], true)
			if r != nil && !strings.HasPrefix(r.text, "!") {
				rule = r
			}
			dir = strings.Join(parts[:i+1], "/")
		}
		if rule == nil {
			fi, err := g.c.FS.Lstat(g.top + "/" + rp)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return g.fatal("%v", err)
			}
			rule = gitLastMatch(rulesFor(dir), parts, err == nil && fi.IsDir())
		}
		if rule != nil && (strings.HasSuffix(rule.text, " ") || strings.HasSuffix(rule.text, "\t") || strings.Contains(rule.text, "\\")) {
			return g.c.Fail("git check-ignore with a pattern ending in blanks or holding a backslash")
		}
		results = append(results, result{a, rule})
	}
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	matched := 0
	for _, r := range results {
		rule := r.rule
		if rule != nil && !verbose && strings.HasPrefix(rule.text, "!") {
			rule = nil
		}
		if rule != nil {
			matched++
		}
		switch {
		case quiet:
		case rule != nil && verbose:
			fmt.Fprintf(w, "%s:%d:%s\t%s\n", rule.source, rule.line, rule.text, gitQuotePath(r.arg))
		case rule != nil:
			fmt.Fprintln(w, gitQuotePath(r.arg))
		case nonMatching:
			fmt.Fprintf(w, "::\t%s\n", gitQuotePath(r.arg))
		}
	}
	if matched == 0 {
		return 1
	}
	return 0
}
