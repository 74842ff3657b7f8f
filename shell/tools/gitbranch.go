package tools

import (
	"bufio"
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// This file implements the ref commands: branch, tag, rev-parse, and
// ls-files.

var (
	gitBranchOpts   = NewOptions("d,delete", "D", "m,move", "M", "show-current", "l,list", "f,force", "a,all", "r,remotes", "v,verbose")
	gitTagOpts      = NewOptions("a,annotate", "m,message=", "d,delete", "l,list", "f,force")
	gitRevParseOpts = NewOptions("short=?", "abbrev-ref=?", "show-toplevel", "git-dir", "is-inside-work-tree",
		"verify", "q,quiet", "show-prefix", "show-cdup", "absolute-git-dir", "is-bare-repository")
	gitLsFilesOpts = NewOptions("c,cached", "m,modified", "d,deleted", "o,others", "exclude-standard", "s,stage", "z", "directory")
)

// refNames lists the gitShort names of refs gitUnder prefix, sorted.
func (g *gitCtx) refNames(prefix string) ([]string, map[string]plumbing.Hash) {
	hashes := map[string]plumbing.Hash{}
	var names []string
	iter, err := g.st.IterReferences()
	if err != nil {
		return nil, hashes
	}
	iter.ForEach(func(r *plumbing.Reference) error {
		n := string(r.Name())
		if r.Type() == plumbing.HashReference && strings.HasPrefix(n, prefix) {
			names = append(names, n[len(prefix):])
			hashes[n[len(prefix):]] = r.Hash()
		}
		return nil
	})
	sort.Strings(names)
	return names, hashes
}

func gitValidRefName(n string) bool {
	if n == "" || strings.HasPrefix(n, "-") || strings.HasSuffix(n, ".lock") || strings.HasSuffix(n, "/") ||
		strings.Contains(n, "..") || strings.ContainsAny(n, " ~^:?*[\\\x7f") || n == "@" || strings.Contains(n, "@{") {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < 0x20 {
			return false
		}
	}
	return true
}

// isAncestor reports whether a is reachable from b.
func (g *gitCtx) isAncestor(a, b plumbing.Hash) bool {
	seen := map[plumbing.Hash]bool{}
	stack := []plumbing.Hash{b}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if h == a {
			return true
		}
		if seen[h] {
			continue
		}
		seen[h] = true
		cm, err := object.GetCommit(g.st, h)
		if err != nil {
			continue
		}
		stack = append(stack, cm.ParentHashes...)
	}
	return false
}

