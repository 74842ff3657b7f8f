package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// This file computes and prints "git status". The scan is our own, not
// go-git's Worktree.Status: index entries whose size and mtime match the
// file are taken as unchanged (git's stat check) and only the others are
// hashed, which keeps status on a large tree to one directory walk.

var gitStatusOpts = NewOptions("s,short", "porcelain=?", "b,branch", "u,untracked-files=?", "long")

// gitWtFile is one file found in the worktree.
type gitWtFile struct {
	info fs.FileInfo
}

// gitScan is the three-way comparison HEAD / index / worktree.
type gitScan struct {
	head      map[string]gitTreeEntry
	idx       *index.Index
	byName    map[string]*index.Entry
	staged    map[string]byte   // path -> A M D T R
	renamedTo map[string]string // new path -> old path (staged renames)
	unstaged  map[string]byte   // path -> M D T
	untracked []string          // paths, "dir/" for collapsed dirs
	wt        map[string]fs.FileInfo
	headHash  plumbing.Hash
}

// gitWorktreeMode returns the index mode for a worktree file.
func gitWorktreeMode(fi fs.FileInfo) filemode.FileMode {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return filemode.Symlink
	case fi.Mode()&0o111 != 0:
		return filemode.Executable
	}
	return filemode.Regular
}

