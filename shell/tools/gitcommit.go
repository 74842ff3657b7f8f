package tools

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// This file implements "git commit": the tree is written from the index,
// the commit object from -m messages and the configured identities, and
// the summary printed as git prints it.

var gitCommitOpts = NewOptions("m,message=", "a,all", "allow-empty", "amend", "q,quiet", "allow-empty-message", "no-verify", "n", "no-edit")

// gitIndexFiles maps the index to path -> entry.
func gitIndexFiles(idx *index.Index) map[string]gitTreeEntry {
	out := make(map[string]gitTreeEntry, len(idx.Entries))
	for _, e := range idx.Entries {
		out[e.Name] = gitTreeEntry{hash: e.Hash, mode: uint32(e.Mode)}
	}
	return out
}

// writeTree stores the trees for the index entries and returns the root.
// Trees the cache tree already records as valid exist and are not
// written again.
func (g *gitCtx) writeTree(idx *index.Index) (plumbing.Hash, error) {
	gitSortEntries(idx.Entries)
	known := gitValidTrees(idx.Cache)
	if g.written == nil {
		g.written = map[plumbing.Hash]bool{}
	}
	var write func(n *gitTreeNode) error
	write = func(n *gitTreeNode) error {
		if known[n.hash] || g.written[n.hash] {
			return nil
		}
		for _, c := range n.subs {
			if err := write(c); err != nil {
				return err
			}
		}
		o := g.st.NewEncodedObject()
		o.SetType(plumbing.TreeObject)
		o.SetSize(int64(len(n.data)))
		w, err := o.Writer()
		if err != nil {
			return fmt.Errorf("write tree: %w", err)
		}
		if _, err := w.Write(n.data); err != nil {
			return fmt.Errorf("write tree: %w", err)
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("write tree: %w", err)
		}
		h, err := g.st.SetEncodedObject(o)
		if err != nil {
			return fmt.Errorf("write tree: %w", err)
		}
		if h != n.hash {
			return fmt.Errorf("write tree: stored %s as %s", n.hash, h)
		}
		g.written[h] = true
		return nil
	}
	root := gitBuildTrees(idx.Entries, true)
	if err := write(root); err != nil {
		return plumbing.ZeroHash, err
	}
	return root.hash, nil
}