// gitBranch is "git branch".
func gitBranch(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	mode, force, verbose, all, remotes := "", false, false, false, false
	for _, o := range opts {
		switch o.Key {
		case "verbose":
			verbose = true
		case "all":
			all = true
		case "remotes":
			remotes = true
		case "delete", "D", "move", "M", "show-current", "list":
			mode = o.Key
			if o.Key == "D" {
				mode, force = "delete", true
			}
			if o.Key == "M" {
				mode, force = "move", true
			}
		case "force":
			force = true
		default:
			return g.c.Fail("git branch " + o.Name)
		}
	}
	cur, head, detached, err := g.headRef()
	if err != nil {
		return g.fatal("%v", err)
	}
	curName := strings.TrimPrefix(string(cur), "refs/heads/")
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	names, hashes := g.refNames("refs/heads/")
	switch {
	case mode == "show-current":
		if !detached {
			fmt.Fprintln(w, curName)
		}
		return 0
	case mode == "delete":
		if len(args) == 0 {
			return g.fatal("branch name required")
		}
		status := 0
		for _, n := range args {
			h, ok := hashes[n]
			switch {
			case !ok:
				status = g.errorf(1, "branch '%s' not found.", n)
				continue
			case n == curName && !detached:
				status = g.errorf(1, "Cannot delete branch '%s' checked out at '%s'", n, g.top)
				continue
			case !force && !head.IsZero() && !g.isAncestor(h, head):
				status = g.errorf(1, "The branch '%s' is not fully merged.\nIf you are sure you want to delete it, run 'git branch -D %s'.", n, n)
				continue
			}
			if err := g.st.RemoveReference(plumbing.NewBranchReferenceName(n)); err != nil {
				return g.fatal("%v", err)
			}
			fmt.Fprintf(w, "Deleted branch %s (was %s).\n", n, g.short(h))
		}
		return status
	case mode == "move":
		from, to := curName, ""
		switch len(args) {
		case 1:
			to = args[0]
		case 2:
			from, to = args[0], args[1]
		default:
			return g.fatal("too many arguments for a rename operation")
		}
		h, ok := hashes[from]
		if !ok {
			if from == curName && head.IsZero() {
				return g.c.Fail("git branch -m of an unborn branch")
			}
			return g.errorf(1, "refname refs/heads/%s not found\nfatal: Branch rename failed", from)
		}
		if !gitValidRefName(to) {
			return g.fatal("'%s' is not a valid branch name", to)
		}
		if _, exists := hashes[to]; exists && force && to != from && to == curName && !detached {
			return g.fatal("cannot force update the branch '%s' checked out at '%s'", to, g.top)
		}
		if _, exists := hashes[to]; exists && !force && to != from {
			return g.fatal("a branch named '%s' already exists", to)
		}
		if err := g.st.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(to), h)); err != nil {
			return g.fatal("%v", err)
		}
		if to != from {
			g.st.RemoveReference(plumbing.NewBranchReferenceName(from))
		}
		if from == curName && !detached {
			g.st.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.NewBranchReferenceName(to)))
		}
		return 0
	case len(args) == 0 || mode == "list" || all || remotes:
		if mode != "" && mode != "list" || (all || remotes) && mode == "" && len(args) > 0 {
			return g.c.Fail("git branch -v/-a/-r with other operations")
		}
		return g.listBranches(w, names, hashes, args, verbose, all, remotes, curName, head, detached)
	}
	// Create.
	if len(args) > 2 {
		return g.c.Fail("git branch with more than two arguments")
	}
	n := args[0]
	if !gitValidRefName(n) {
		return g.fatal("'%s' is not a valid branch name", n)
	}
	start, startName := head, curName
	if len(args) == 2 {
		startName = args[1]
		var ok bool
		if start, ok = g.resolveRev(args[1]); !ok {
			return g.fatal("not a valid object name: '%s'", args[1])
		}
	} else if head.IsZero() {
		return g.fatal("not a valid object name: '%s'", startName)
	}
	if _, exists := hashes[n]; exists && !force {
		return g.fatal("a branch named '%s' already exists", n)
	}
	if err := g.st.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(n), start)); err != nil {
		return g.fatal("%v", err)
	}
	return 0
}

// gitTag is "git tag".
func gitTag(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	annotate, del, list, force := false, false, false, false
	var msgs []string
	for _, o := range opts {
		switch o.Key {
		case "annotate":
			annotate = true
		case "message":
			msgs = append(msgs, o.Value)
			annotate = true
		case "delete":
			del = true
		case "list":
			list = true
		case "force":
			force = true
		}
	}
	names, hashes := g.refNames("refs/tags/")
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	switch {
	case del:
		status := 0
		for _, n := range args {
			h, ok := hashes[n]
			if !ok {
				status = g.errorf(1, "tag '%s' not found.", n)
				continue
			}
			g.st.RemoveReference(plumbing.NewTagReferenceName(n))
			fmt.Fprintf(w, "Deleted tag '%s' (was %s)\n", n, g.short(h))
		}
		return status
	case list || len(args) == 0:
		for _, n := range names {
			if len(args) > 0 {
				m := false
				for _, p := range args {
					if ok, _ := path.Match(p, n); ok {
						m = true
					}
				}
				if !m {
					continue
				}
			}
			fmt.Fprintln(w, n)
		}
		return 0
	}
	if annotate && len(msgs) == 0 {
		return g.c.Fail("git tag -a without -m (needs an editor)")
	}
	if len(args) > 2 {
		return g.fatal("too many arguments")
	}
	n := args[0]
	if !gitValidRefName(n) {
		return g.fatal("'%s' is not a valid tag name.", n)
	}
	if _, exists := hashes[n]; exists && !force {
		return g.fatal("tag '%s' already exists", n)
	}
	rev := "HEAD"
	if len(args) == 2 {
		rev = args[1]
	}
	target, ok := g.resolveRev(rev)
	if !ok {
		return g.fatal("Failed to resolve '%s' as a valid ref.", rev)
	}
	h := target
	if annotate {
		tagger, err := g.signature("COMMITTER")
		if err != nil {
			return g.c.Fail("git tag: " + err.Error())
		}
		t := &object.Tag{Name: n, Tagger: tagger, Message: gitCleanMessage(strings.Join(msgs, "\n\n")),
			TargetType: plumbing.CommitObject, Target: target}
		o := g.st.NewEncodedObject()
		if err := t.Encode(o); err != nil {
			return g.fatal("encode tag: %v", err)
		}
		if h, err = g.st.SetEncodedObject(o); err != nil {
			return g.fatal("write tag: %v", err)
		}
	}
	if err := g.st.SetReference(plumbing.NewHashReference(plumbing.NewTagReferenceName(n), h)); err != nil {
		return g.fatal("%v", err)
	}
	return 0
}