// scan compares HEAD, the index and the worktree. untrackedMode is "no",
// "normal" or "all".
func (g *gitCtx) scan(ctx context.Context, untrackedMode string) (*gitScan, error) {
	_, hh, _, err := g.headRef()
	if err != nil {
		return nil, err
	}
	s := &gitScan{staged: map[string]byte{}, unstaged: map[string]byte{}, renamedTo: map[string]string{},
		wt: map[string]fs.FileInfo{}, byName: map[string]*index.Entry{}, headHash: hh}
	if s.idx, err = g.index(); err != nil {
		return nil, err
	}
	if s.head, err = g.headFiles(hh, s.idx); err != nil {
		return nil, err
	}
	g.indexTime = time.Now().Add(time.Hour)
	if fi, err := g.c.FS.Stat(g.top + "/.git/index"); err == nil {
		g.indexTime = fi.ModTime()
	}
	trackedDirs := map[string]bool{}
	for _, e := range s.idx.Entries {
		s.byName[e.Name] = e
		for d := e.Name; ; {
			i := strings.LastIndexByte(d, '/')
			if i < 0 {
				break
			}
			d = d[:i]
			if trackedDirs[d] {
				break
			}
			trackedDirs[d] = true
		}
	}
	// Staged: HEAD vs index.
	var added, deleted []string
	for _, e := range s.idx.Entries {
		h, ok := s.head[e.Name]
		switch {
		case !ok:
			s.staged[e.Name] = 'A'
			added = append(added, e.Name)
		case h.hash != e.Hash:
			s.staged[e.Name] = 'M'
			if (h.mode == uint32(filemode.Symlink)) != (e.Mode == filemode.Symlink) {
				s.staged[e.Name] = 'T'
			}
		case h.mode != uint32(e.Mode):
			s.staged[e.Name] = 'M'
		}
	}
	for p := range s.head {
		if _, ok := s.byName[p]; !ok {
			s.staged[p] = 'D'
			deleted = append(deleted, p)
		}
	}
	// Exact renames.
	sort.Strings(deleted)
	sort.Strings(added)
	for _, d := range deleted {
		for i, a := range added {
			if a != "" && s.byName[a].Hash == s.head[d].hash {
				delete(s.staged, d)
				s.staged[a] = 'R'
				s.renamedTo[a] = d
				added[i] = ""
				break
			}
		}
	}
	// Worktree walk.
	var ps []gitignore.Pattern
	if b, err := g.readFile(g.top + "/.git/info/exclude"); err == nil && !g.noIgnore {
		ps = append(ps, gitParseIgnore(b, nil)...)
	}
	var untrackedDirs []string
	n := 0
	var walk func(dir string, parts []string, ps []gitignore.Pattern) (bool, error)
	// walk returns whether dir holds any untracked, unignored file.
	walk = func(dir string, parts []string, ps []gitignore.Pattern) (bool, error) {
		full := g.top
		if dir != "" {
			full += "/" + dir
		}
		ents, err := g.readDir(full)
		if err != nil {
			return false, nil
		}
		if dir != "" && !trackedDirs[dir] {
			for _, e := range ents {
				if e.Name() == ".git" {
					return false, errNestedRepo
				}
			}
		}
		for _, e := range ents {
			if e.Name() == ".gitignore" && !e.IsDir() && !g.noIgnore {
				if b, err := g.readFile(full + "/.gitignore"); err == nil {
					ps = append(ps[:len(ps):len(ps)], gitParseIgnore(b, parts)...)
				}
			}
		}
		m := gitignore.NewMatcher(ps)
		any := false
		for _, e := range ents {
			n++
			if n%2048 == 0 && ctx.Err() != nil {
				return false, ctx.Err()
			}
			name := e.Name()
			if dir == "" && name == ".git" {
				continue
			}
			p := name
			if dir != "" {
				p = dir + "/" + name
			}
			sub := append(parts[:len(parts):len(parts)], name)
			if e.IsDir() {
				if m.Match(sub, true) && !trackedDirs[p] {
					continue
				}
				mark := len(s.untracked)
				has, err := walk(p, sub, ps)
				if err == errNestedRepo {
					s.untracked = append(s.untracked[:mark], p+"/")
					any = true
					continue
				}
				if err != nil {
					return false, err
				}
				if has {
					any = true
					if !trackedDirs[p] && untrackedMode == "normal" {
						s.untracked = append(s.untracked[:mark], p+"/")
						untrackedDirs = append(untrackedDirs, p)
					}
				}
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue
			}
			if !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0 {
				continue
			}
			s.wt[p] = fi
			if _, ok := s.byName[p]; ok {
				continue
			}
			if m.Match(sub, false) {
				continue
			}
			s.untracked = append(s.untracked, p)
			any = true
		}
		return any, nil
	}
	if _, err := walk("", nil, ps); err != nil {
		return nil, err
	}
	if untrackedMode == "no" {
		s.untracked = nil
	}
	sort.Strings(s.untracked)
	// Unstaged: index vs worktree.
	for _, e := range s.idx.Entries {
		fi, ok := s.wt[e.Name]
		if !ok {
			fi2, err := g.c.FS.Lstat(g.top + "/" + e.Name)
			if err != nil || fi2.IsDir() {
				s.unstaged[e.Name] = 'D'
				continue
			}
			fi = fi2
			s.wt[e.Name] = fi2
		}
		changed, err := g.entryChanged(e, fi)
		if err != nil {
			return nil, err
		}
		if changed != 0 {
			s.unstaged[e.Name] = changed
		}
	}
	return s, nil
}

// errNestedRepo marks a directory holding its own .git: status shows it
// as one untracked entry.
var errNestedRepo = errors.New("nested repository")

// headFiles flattens commit h's tree; when the index's cache tree says
// the index is exactly that tree (git writes it on commit), the index
// itself is the answer and no tree object is read.
func (g *gitCtx) headFiles(h plumbing.Hash, idx *index.Index) (map[string]gitTreeEntry, error) {
	if !h.IsZero() && idx.Cache != nil && len(idx.Cache.Entries) > 0 {
		root := idx.Cache.Entries[0]
		if root.Path == "" && root.Entries == len(idx.Entries) {
			if cm, err := object.GetCommit(g.st, h); err == nil && cm.TreeHash == root.Hash {
				return gitIndexFiles(idx), nil
			}
		}
	}
	return g.flatTree(h)
}

