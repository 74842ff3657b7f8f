package tools

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// This file implements "git cat-file (-t | -s | -p | -e) OBJECT" and
// "git ls-tree [-r] [-t] [-l] [--name-only] TREE-ISH [PATH...]".

var (
	gitCatFileOpts = NewOptions("t", "s", "p", "e")
	gitLsTreeOpts  = NewOptions("r", "t", "l,long", "name-only", "name-status")
)

// gitCheckCatFile admits one of -t, -s, -p, -e with one object; git's
// "cat-file TYPE OBJECT" form and batches are not implemented.
func gitCheckCatFile(opts []Opt, ops []string) error {
	if len(opts) != 1 || len(ops) != 1 {
		return fmt.Errorf("cat-file other than one of -t, -s, -p, -e with one object")
	}
	return nil
}

// resolveObject resolves an object name as cat-file and ls-tree read it:
// a ref names what it points at (an annotated tag is not peeled), REV:PATH
// the entry at PATH in REV's tree ("REV:" the tree). code is non-zero
// when git would fail, after printing its message.
func (g *gitCtx) resolveObject(name string) (h plumbing.Hash, code int) {
	h, why := g.lookupObject(name)
	switch why {
	case "":
		return h, 0
	case "refuse":
		return h, g.c.Fail("git " + g.sub + " of " + name)
	}
	return h, g.fatal("%s", why)
}

// lookupObject is resolveObject without messages: why is "" when found,
// "refuse" for forms not implemented, else git's fatal message.
func (g *gitCtx) lookupObject(name string) (h plumbing.Hash, why string) {
	if base, typ, ok := strings.Cut(name, "^{"); ok && strings.HasSuffix(typ, "}") && !strings.Contains(base, ":") {
		// X^{}, X^{commit}, X^{tree}: peel X.
		h, why := g.lookupObject(base)
		if why != "" {
			return h, why
		}
		h = g.peel(h)
		switch typ {
		case "}":
			return h, ""
		case "commit}", "tree}":
			cm, err := object.GetCommit(g.st, h)
			if err != nil {
				return h, "refuse"
			}
			if typ == "tree}" {
				return cm.TreeHash, ""
			}
			return h, ""
		}
		return h, "refuse"
	}
	if strings.Contains(name, "{") && !strings.Contains(name, "@{") {
		return h, "refuse"
	}
	if rev, p, ok := strings.Cut(name, ":"); ok {
		if rev == "" || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") {
			return h, "refuse"
		}
		c, ok := g.resolveRev(rev)
		if !ok {
			return h, fmt.Sprintf("invalid object name '%s'.", rev)
		}
		cm, err := object.GetCommit(g.st, c)
		if err != nil {
			return h, "refuse"
		}
		p = strings.Trim(p, "/")
		if p == "" {
			return cm.TreeHash, ""
		}
		t, err := object.GetTree(g.st, cm.TreeHash)
		if err != nil {
			return h, err.Error()
		}
		e, err := t.FindEntry(p)
		if err != nil {
			return h, fmt.Sprintf("path '%s' does not exist in '%s'", p, rev)
		}
		return e.Hash, ""
	}
	if !strings.ContainsAny(name, "~^@{") {
		for _, full := range []string{name, "refs/" + name, "refs/tags/" + name, "refs/heads/" + name} {
			if r, err := g.st.Reference(plumbing.ReferenceName(full)); err == nil && r.Type() == plumbing.HashReference {
				return r.Hash(), ""
			}
		}
		if name != "HEAD" && len(name) >= 4 && gitIsHex(name) {
			if h, ok := g.resolveName(name); ok {
				return h, ""
			}
			return h, "Not a valid object name " + name
		}
	}
	h, ok := g.resolveRev(name)
	if !ok {
		return h, "Not a valid object name " + name
	}
	return h, ""
}

func gitCatFile(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	if len(opts) != 1 || len(args) != 1 {
		return g.c.Fail("git cat-file other than one of -t, -s, -p, -e with one object")
	}
	mode, name := opts[0].Key, args[0]
	if mode == "e" && len(name) == 40 && gitIsHex(name) {
		if _, err := g.st.EncodedObject(plumbing.AnyObject, plumbing.NewHash(name)); err != nil {
			return 1
		}
		return 0
	}
	h, code := g.resolveObject(name)
	if code != 0 {
		return code
	}
	o, err := g.st.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return g.c.Fail("git cat-file of a missing object")
	}
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	switch mode {
	case "e":
	case "t":
		fmt.Fprintln(w, o.Type())
	case "s":
		fmt.Fprintln(w, o.Size())
	case "p":
		if o.Type() == plumbing.TreeObject {
			t, err := object.GetTree(g.st, h)
			if err != nil {
				return g.fatal("%v", err)
			}
			g.lsTree(w, t, "", gitLsTreeHow{})
			return 0
		}
		r, err := o.Reader()
		if err != nil {
			return g.fatal("%v", err)
		}
		defer r.Close()
		if _, err := io.Copy(w, r); err != nil {
			return g.fatal("%v", err)
		}
	}
	return 0
}

