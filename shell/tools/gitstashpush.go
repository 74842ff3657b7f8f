package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// This file implements "git stash push" (and the older "save"). A stash
// is git's: an index commit "index on BRANCH: ..." (the index's tree, on
// HEAD), with -u an untracked commit "untracked files on BRANCH: ..."
// (no parent), and the WIP commit on HEAD, the index commit and the
// untracked one, whose tree is the index with the worktree's version of
// every tracked file that differs from HEAD. refs/stash points at it and
// its reflog lists the stashes. Then the worktree is reset to HEAD, and
// with -u cleaned as "git clean -d" does.

// gitStashPush is "git stash [push|save]".
func gitStashPush(ctx context.Context, g *gitCtx, action string, opts []Opt, ops []string) int {
	var msg string
	quiet, untracked, keepIndex := false, false, false
	for _, o := range opts {
		switch o.Key {
		case "message":
			msg = o.Value
		case "quiet":
			quiet = true
		case "include-untracked":
			untracked = true
		case "keep-index":
			keepIndex = true
		case "no-keep-index":
			keepIndex = false
		}
	}
	if action == "save" && len(ops) > 0 {
		msg = strings.Join(ops, " ")
	} else if len(ops) > 0 {
		return g.c.Fail("git stash push with pathspecs")
	}
	branch, head, detached, err := g.headRef()
	if err != nil {
		return g.fatal("%v", err)
	}
	if head.IsZero() {
		if !quiet {
			fmt.Fprintln(g.c.Stderr, "You do not have the initial commit yet")
		}
		return 1
	}
	umode := "no"
	if untracked {
		umode = "all"
		if g.globalExcludes() {
			// The scan reads .gitignore files and info/exclude only.
			return g.c.Fail("git stash -u with a global excludes file")
		}
	}
	s, err := g.scanHead(ctx, umode)
	if err != nil {
		return g.fatal("%v", err)
	}
	if why := gitStashUnsupportedIndex(s.idx); why != "" {
		return g.c.Fail("git stash with " + why)
	}
	for _, p := range s.untracked {
		if strings.HasSuffix(p, "/") {
			return g.c.Fail("git stash -u with a nested repository")
		}
	}
	if len(s.staged) == 0 && len(s.unstaged) == 0 && len(s.untracked) == 0 {
		if !quiet {
			fmt.Fprintln(g.c.Stdout, "No local changes to save")
		}
		return 0
	}
	// Everything that could refuse is decided before the first object.
	short := g.short(head)
	author, aerr := g.signature("AUTHOR")
	committer, cerr := g.signature("COMMITTER")
	if aerr != nil || cerr != nil {
		// Git falls back to an identity of its own here ("git stash").
		return g.c.Fail("git stash without a configured identity")
	}
	wFiles, err := g.stashWorktree(s)
	if errors.Is(err, errGitRefuse) {
		return g.c.Fail("git stash: " + gitRefusal(err))
	}
	if err != nil {
		return g.fatal("%v", err)
	}
	return g.stashSave(ctx, &gitStashParts{scan: s, w: wFiles, withU: untracked}, gitStashHow{
		branch: branch, head: head, short: short, detached: detached, msg: msg,
		author: author, committer: committer, quiet: quiet, keepIndex: keepIndex,
	})
}

// globalExcludes reports whether git would read ignore patterns from
// core.excludesFile or its default, $XDG_CONFIG_HOME/git/ignore.
func (g *gitCtx) globalExcludes() bool {
	if _, set := g.config("core.excludesfile"); set {
		return true
	}
	xdg := g.c.Getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		home := g.c.Getenv("HOME")
		if home == "" {
			return true
		}
		xdg = home + "/.config"
	}
	_, err := g.c.FS.Lstat(xdg + "/git/ignore")
	return !errors.Is(err, fs.ErrNotExist)
}

// errGitRefuse marks a state the isolate tier does not handle: the
// command goes to a container.
var errGitRefuse = errors.New("refused")

// gitRefusal is the reason an errGitRefuse error gives.
func gitRefusal(err error) string {
	return strings.TrimPrefix(err.Error(), errGitRefuse.Error()+": ")
}

// gitStashUnsupportedIndex names what in idx the stash code does not
// handle, or "".
func gitStashUnsupportedIndex(idx *index.Index) string {
	for _, e := range idx.Entries {
		switch {
		case e.Stage != 0:
			return "unmerged paths"
		case e.IntentToAdd:
			return "intent-to-add entries"
		case e.SkipWorktree:
			return "skip-worktree entries"
		case e.Mode == filemode.Submodule:
			return "submodules"
		}
	}
	return ""
}

