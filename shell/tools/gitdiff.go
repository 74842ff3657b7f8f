package tools

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// This file implements "git diff" (worktree vs index, --cached, commit vs
// worktree, commit vs commit) and "git show".

var gitDiffOpts = NewOptions("cached", "staged", "stat", "name-only", "name-status", "numstat", "U,unified=",
	"p,patch", "u", "exit-code", "quiet", "no-color", "no-ext-diff", "no-renames", "no-index")

// worktreeSide maps tracked paths to their worktree state: unchanged
// entries keep the index hash, changed ones are hashed from the file.
func (g *gitCtx) worktreeSide(s *gitScan) (map[string]gitTreeEntry, *gitSide, error) {
	out := map[string]gitTreeEntry{}
	data := map[string][]byte{}
	for _, e := range s.idx.Entries {
		switch s.unstaged[e.Name] {
		case 'D':
			continue
		case 0:
			out[e.Name] = gitTreeEntry{hash: e.Hash, mode: uint32(e.Mode)}
		default:
			fi := s.wt[e.Name]
			if fi == nil {
				var err error
				if fi, err = g.c.FS.Lstat(g.top + "/" + e.Name); err != nil {
					continue
				}
			}
			b, err := g.readWork(e.Name, fi)
			if err != nil {
				return nil, nil, err
			}
			data[e.Name] = b
			out[e.Name] = gitTreeEntry{hash: plumbing.ComputeHash(plumbing.BlobObject, b), mode: uint32(gitWorktreeMode(fi))}
		}
	}
	side := &gitSide{files: out, read: func(p string) ([]byte, error) {
		if b, ok := data[p]; ok {
			return b, nil
		}
		return g.blob(out[p].hash)
	}}
	return out, side, nil
}

// gitDiffFlags are the options of git diff that choose what it prints.
type gitDiffFlags struct {
	cached, stat, nameOnly, nameStat, numstat, exitCode, quiet, renames bool
	ctxLines                                                            int
}

// diffFlags reads git diff's options; a status other than 0 ends the
// command with it (an option value the tier refuses).
func (g *gitCtx) diffFlags(opts []Opt) (gitDiffFlags, int) {
	f := gitDiffFlags{renames: true, ctxLines: 3}
	for _, o := range opts {
		switch o.Key {
		case "cached", "staged":
			f.cached = true
		case "stat":
			f.stat = true
		case "name-only":
			f.nameOnly = true
		case "name-status":
			f.nameStat = true
		case "numstat":
			f.numstat = true
		case "unified":
			n, err := strconv.Atoi(o.Value)
			if err != nil || n < 0 {
				return f, g.c.Fail("git diff -U" + o.Value)
			}
			f.ctxLines = n
		case "exit-code":
			f.exitCode = true
		case "quiet":
			f.quiet, f.exitCode = true, true
		case "no-renames":
			f.renames = false
		}
	}
	return f, 0
}

// gitDiff is "git diff".
func gitDiff(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	f, code := g.diffFlags(opts)
	if code != 0 {
		return code
	}
	cached, stat, nameOnly, nameStat, numstat, exitCode, quiet, renames := f.cached, f.stat, f.nameOnly, f.nameStat, f.numstat, f.exitCode, f.quiet, f.renames
	ctxLines := f.ctxLines
	args, code = g.expandDots(ctx, args)
	if code != 0 {
		return code
	}
	revs, paths, code := g.splitRevs(args)
	if code != 0 {
		return code
	}
	var oldT, newT map[string]gitTreeEntry
	var side *gitSide
	var err error
	switch {
	case len(revs) > 2:
		return g.c.Fail("git diff with more than two revisions")
	case len(revs) == 2:
		if cached {
			return g.c.Fail("git diff --cached with two revisions")
		}
		if oldT, err = g.flatTree(revs[0]); err == nil {
			newT, err = g.flatTree(revs[1])
		}
	case cached:
		base := plumbing.ZeroHash
		if len(revs) == 1 {
			base = revs[0]
		} else {
			_, base, _, err = g.headRef()
		}
		if err == nil {
			if oldT, err = g.flatTree(base); err == nil {
				var s *gitScan
				if s, err = g.scan(ctx, "no"); err == nil {
					newT = gitIndexFiles(s.idx)
				}
			}
		}
	default:
		var s *gitScan
		if s, err = g.scan(ctx, "no"); err != nil {
			break
		}
		if newT, side, err = g.worktreeSide(s); err != nil {
			break
		}
		if len(revs) == 1 {
			oldT, err = g.flatTree(revs[0])
		} else {
			oldT = gitIndexFiles(s.idx)
			renames = false
		}
	}
	if err != nil {
		return g.fatal("%v", err)
	}
	chs := gitTreeChanges(gitFilterPaths(oldT, paths), gitFilterPaths(newT, paths), renames)
	for i := range chs {
		if err := g.load(&chs[i], side); err != nil {
			return g.fatal("%v", err)
		}
	}
	if !quiet {
		w := bufio.NewWriter(g.c.Stdout)
		if numstat {
			for i := range chs {
				a, d := g.numstat(ctx, &chs[i])
				name := gitQuotePath(chs[i].newPath)
				if chs[i].status == 'R' {
					name = gitRenameName(chs[i].oldPath, chs[i].newPath)
				}
				if a < 0 {
					fmt.Fprintf(w, "-\t-\t%s\n", name)
					continue
				}
				fmt.Fprintf(w, "%d\t%d\t%s\n", a, d, name)
			}
		}
		patch := !stat && !nameOnly && !nameStat && !numstat
		g.writeDiffOutput(ctx, w, chs, patch, stat, nameOnly, nameStat, ctxLines)
		w.Flush()
	}
	if exitCode && len(chs) > 0 {
		return 1
	}
	return 0
}