// gitCleanMessage applies git's "whitespace" cleanup: trailing spaces
// stripped, blank runs collapsed, leading/trailing blank lines dropped.
func gitCleanMessage(msg string) string {
	var out []string
	blank := false
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimRight(l, " \t\r\v\f")
		if l == "" {
			blank = len(out) > 0
			continue
		}
		if blank {
			out = append(out, "")
			blank = false
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}

// gitSubject is git's %s: the first paragraph's lines joined with spaces.
func gitSubject(msg string) string {
	para, _, _ := strings.Cut(strings.TrimLeft(msg, "\n"), "\n\n")
	lines := strings.Split(strings.TrimRight(para, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, " ")
}

// gitCommit is "git commit".
func gitCommit(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	var msgs []string
	all, allowEmpty, amend, quiet, hasMsg, allowEmptyMsg := false, false, false, false, false, false
	for _, o := range opts {
		switch o.Key {
		case "message":
			msgs = append(msgs, o.Value)
			hasMsg = true
		case "all":
			all = true
		case "allow-empty":
			allowEmpty = true
		case "amend":
			amend = true
		case "quiet":
			quiet = true
		case "allow-empty-message":
			allowEmptyMsg = true
		case "no-verify", "n", "no-edit":
		}
	}
	if len(args) != 0 {
		return g.c.Fail("git commit with pathspecs")
	}
	if !hasMsg && !amend {
		return g.c.Fail("git commit without -m (needs an editor)")
	}
	for _, o := range opts {
		if o.Key == "no-edit" && !amend {
			return g.c.Fail("git commit --no-edit without --amend")
		}
	}
	branch, head, detached, err := g.headRef()
	if err != nil {
		return g.fatal("%v", err)
	}
	var parents []plumbing.Hash
	var old *object.Commit
	if amend {
		if head.IsZero() {
			return g.fatal("You have nothing to amend.")
		}
		if old, err = object.GetCommit(g.st, head); err != nil {
			return g.fatal("%v", err)
		}
		parents = old.ParentHashes
		if !hasMsg {
			msgs = []string{old.Message}
		}
	} else if !head.IsZero() {
		parents = []plumbing.Hash{head}
	}
	s, err := g.scan(ctx, "normal")
	if err != nil {
		return g.fatal("%v", err)
	}
	if all {
		if err := g.stageChanges(s, []string{""}, false); err != nil {
			return g.fatal("%v", err)
		}
		if s, err = g.rescan(ctx, s); err != nil {
			return g.fatal("%v", err)
		}
	}
	msg := gitCleanMessage(strings.Join(msgs, "\n\n"))
	if msg == "" && !allowEmptyMsg {
		fmt.Fprintln(g.c.Stderr, "Aborting commit due to empty commit message.")
		return 1
	}
	var parentTree map[string]gitTreeEntry
	if len(parents) > 0 {
		if parentTree, err = g.flatTree(parents[0]); err != nil {
			return g.fatal("%v", err)
		}
	} else {
		parentTree = map[string]gitTreeEntry{}
	}
	chs := gitTreeChanges(parentTree, gitIndexFiles(s.idx), true)
	if len(chs) == 0 && !allowEmpty && !amend {
		w := bufio.NewWriter(g.c.Stdout)
		g.printLongAs(w, s, "normal", "Initial commit")
		w.Flush()
		return 1
	}
	author, err := g.signature("AUTHOR")
	if err != nil {
		return g.c.Fail("git commit: " + err.Error())
	}
	committer, err := g.signature("COMMITTER")
	if err != nil {
		return g.c.Fail("git commit: " + err.Error())
	}
	if amend {
		author = old.Author
	}
	tree, err := g.writeTree(s.idx)
	if err != nil {
		return g.fatal("%v", err)
	}
	cm := &object.Commit{Author: author, Committer: committer, Message: msg, TreeHash: tree, ParentHashes: parents}
	o := g.st.NewEncodedObject()
	if err := cm.Encode(o); err != nil {
		return g.fatal("encode commit: %v", err)
	}
	h, err := g.st.SetEncodedObject(o)
	if err != nil {
		return g.fatal("write commit: %v", err)
	}
	if err := g.saveIndex(s.idx); err != nil {
		return g.fatal("%v", err)
	}
	target := branch
	if detached {
		target = plumbing.HEAD
	}
	if err := g.st.SetReference(plumbing.NewHashReference(target, h)); err != nil {
		return g.fatal("update %s: %v", target, err)
	}
	if quiet {
		return 0
	}
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	name := strings.TrimPrefix(string(branch), "refs/heads/")
	if detached {
		name = "detached HEAD"
	}
	if head.IsZero() {
		name += " (root-commit)"
	}
	fmt.Fprintf(w, "[%s %s] %s\n", name, g.short(h), gitSubject(msg))
	if author.Name != committer.Name || author.Email != committer.Email {
		fmt.Fprintf(w, " Author: %s <%s>\n", author.Name, author.Email)
	}
	if amend {
		fmt.Fprintf(w, " Date: %s\n", gitDate(author.When))
	}
	for i := range chs {
		if err := g.load(&chs[i], nil); err != nil {
			return g.fatal("%v", err)
		}
	}
	if len(chs) > 0 {
		rows := g.statRows(ctx, chs)
		add, del := 0, 0
		for _, r := range rows {
			if r.add > 0 {
				add += r.add
			}
			if r.del > 0 {
				del += r.del
			}
		}
		gitWriteSummary(w, len(rows), add, del)
		gitWriteSummaryModes(w, chs)
	}
	return 0
}

// rescan recomputes the staged set after the index changed in memory.
func (g *gitCtx) rescan(ctx context.Context, s *gitScan) (*gitScan, error) {
	if err := g.saveIndex(s.idx); err != nil {
		return nil, err
	}
	return g.scan(ctx, "normal")
}