// stashWorktree computes the WIP tree's files, as git does with
// "diff-index HEAD" fed to "update-index --add --remove" on a copy of the
// index: every tracked path (in the index or HEAD) whose worktree file
// differs from HEAD takes the worktree's content, or goes when the file
// is gone; but a path added to the index and then deleted from the
// worktree keeps its index entry, since diff-index does not report it.
// Blobs of changed files are written.
func (g *gitCtx) stashWorktree(s *gitScan) (map[string]gitTreeEntry, error) {
	out := map[string]gitTreeEntry{}
	inIndex := map[string]bool{}
	// First every path's state (which may refuse), then the blobs.
	take := map[string]fs.FileInfo{}
	for _, e := range s.idx.Entries {
		inIndex[e.Name] = true
		fi, err := g.lstatWork(e.Name)
		switch {
		case err != nil:
			return nil, err
		case fi == nil:
			if _, ok := s.head[e.Name]; !ok {
				out[e.Name] = gitTreeEntry{hash: e.Hash, mode: uint32(e.Mode)}
			}
		case s.unstaged[e.Name] == 0:
			out[e.Name] = gitTreeEntry{hash: e.Hash, mode: uint32(e.Mode)}
		default:
			take[e.Name] = fi
		}
	}
	for p := range s.head {
		if inIndex[p] {
			continue
		}
		fi, err := g.lstatWork(p)
		if err != nil {
			return nil, err
		}
		if fi != nil {
			take[p] = fi
		}
	}
	for p, fi := range take {
		data, err := g.readWork(p, fi)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		h, err := g.writeBlob(data)
		if err != nil {
			return nil, err
		}
		out[p] = gitTreeEntry{hash: h, mode: uint32(gitWorktreeMode(fi))}
	}
	return out, nil
}

// lstatWork stats worktree path p: nil when there is nothing there, an
// errGitRefuse error when it is not a file or symlink (a directory where
// git tracks a file).
func (g *gitCtx) lstatWork(p string) (fs.FileInfo, error) {
	fi, err := g.c.FS.Lstat(g.top + "/" + p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0 {
		return nil, fmt.Errorf("%w: %s, not a file, where a file is tracked", errGitRefuse, p)
	}
	return fi, nil
}

// gitStashParts is what a stash records, before it is written: the scan
// (HEAD, index, untracked files), the WIP tree's files and whether the
// untracked files go in.
type gitStashParts struct {
	scan  *gitScan
	w     map[string]gitTreeEntry
	withU bool
}

// gitStashHow is how a stash is saved: names, identities and options.
type gitStashHow struct {
	branch            plumbing.ReferenceName
	head              plumbing.Hash
	short             string // head abbreviated as git does
	detached          bool
	msg               string // -m's, or "" for "WIP on ..."
	author, committer object.Signature
	quiet, keepIndex  bool
}

// stashSave writes the stash's objects, refs/stash and its reflog, then
// resets the worktree.
func (g *gitCtx) stashSave(ctx context.Context, p *gitStashParts, how gitStashHow) int {
	indexFiles := gitIndexFiles(p.scan.idx)
	w, msg, err := g.stashCommits(p, how)
	if err != nil {
		return g.fatal("%v", err)
	}
	if err := g.pushStash(w, msg, how.committer); err != nil {
		return g.fatal("%v", err)
	}
	if !how.quiet {
		fmt.Fprintf(g.c.Stdout, "Saved working directory and index state %s\n", msg)
	}
	// git reset --hard
	if err := g.moveTo(ctx, p.scan, p.scan.head, p.scan.head, true); err != nil {
		return g.fatal("%v", err)
	}
	if p.withU {
		if err := g.cleanUntracked(p.scan.untracked, p.scan.head); err != nil {
			return g.fatal("%v", err)
		}
	}
	if how.keepIndex {
		// git checkout --no-overlay INDEX-TREE -- .
		s, err := g.scanHead(ctx, "no")
		if err != nil {
			return g.fatal("%v", err)
		}
		if err := g.moveTo(ctx, s, s.head, indexFiles, true); err != nil {
			return g.fatal("%v", err)
		}
	}
	return 0
}

// stashCommits writes the index commit, the untracked one and the WIP
// commit; it returns the last and its message.
func (g *gitCtx) stashCommits(p *gitStashParts, how gitStashHow) (plumbing.Hash, string, error) {
	name := strings.TrimPrefix(string(how.branch), "refs/heads/")
	if how.detached {
		name = "(no branch)"
	}
	subject, err := g.commitSubject(how.head)
	if err != nil {
		return plumbing.ZeroHash, "", err
	}
	on := fmt.Sprintf("%s: %s %s", name, how.short, subject)
	iTree, err := g.writeTree(p.scan.idx)
	if err != nil {
		return plumbing.ZeroHash, "", err
	}
	iCommit, err := g.writeCommit(iTree, []plumbing.Hash{how.head}, "index on "+on+"\n", how)
	if err != nil {
		return plumbing.ZeroHash, "", err
	}
	parents := []plumbing.Hash{how.head, iCommit}
	if p.withU {
		uTree, err := g.stashUntrackedTree(p.scan)
		if err != nil {
			return plumbing.ZeroHash, "", err
		}
		// Made even when there is no untracked file: its tree is empty.
		uCommit, err := g.writeCommit(uTree, nil, "untracked files on "+on+"\n", how)
		if err != nil {
			return plumbing.ZeroHash, "", err
		}
		parents = append(parents, uCommit)
	}
	wTree, err := g.writeFilesTree(p.w)
	if err != nil {
		return plumbing.ZeroHash, "", err
	}
	// The message is stored as given, without a final newline.
	msg := "WIP on " + on
	if how.msg != "" {
		msg = "On " + name + ": " + how.msg
	}
	w, err := g.writeCommit(wTree, parents, msg, how)
	return w, msg, err
}

// stashUntrackedTree stores the untracked files of s and their tree.
func (g *gitCtx) stashUntrackedTree(s *gitScan) (plumbing.Hash, error) {
	u := map[string]gitTreeEntry{}
	for _, p := range s.untracked {
		fi := s.wt[p]
		data, err := g.readWork(p, fi)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read %s: %w", p, err)
		}
		h, err := g.writeBlob(data)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		u[p] = gitTreeEntry{hash: h, mode: uint32(gitWorktreeMode(fi))}
	}
	return g.writeFilesTree(u)
}