// expandDots turns "A..B" into the revisions A and B and "A...B" into
// their merge base and B, as git diff reads them (an empty side is
// HEAD). An argument that does not resolve so is left for splitRevs.
func (g *gitCtx) expandDots(ctx context.Context, args []string) ([]string, int) {
	var out []string
	head := func(s string) string {
		if s == "" {
			return "HEAD"
		}
		return s
	}
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...), 0
		}
		if l, r, ok := strings.Cut(a, "..."); ok && a != "..." {
			lh, lok := g.resolveRev(head(l))
			_, rok := g.resolveRev(head(r))
			if lok && rok {
				rh, _ := g.resolveRev(head(r))
				bases, err := g.mergeBases(ctx, lh, rh)
				if err != nil {
					return nil, g.fatal("%v", err)
				}
				if len(bases) != 1 {
					return nil, g.c.Fail("git diff A...B without a single merge base")
				}
				out = append(out, bases[0].String(), head(r))
				continue
			}
		} else if l, r, ok := strings.Cut(a, ".."); ok && a != ".." {
			_, lok := g.resolveRev(head(l))
			_, rok := g.resolveRev(head(r))
			if lok && rok {
				out = append(out, head(l), head(r))
				continue
			}
		}
		out = append(out, a)
	}
	return out, 0
}

// gitShow is "git show [rev | rev:path]...".
func gitShow(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	lo, ok := gitParseLogOpts(g, opts, true)
	if !ok {
		return gitExitStatus(g)
	}
	if len(args) == 0 {
		args = []string{"HEAD"}
	}
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	for i, a := range args {
		if rev, p, ok := strings.Cut(a, ":"); ok {
			if rev == "" {
				return g.c.Fail("git show :path (index)")
			}
			h, ok := g.resolveRev(rev)
			if !ok {
				return g.fatal("invalid object name '%s'.", rev)
			}
			t, err := g.flatTree(h)
			if err != nil {
				return g.fatal("%v", err)
			}
			p = strings.TrimPrefix(p, "./")
			e, ok := t[p]
			if !ok {
				return g.fatal("path '%s' does not exist in '%s'", p, rev)
			}
			b, err := g.blob(e.hash)
			if err != nil {
				return g.fatal("%v", err)
			}
			w.Write(b)
			continue
		}
		h, ok := g.resolveRev(a)
		if !ok {
			fmt.Fprintf(g.c.Stderr, "fatal: ambiguous argument '%s': unknown revision or path not in the working tree.\n", a)
			return 128
		}
		if t := g.tagObject(a); t != nil {
			// git show prints an annotated tag before what it tags.
			if len(args) > 1 || lo.format != "medium" || t.TargetType != plumbing.CommitObject || t.Tagger.Name == "" || t.PGPSignature != "" ||
				strings.Contains(t.Message, "-----BEGIN ") {
				return g.c.Fail("git show of this annotated tag")
			}
			fmt.Fprintf(w, "tag %s\nTagger: %s <%s>\nDate:   %s\n\n%s\n", t.Name, t.Tagger.Name, t.Tagger.Email, lo.date(t.Tagger.When), t.Message)
		}
		cm, err := object.GetCommit(g.st, h)
		if err != nil {
			return g.c.Fail("git show of a non-commit object")
		}
		if len(cm.ParentHashes) > 1 && lo.patch {
			return g.c.Fail("git show of a merge (combined diff)")
		}
		if err := g.printCommit(ctx, w, cm, lo, nil, i == 0, i == len(args)-1); err != nil {
			return g.fatal("%v", err)
		}
	}
	return 0
}

// tagObject returns the annotated tag a names directly (a ref, not a
// revision expression), or nil.
func (g *gitCtx) tagObject(a string) *object.Tag {
	if strings.ContainsAny(a, "~^:@") {
		return nil
	}
	for _, full := range []string{a, "refs/" + a, "refs/tags/" + a, "refs/heads/" + a} {
		r, err := g.st.Reference(plumbing.ReferenceName(full))
		if err != nil || r.Type() != plumbing.HashReference {
			continue
		}
		t, err := object.GetTag(g.st, r.Hash())
		if err != nil {
			return nil
		}
		return t
	}
	return nil
}
