package tools

import (
	"bufio"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// This file implements "git describe" and "git shortlog -s".

var (
	gitDescribeOpts = NewOptions("tags", "always", "dirty", "abbrev=", "long")
	gitShortlogOpts = NewOptions("s,summary", "n,numbered", "e,email", "c,committer", "all")
)

// gitDescribe names a commit after the nearest tag on its first-parent
// line: TAG when tagged, else TAG-N-gABBREV. Git counts every commit the
// tag does not reach, so a merge between the commit and the tag (whose
// other side adds to N) is refused, as are several tags on the one commit
// (git's choice among them), a tag whose object names it otherwise, and
// --dirty without a commit argument is the only dirty form.
func gitDescribe(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	tags, always, dirty, long, abbrev := false, false, false, false, -1
	for _, o := range opts {
		switch o.Key {
		case "tags":
			tags = true
		case "always":
			always = true
		case "dirty":
			dirty = true
		case "long":
			long = true
		case "abbrev":
			n, err := strconv.Atoi(o.Value)
			if err != nil || n < 0 {
				return g.c.Fail("git describe --abbrev=" + o.Value)
			}
			abbrev = n
			if n > 0 && n < 4 {
				abbrev = 4
			}
		}
	}
	if len(args) > 1 || dirty && len(args) > 0 {
		return g.c.Fail("git describe of several commits or --dirty with a commit")
	}
	var start plumbing.Hash
	if len(args) == 1 {
		h, ok := g.resolveRev(args[0])
		if !ok {
			return g.fatal("Not a valid object name %s", args[0])
		}
		start = h
	} else {
		_, h, _, err := g.headRef()
		if err != nil || h.IsZero() {
			return g.fatal("Not a valid object name HEAD")
		}
		start = h
	}
	// Eligible tags by the commit they peel to.
	byCommit := map[plumbing.Hash][]string{}
	anyTag, anyLight := false, false
	refs, _ := g.refNames("refs/tags/")
	_, hashes := g.refNames("refs/tags/")
	for _, n := range refs {
		h := hashes[n]
		anyTag = true
		t, err := object.GetTag(g.st, h)
		annotated := err == nil
		if annotated && t.Name != n {
			return g.c.Fail("git describe with tag " + n + " named " + t.Name + " in its object")
		}
		if !annotated {
			anyLight = true
			if !tags {
				continue
			}
		}
		c := g.peel(h)
		byCommit[c] = append(byCommit[c], n)
	}
	suffix := ""
	if dirty {
		s, err := g.scan(ctx, "no")
		if err != nil {
			return g.fatal("%v", err)
		}
		if len(s.staged)+len(s.unstaged) > 0 {
			suffix = "-dirty"
		}
	}
	short := func(h plumbing.Hash) string {
		if abbrev >= 0 {
			if abbrev == 0 {
				return ""
			}
			return g.shortN(h, abbrev)
		}
		return g.short(h)
	}
	h, depth := start, 0
	for {
		if ctx.Err() != nil {
			return 130
		}
		if names := byCommit[h]; len(names) > 0 {
			if len(names) > 1 {
				return g.c.Fail("git describe of a commit with several tags")
			}
			switch {
			case depth == 0 && !long || abbrev == 0:
				fmt.Fprintln(g.c.Stdout, names[0]+suffix)
			default:
				fmt.Fprintf(g.c.Stdout, "%s-%d-g%s%s\n", names[0], depth, short(start), suffix)
			}
			return 0
		}
		cm, err := object.GetCommit(g.st, h)
		if err != nil {
			return g.fatal("%v", err)
		}
		if len(cm.ParentHashes) > 1 {
			return g.c.Fail("git describe through a merge")
		}
		if len(cm.ParentHashes) == 0 {
			break
		}
		h, depth = cm.ParentHashes[0], depth+1
	}
	if always {
		if abbrev == 0 {
			// --abbrev=0 still prints the name in full here.
			return g.c.Fail("git describe --always --abbrev=0")
		}
		fmt.Fprintln(g.c.Stdout, short(start)+suffix)
		return 0
	}
	switch {
	case !anyTag:
		return g.fatal("No names found, cannot describe anything.")
	case !tags && anyLight && len(byCommit) == 0:
		return g.fatal("No annotated tags can describe '%s'.\nHowever, there were unannotated tags: try --tags.", start)
	}
	return g.fatal("No tags can describe '%s'.\nTry --always, or create some tags.", start)
}

// gitShortlog is "git shortlog [-s] [-n] [-e] [-c] REV...": commits per
// author (or committer) over the commits log would list, counted with
// -s, else with their subjects, oldest first. Without a revision git
// reads a log from standard input when it is not a terminal: refused.
func gitShortlog(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	summary, numbered, email, committer, all := false, false, false, false, false
	for _, o := range opts {
		switch o.Key {
		case "summary":
			summary = true
		case "numbered":
			numbered = true
		case "email":
			email = true
		case "committer":
			committer = true
		case "all":
			all = true
		}
	}
	if _, err := g.c.FS.Lstat(g.top + "/.mailmap"); err == nil {
		return g.c.Fail("git shortlog with a .mailmap")
	}
	for _, k := range []string{"mailmap.file", "mailmap.blob"} {
		if _, set := g.config(k); set {
			return g.c.Fail("git shortlog with " + k)
		}
	}
	rw, code := g.parseRevWalk(args)
	if code != 0 {
		return code
	}
	if all {
		g.addAll(rw)
	}
	if len(rw.pos)+len(rw.sym) == 0 && !rw.limited() {
		return g.c.Fail("git shortlog without a revision (reads standard input)")
	}
	list, code := g.walkCommits(ctx, rw, &gitLogSettings{max: -1})
	if code != 0 {
		return code
	}
	// Each author's subjects, newest first as walked.
	subjects := map[string][]string{}
	for _, cm := range list {
		sig := cm.Author
		if committer {
			sig = cm.Committer
		}
		k := sig.Name
		if email {
			k += " <" + sig.Email + ">"
		}
		subjects[k] = append(subjects[k], gitShortlogSubject(cm.Message))
	}
	names := make([]string, 0, len(subjects))
	for k := range subjects {
		names = append(names, k)
	}
	sort.Strings(names)
	if numbered {
		sort.SliceStable(names, func(i, j int) bool { return len(subjects[names[i]]) > len(subjects[names[j]]) })
	}
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	for _, k := range names {
		ss := subjects[k]
		if summary {
			fmt.Fprintf(w, "%6d\t%s\n", len(ss), k)
			continue
		}
		fmt.Fprintf(w, "%s (%d):\n", k, len(ss))
		for i := len(ss) - 1; i >= 0; i-- {
			fmt.Fprintf(w, "      %s\n", ss[i])
		}
		w.WriteString("\n")
	}
	return 0
}

// gitShortlogSubject is a commit's subject as shortlog lists it: without
// leading blanks and a leading "[PATCH...]".
func gitShortlogSubject(msg string) string {
	s := strings.TrimLeft(gitSubject(msg), " \t\n\v\f\r")
	if strings.HasPrefix(s, "[PATCH") {
		if i := strings.IndexByte(s, ']'); i >= 0 {
			s = strings.TrimLeft(s[i+1:], " \t\v\f\r")
		}
	}
	return s
}