// gitRevParse is "git rev-parse".
func gitRevParse(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	short, shortLen, abbrevRef, verify, quiet := false, 0, false, false, false
	for _, o := range opts {
		switch o.Key {
		case "short":
			short, shortLen = true, 0
			if o.HasArg {
				fmt.Sscan(o.Value, &shortLen)
				shortLen = max(4, min(40, shortLen))
			}
		case "abbrev-ref":
			abbrevRef = true
		case "verify":
			verify = true
		case "quiet":
			quiet = true
		case "show-toplevel":
			fmt.Fprintln(w, g.top)
		case "git-dir":
			if path.Clean(g.dir) == g.top {
				fmt.Fprintln(w, ".git")
			} else {
				fmt.Fprintln(w, g.top+"/.git")
			}
		case "absolute-git-dir":
			fmt.Fprintln(w, g.top+"/.git")
		case "is-inside-work-tree":
			fmt.Fprintln(w, "true")
		case "is-bare-repository":
			fmt.Fprintln(w, "false")
		case "show-prefix":
			if p := g.prefix(); p != "" {
				fmt.Fprintln(w, p+"/")
			} else {
				fmt.Fprintln(w)
			}
		case "show-cdup":
			p := g.prefix()
			if p == "" {
				fmt.Fprintln(w)
			} else {
				fmt.Fprintln(w, strings.Repeat("../", strings.Count(p, "/")+1))
			}
		}
	}
	if verify && len(args) != 1 {
		if quiet {
			return 1
		}
		return g.fatal("Needed a single revision")
	}
	for _, a := range args {
		if abbrevRef {
			if a == "HEAD" {
				cur, h, detached, _ := g.headRef()
				if detached {
					fmt.Fprintln(w, "HEAD")
					continue
				}
				if h.IsZero() {
					w.Flush()
					fmt.Fprintf(g.c.Stderr, "fatal: ambiguous argument 'HEAD': unknown revision or path not in the working tree.\n")
					fmt.Fprintln(g.c.Stdout, "HEAD")
					return 128
				}
				fmt.Fprintln(w, strings.TrimPrefix(string(cur), "refs/heads/"))
				continue
			}
			if _, ok := g.resolveRev(a); ok && !strings.ContainsAny(a, "~^") && !gitIsHex(a) {
				fmt.Fprintln(w, strings.TrimPrefix(strings.TrimPrefix(a, "refs/heads/"), "refs/tags/"))
				continue
			}
		}
		// An annotated tag names itself: rev-parse does not peel.
		h, why := g.lookupObject(a)
		if why == "refuse" {
			return g.c.Fail("git rev-parse " + a)
		}
		if ok := why == ""; !ok {
			w.Flush()
			if verify {
				if quiet {
					return 1
				}
				return g.fatal("Needed a single revision")
			}
			fmt.Fprintln(g.c.Stdout, a)
			fmt.Fprintf(g.c.Stderr, "fatal: ambiguous argument '%s': unknown revision or path not in the working tree.\n"+
				"Use '--' to separate paths from revisions, like this:\n'git <command> [<revision>...] -- [<file>...]'\n", a)
			return 128
		}
		if short {
			fmt.Fprintln(w, g.shortN(h, shortLen))
		} else {
			fmt.Fprintln(w, h.String())
		}
	}
	return 0
}