// writeCommit stores a commit of how's identities.
func (g *gitCtx) writeCommit(tree plumbing.Hash, parents []plumbing.Hash, msg string, how gitStashHow) (plumbing.Hash, error) {
	cm := &object.Commit{Author: how.author, Committer: how.committer, Message: msg, TreeHash: tree, ParentHashes: parents}
	o := g.st.NewEncodedObject()
	if err := cm.Encode(o); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode commit: %w", err)
	}
	h, err := g.st.SetEncodedObject(o)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write commit: %w", err)
	}
	return h, nil
}

// writeFilesTree stores the trees of a set of files and returns the root.
func (g *gitCtx) writeFilesTree(files map[string]gitTreeEntry) (plumbing.Hash, error) {
	idx := &index.Index{Version: 2}
	for p, te := range files {
		idx.Entries = append(idx.Entries, &index.Entry{Name: p, Hash: te.hash, Mode: filemode.FileMode(te.mode)})
	}
	return g.writeTree(idx)
}

// pushStash points refs/stash at w and adds its reflog line.
func (g *gitCtx) pushStash(w plumbing.Hash, msg string, who object.Signature) error {
	lines, err := g.readReflog(gitStashRef)
	if err != nil {
		return err
	}
	old := plumbing.ZeroHash
	if r, err := g.st.Reference(gitStashRef); err == nil && r.Type() == plumbing.HashReference {
		old = r.Hash()
	}
	lines = append(lines, gitReflogLine{old: old, new: w, rest: gitReflogWho(who) + "\t" + gitReflogMsg(msg)})
	if err := g.st.SetReference(plumbing.NewHashReference(gitStashRef, w)); err != nil {
		return fmt.Errorf("update refs/stash: %w", err)
	}
	return g.writeReflog(gitStashRef, lines)
}

// cleanUntracked is "git clean -d" after a stash -u: the stashed
// untracked files go (those HEAD tracks again after the reset stay), then
// every directory left empty that is neither ignored nor the top.
func (g *gitCtx) cleanUntracked(files []string, head map[string]gitTreeEntry) error {
	for _, p := range files {
		if _, tracked := head[p]; tracked {
			continue
		}
		if err := g.c.FS.Remove(g.top + "/" + p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", p, err)
		}
	}
	var ps []gitignore.Pattern
	if b, err := g.readFile(g.top + "/.git/info/exclude"); err == nil {
		ps = gitParseIgnore(b, nil)
	}
	_, err := g.removeEmptyDirs("", nil, ps)
	return err
}

// removeEmptyDirs removes the directories below dir that hold nothing
// once their own empty directories are gone; ignored directories are
// kept. It reports whether dir itself is empty.
func (g *gitCtx) removeEmptyDirs(dir string, parts []string, ps []gitignore.Pattern) (bool, error) {
	full := g.top
	if dir != "" {
		full += "/" + dir
	}
	ents, err := g.c.FS.ReadDir(full)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", full, err)
	}
	for _, e := range ents {
		if e.Name() == ".gitignore" && !e.IsDir() {
			if b, err := g.readFile(full + "/.gitignore"); err == nil {
				ps = append(ps[:len(ps):len(ps)], gitParseIgnore(b, parts)...)
			}
		}
	}
	m := gitignore.NewMatcher(ps)
	left := 0
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || (dir == "" && name == ".git") {
			left++
			continue
		}
		sub := append(parts[:len(parts):len(parts)], name)
		if m.Match(sub, true) {
			left++
			continue
		}
		p := name
		if dir != "" {
			p = dir + "/" + name
		}
		empty, err := g.removeEmptyDirs(p, sub, ps)
		if err != nil {
			return false, err
		}
		if !empty {
			left++
			continue
		}
		if err := g.c.FS.Remove(g.top + "/" + p); err != nil {
			return false, fmt.Errorf("remove %s: %w", p, err)
		}
	}
	return left == 0, nil
}