// readDir lists a directory through an open descriptor, so that each
// entry's Info is one fstatat relative to it.
func (g *gitCtx) readDir(name string) ([]fs.DirEntry, error) {
	f, err := g.c.FS.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// entryChanged compares an index entry with its worktree file: 0 when
// unchanged, 'M' or 'T' otherwise.
func (g *gitCtx) entryChanged(e *index.Entry, fi fs.FileInfo) (byte, error) {
	mode := gitWorktreeMode(fi)
	if (mode == filemode.Symlink) != (e.Mode == filemode.Symlink) {
		return 'T', nil
	}
	if mode != e.Mode {
		return 'M', nil
	}
	racy := !e.ModifiedAt.Before(g.indexTime)
	if uint32(fi.Size()) == e.Size && fi.ModTime().Equal(e.ModifiedAt) && !e.ModifiedAt.IsZero() && !racy {
		return 0, nil
	}
	data, err := g.readWork(e.Name, fi)
	if err != nil {
		return 'M', nil
	}
	if plumbing.ComputeHash(plumbing.BlobObject, data) != e.Hash {
		return 'M', nil
	}
	return 0, nil
}

func gitParseIgnore(b []byte, domain []string) []gitignore.Pattern {
	var ps []gitignore.Pattern
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

func (g *gitCtx) readFile(name string) ([]byte, error) {
	f, err := g.c.FS.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// gitStatusItem is one line of gitShort status.
type gitStatusItem struct {
	path, from string
	x, y       byte
}

func (s *gitScan) items() []gitStatusItem {
	m := map[string]*gitStatusItem{}
	get := func(p string) *gitStatusItem {
		it := m[p]
		if it == nil {
			it = &gitStatusItem{path: p, x: ' ', y: ' '}
			m[p] = it
		}
		return it
	}
	for p, k := range s.staged {
		it := get(p)
		it.x = k
		it.from = s.renamedTo[p]
	}
	for p, k := range s.unstaged {
		get(p).y = k
	}
	out := make([]gitStatusItem, 0, len(m))
	for _, it := range m {
		out = append(out, *it)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// gitStatus is "git status".
func gitStatus(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	format, branch, umode := "long", false, "normal"
	for _, o := range opts {
		switch o.Key {
		case "short":
			format = "short"
		case "porcelain":
			if o.HasArg && o.Value != "v1" && o.Value != "1" {
				return g.c.Fail("git status --porcelain=" + o.Value)
			}
			format = "porcelain"
		case "long":
			format = "long"
		case "branch":
			branch = true
		case "untracked-files":
			umode = "all"
			if o.HasArg {
				umode = o.Value
			}
			if umode != "all" && umode != "no" && umode != "normal" {
				return g.fatal("Invalid untracked files mode '%s'", umode)
			}
		}
	}
	if len(args) != 0 {
		return g.c.Fail("git status with pathspecs")
	}
	s, err := g.scan(ctx, umode)
	if err != nil {
		return g.fatal("%v", err)
	}
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	if format != "long" {
		g.printShort(w, s, branch, format == "porcelain")
		return 0
	}
	g.printLong(w, s, umode)
	return 0
}

func (g *gitCtx) branchLine(s *gitScan) (string, bool) {
	br, h, detached, _ := g.headRef()
	if detached {
		return "HEAD detached at " + gitShort(h), true
	}
	return strings.TrimPrefix(string(br), "refs/heads/"), false
}

func (g *gitCtx) printShort(w *bufio.Writer, s *gitScan, branch, porcelain bool) {
	rel := g.rel
	if porcelain {
		rel = func(p string) string { return p }
	}
	quoteSP := func(p string) string { return quotePathSP(p, true) }
	if branch {
		name, detached := g.branchLine(s)
		switch {
		case detached:
			fmt.Fprintln(w, "## HEAD (no branch)")
		case s.headHash.IsZero():
			fmt.Fprintf(w, "## No commits yet on %s\n", name)
		default:
			fmt.Fprintf(w, "## %s\n", name)
		}
	}
	for _, it := range s.items() {
		if it.from != "" {
			fmt.Fprintf(w, "%c%c %s -> %s\n", it.x, it.y, quoteSP(rel(it.from)), quoteSP(rel(it.path)))
			continue
		}
		fmt.Fprintf(w, "%c%c %s\n", it.x, it.y, quoteSP(rel(it.path)))
	}
	sort.Strings(s.untracked)
	for _, p := range s.untracked {
		fmt.Fprintf(w, "?? %s\n", quoteSP(gitRelDir(rel, p)))
	}
}

// gitRelDir applies rel to p, keeping a trailing slash.
func gitRelDir(rel func(string) string, p string) string {
	if strings.HasSuffix(p, "/") {
		return rel(strings.TrimSuffix(p, "/")) + "/"
	}
	return rel(p)
}

var gitLabels = map[byte]string{'A': "new file:", 'M': "modified:", 'D': "deleted:", 'R': "renamed:", 'T': "typechange:"}

func (g *gitCtx) printLong(w *bufio.Writer, s *gitScan, umode string) {
	g.printLongAs(w, s, umode, "No commits yet")
}

// printLongAs is printLong with the unborn-branch line given (commit says
// "Initial commit").
func (g *gitCtx) printLongAs(w *bufio.Writer, s *gitScan, umode, unborn string) {
	name, detached := g.branchLine(s)
	if detached {
		fmt.Fprintf(w, "%s\n", name)
	} else {
		fmt.Fprintf(w, "On branch %s\n", name)
	}
	if s.headHash.IsZero() {
		fmt.Fprintf(w, "\n%s\n\n", unborn)
	}
	items := s.items()
	var staged, unstaged []gitStatusItem
	hasDel := false
	for _, it := range items {
		if it.x != ' ' {
			staged = append(staged, it)
		}
		if it.y != ' ' {
			unstaged = append(unstaged, it)
			if it.y == 'D' {
				hasDel = true
			}
		}
	}
	if len(staged) > 0 {
		fmt.Fprint(w, "Changes to be committed:\n")
		if s.headHash.IsZero() {
			fmt.Fprint(w, "  (use \"git rm --cached <file>...\" to unstage)\n")
		} else {
			fmt.Fprint(w, "  (use \"git restore --staged <file>...\" to unstage)\n")
		}
		for _, it := range staged {
			p := gitQuotePath(g.rel(it.path))
			if it.from != "" {
				p = gitQuotePath(g.rel(it.from)) + " -> " + p
			}
			fmt.Fprintf(w, "\t%-12s%s\n", gitLabels[it.x], p)
		}
		fmt.Fprintln(w)
	}
	if len(unstaged) > 0 {
		fmt.Fprint(w, "Changes not staged for commit:\n")
		if hasDel {
			fmt.Fprint(w, "  (use \"git add/rm <file>...\" to update what will be committed)\n")
		} else {
			fmt.Fprint(w, "  (use \"git add <file>...\" to update what will be committed)\n")
		}
		fmt.Fprint(w, "  (use \"git restore <file>...\" to discard changes in working directory)\n")
		for _, it := range unstaged {
			fmt.Fprintf(w, "\t%-12s%s\n", gitLabels[it.y], gitQuotePath(g.rel(it.path)))
		}
		fmt.Fprintln(w)
	}
	sort.Strings(s.untracked)
	if len(s.untracked) > 0 {
		fmt.Fprint(w, "Untracked files:\n  (use \"git add <file>...\" to include in what will be committed)\n")
		for _, p := range s.untracked {
			fmt.Fprintf(w, "\t%s\n", gitQuotePath(gitRelDir(g.rel, p)))
		}
		fmt.Fprintln(w)
	}
	switch {
	case len(staged) > 0:
	case len(unstaged) > 0:
		fmt.Fprintln(w, "no changes added to commit (use \"git add\" and/or \"git commit -a\")")
	case len(s.untracked) > 0:
		fmt.Fprintln(w, "nothing added to commit but untracked files present (use \"git add\" to track)")
	case s.headHash.IsZero() && len(s.idx.Entries) == 0:
		fmt.Fprintln(w, "nothing to commit (create/copy files and use \"git add\" to track)")
	case umode == "no":
		fmt.Fprintln(w, "nothing to commit (use -u to show untracked files)")
	default:
		fmt.Fprintln(w, "nothing to commit, working tree clean")
	}
}