// gitLsFiles is "git ls-files".
func gitLsFiles(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	cached, modified, deleted, others, exclude, stage := false, false, false, false, false, false
	for _, o := range opts {
		switch o.Key {
		case "cached":
			cached = true
		case "modified":
			modified = true
		case "deleted":
			deleted = true
		case "others":
			others = true
		case "exclude-standard":
			exclude = true
		case "stage":
			stage = true
		default:
			return g.c.Fail("git ls-files " + o.Name)
		}
	}
	if !modified && !deleted && !others {
		cached = true
	}
	var specs []string
	for _, a := range args {
		if strings.ContainsAny(a, "*?[") {
			return g.c.Fail("git ls-files with a glob pathspec")
		}
		sp, ok := g.pathspec(a)
		if !ok {
			return g.fatal("%s: '%s' is outside repository at '%s'", a, a, g.top)
		}
		specs = append(specs, sp)
	}
	if len(specs) == 0 {
		specs = []string{g.prefix()}
	}
	match := func(p string) bool {
		for _, sp := range specs {
			if gitUnder(p, sp) {
				return true
			}
		}
		return false
	}
	g.noIgnore = !exclude
	s, err := g.scan(ctx, "all")
	if err != nil {
		return g.fatal("%v", err)
	}
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	for _, e := range s.idx.Entries {
		if !match(e.Name) {
			continue
		}
		name := gitQuotePath(g.rel(e.Name))
		if cached {
			if stage {
				fmt.Fprintf(w, "%06o %s %d\t%s\n", uint32(e.Mode), e.Hash, e.Stage, name)
			} else {
				fmt.Fprintln(w, name)
			}
		}
		if deleted && s.unstaged[e.Name] == 'D' {
			fmt.Fprintln(w, name)
		}
		if modified && s.unstaged[e.Name] != 0 {
			fmt.Fprintln(w, name)
		}
	}
	if others {
		for _, p := range s.untracked {
			if match(p) {
				fmt.Fprintln(w, gitQuotePath(gitRelDir(g.rel, p)))
			}
		}
	}
	return 0
}

// listBranches prints git branch's list: the local branches (and the
// detached HEAD) matching the patterns, with -v each one's abbreviated
// commit and subject in a column. Remote-tracking branches (-a, -r) and
// upstreams (whose ahead/behind counts -v prints) are refused when any
// exist, so -a is the local list and -r an empty one.
func (g *gitCtx) listBranches(w *bufio.Writer, names []string, hashes map[string]plumbing.Hash, patterns []string, verbose, all, remotes bool,
	curName string, head plumbing.Hash, detached bool) int {
	if all || remotes {
		if rn, _ := g.refNames("refs/remotes/"); len(rn) > 0 {
			return g.c.Fail("git branch -a/-r with remote-tracking branches")
		}
		if remotes {
			return 0
		}
	}
	var res []*regexp.Regexp
	for _, p := range patterns {
		re, ok := gitGlobRegexp(p)
		if !ok {
			return g.c.Fail("git branch --list pattern " + p)
		}
		res = append(res, re)
	}
	if detached && len(res) > 0 {
		return g.c.Fail("git branch --list with patterns on a detached HEAD")
	}
	type row struct {
		cur  bool
		name string
		h    plumbing.Hash
	}
	var rows []row
	if detached {
		rows = append(rows, row{true, "(HEAD detached at " + g.short(head) + ")", head})
	}
	for _, n := range names {
		if len(res) > 0 && !slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(n) }) {
			continue
		}
		rows = append(rows, row{n == curName && !detached, n, hashes[n]})
	}
	width := 0
	for _, r := range rows {
		if verbose && !strings.HasPrefix(r.name, "(") {
			if _, set := g.config("branch." + r.name + ".merge"); set {
				return g.c.Fail("git branch -v with an upstream branch")
			}
		}
		width = max(width, len(r.name))
	}
	for _, r := range rows {
		mark := ' '
		if r.cur {
			mark = '*'
		}
		if !verbose {
			fmt.Fprintf(w, "%c %s\n", mark, r.name)
			continue
		}
		cm, err := object.GetCommit(g.st, r.h)
		if err != nil {
			return g.fatal("%v", err)
		}
		fmt.Fprintf(w, "%c %-*s %s %s\n", mark, width, r.name, g.short(r.h), gitSubject(cm.Message))
	}
	return 0
}

// gitGlobRegexp turns a --list pattern of literal characters, * and ?
// into a regexp; * matches / as well (wildmatch without WM_PATHNAME).
func gitGlobRegexp(p string) (*regexp.Regexp, bool) {
	if strings.ContainsAny(p, "[\\") {
		return nil, false
	}
	var sb strings.Builder
	sb.WriteString("^")
	for _, r := range p {
		switch r {
		case '*':
			sb.WriteString(".*")
		case '?':
			sb.WriteString(".")
		default:
			sb.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	sb.WriteString("$")
	re, err := regexp.Compile(sb.String())
	return re, err == nil
}