// gitLsTreeHow is ls-tree's options and paths.
type gitLsTreeHow struct {
	recurse, trees, long, nameOnly bool
	rel                            bool // paths relative to the working directory
	paths                          []string
}

func gitLsTree(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	var how gitLsTreeHow
	for _, o := range opts {
		switch o.Key {
		case "r":
			how.recurse = true
		case "t":
			how.trees = true
		case "long":
			how.long = true
		case "name-only", "name-status":
			how.nameOnly = true
		}
	}
	if len(args) == 0 || args[0] == "--" {
		fmt.Fprintln(g.c.Stderr, "usage: git ls-tree [<options>] <tree-ish> [<path>...]")
		return 129
	}
	// Below the top git lists the working directory's part of the tree,
	// paths relative to it.
	prefix := g.prefix()
	how.rel = prefix != ""
	if how.rel && strings.Contains(args[0], ":") {
		return g.c.Fail("git ls-tree of a subtree below the top of the worktree")
	}
	for _, p := range args[1:] {
		if p == "--" {
			continue
		}
		if p == "" || strings.HasPrefix(p, "/") || strings.ContainsAny(p, "*?[\\") || strings.HasPrefix(p, ":") {
			return g.c.Fail("git ls-tree path " + p)
		}
		rp, ok := g.pathspec(p)
		if !ok {
			return g.fatal("%s: '%s' is outside repository at '%s'", p, p, g.top)
		}
		if strings.HasSuffix(p, "/") && rp != "" {
			rp += "/"
		}
		if rp == "" {
			rp = "/"
		}
		how.paths = append(how.paths, rp)
	}
	if len(how.paths) == 0 && prefix != "" {
		how.paths = []string{prefix + "/"}
	}
	if slices.Contains(how.paths, "/") {
		if len(how.paths) > 1 {
			return g.c.Fail("git ls-tree with the top among paths")
		}
		how.paths = nil
	}
	h, code := g.resolveObject(args[0])
	if code != 0 {
		return code
	}
	h = g.peel(h)
	if cm, err := object.GetCommit(g.st, h); err == nil {
		h = cm.TreeHash
	}
	t, err := object.GetTree(g.st, h)
	if err != nil {
		return g.fatal("not a tree object")
	}
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	if err := g.lsTree(w, t, "", how); err != nil {
		return g.fatal("%v", err)
	}
	return 0
}

// lsTree prints t's entries under dir (its path, "" at the top) as git
// ls-tree does: a tree a path names or lies below is entered (and shown
// only with -t), other entries a path matches are shown, all of them
// without paths; -r enters every tree shown.
func (g *gitCtx) lsTree(w *bufio.Writer, t *object.Tree, dir string, how gitLsTreeHow) error {
	for _, e := range t.Entries {
		p := e.Name
		if dir != "" {
			p = dir + "/" + e.Name
		}
		isTree := e.Mode == filemode.Dir
		enter, show := false, len(how.paths) == 0
		for _, s := range how.paths {
			switch {
			case isTree && strings.HasPrefix(s, p+"/"):
				enter = true
			case s == p || strings.HasPrefix(p, strings.TrimSuffix(s, "/")+"/"):
				show = true
			}
		}
		if isTree && show && how.recurse {
			enter = true
		}
		if enter {
			if how.trees {
				if err := g.lsTreeLine(w, e, p, how); err != nil {
					return err
				}
			}
			sub, err := object.GetTree(g.st, e.Hash)
			if err != nil {
				return err
			}
			if err := g.lsTree(w, sub, p, how); err != nil {
				return err
			}
			continue
		}
		if show {
			if err := g.lsTreeLine(w, e, p, how); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *gitCtx) lsTreeLine(w *bufio.Writer, e object.TreeEntry, p string, how gitLsTreeHow) error {
	if how.rel {
		switch prefix := g.prefix(); {
		case p == prefix:
			p = "./"
		case strings.HasPrefix(prefix, p+"/"):
			// An ancestor of the working directory.
			p = strings.Repeat("../", strings.Count(prefix[len(p):], "/"))
		default:
			p = g.rel(p)
		}
	}
	if how.nameOnly {
		fmt.Fprintln(w, gitQuotePath(p))
		return nil
	}
	typ := "blob"
	switch e.Mode {
	case filemode.Dir:
		typ = "tree"
	case filemode.Submodule:
		typ = "commit"
	}
	if !how.long {
		fmt.Fprintf(w, "%06o %s %s\t%s\n", uint32(e.Mode), typ, e.Hash, gitQuotePath(p))
		return nil
	}
	size := "-"
	if typ == "blob" {
		o, err := g.st.EncodedObject(plumbing.BlobObject, e.Hash)
		if err != nil {
			return err
		}
		size = fmt.Sprint(o.Size())
	}
	fmt.Fprintf(w, "%06o %s %s %7s\t%s\n", uint32(e.Mode), typ, e.Hash, size, gitQuotePath(p))
	return nil
}
