package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/sys/unix"
)

// This file computes and prints "git status". The scan is our own, not
// go-git's Worktree.Status: index entries whose size and mtime match the
// file are taken as unchanged (git's stat check) and only the others are
// hashed, which keeps status on a large tree to one directory walk.

var gitStatusOpts = NewOptions("s,short", "porcelain=?", "b,branch", "u,untracked-files=?", "long")

// gitScan is the three-way comparison HEAD / index / worktree.
type gitScan struct {
	// head is HEAD's files, filled only by scanHead: status compares
	// HEAD with the index through the cache tree instead.
	head      map[string]gitTreeEntry
	idx       *index.Index
	staged    map[string]byte   // path -> A M D T R
	renamedTo map[string]string // new path -> old path (staged renames)
	unstaged  map[string]byte   // path -> M D T
	untracked []string          // paths, "dir/" for collapsed dirs
	// wt holds the worktree files that are untracked or whose stat data
	// differs from their index entry (changed, or to be refreshed).
	wt       map[string]fs.FileInfo
	headHash plumbing.Hash
	deleted  map[string]plumbing.Hash // HEAD's blob of each staged deletion
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

// scanHead is scan that also fills s.head.
func (g *gitCtx) scanHead(ctx context.Context, untrackedMode string) (*gitScan, error) {
	s, err := g.scan(ctx, untrackedMode)
	if err != nil {
		return nil, err
	}
	if s.head, err = g.headFiles(s.headHash, s.idx); err != nil {
		return nil, err
	}
	return s, nil
}

// scan compares HEAD, the index and the worktree. untrackedMode is "no",
// "normal" or "all".
func (g *gitCtx) scan(ctx context.Context, untrackedMode string) (*gitScan, error) {
	_, hh, _, err := g.headRef()
	if err != nil {
		return nil, err
	}
	s := &gitScan{staged: map[string]byte{}, unstaged: map[string]byte{}, renamedTo: map[string]string{},
		wt: map[string]fs.FileInfo{}, headHash: hh}
	if s.idx, err = g.index(); err != nil {
		return nil, err
	}
	es := s.idx.Entries
	// Staged: HEAD vs index.
	added, deleted, err := g.headDiff(s, hh)
	if err != nil {
		return nil, err
	}
	// Exact renames.
	sort.Strings(deleted)
	sort.Strings(added)
	pos := make(map[string]int, len(es))
	for i, e := range es {
		pos[e.Name] = i
	}
	for _, d := range deleted {
		for i, a := range added {
			if a != "" && es[pos[a]].Hash == s.deleted[d] {
				delete(s.staged, d)
				s.staged[a] = 'R'
				s.renamedTo[a] = d
				added[i] = ""
				break
			}
		}
	}
	trackedDirs := map[string]bool{}
	for _, e := range es {
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
	// Worktree walk: tracked files are compared with their entries as
	// they are found; seen marks them.
	seen := make([]bool, len(es))
	var ps []gitignore.Pattern
	if b, err := g.readFile(g.top + "/.git/info/exclude"); err == nil && !g.noIgnore {
		ps = append(ps, gitParseIgnore(b, nil)...)
	}
	pre := g.preloadDirs(ctx, trackedDirs)
	var untrackedDirs []string
	n := 0
	var key []byte // scratch for "dir/name"
	var walk func(dir string, parts []string, ps []gitignore.Pattern) (bool, error)
	// walk returns whether dir holds any untracked, unignored file.
	walk = func(dir string, parts []string, ps []gitignore.Pattern) (bool, error) {
		full := g.top
		if dir != "" {
			full += "/" + dir
		}
		var ents []fs.DirEntry
		var infos []fs.FileInfo
		if l := pre[dir]; l != nil {
			ents, infos, err = l.ents, l.infos, l.err
		} else {
			ents, infos, err = g.readDirStat(full)
		}
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
		for i, e := range ents {
			n++
			if n%2048 == 0 && ctx.Err() != nil {
				return false, ctx.Err()
			}
			name := e.Name()
			if dir == "" && name == ".git" {
				continue
			}
			key = key[:0]
			if dir != "" {
				key = append(append(key, dir...), '/')
			}
			key = append(key, name...)
			fi := infos[i]
			if fi == nil { // a directory
				p := string(key)
				sub := append(parts[:len(parts):len(parts)], name)
				if !trackedDirs[p] && m.Match(sub, true) {
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
			if !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0 {
				continue
			}
			if k, ok := pos[string(key)]; ok {
				seen[k] = true
				if err := g.compareEntry(s, es[k], fi); err != nil {
					return false, err
				}
				continue
			}
			p := string(key)
			if m.Match(append(parts[:len(parts):len(parts)], name), false) {
				continue
			}
			s.wt[p] = fi
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
	// Unstaged: index entries the walk did not meet (deleted, or below a
	// directory it did not enter).
	for k, e := range es {
		if seen[k] {
			continue
		}
		fi, err := g.c.FS.Lstat(g.top + "/" + e.Name)
		if err != nil || fi.IsDir() {
			s.unstaged[e.Name] = 'D'
			continue
		}
		if err := g.compareEntry(s, e, fi); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// compareEntry records in s how worktree file fi differs from index
// entry e.
func (g *gitCtx) compareEntry(s *gitScan, e *index.Entry, fi fs.FileInfo) error {
	changed, clean, err := g.entryChanged(e, fi)
	if err != nil {
		return err
	}
	if changed != 0 {
		s.unstaged[e.Name] = changed
	}
	if !clean {
		s.wt[e.Name] = fi
	}
	return nil
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

// headDiff fills s.staged with the differences between commit hh's tree
// and the index, and returns the added and deleted paths (rename
// candidates). It reads only HEAD's trees for directories the cache tree
// does not vouch for: a valid cache-tree directory whose hash is HEAD's
// holds exactly HEAD's files.
func (g *gitCtx) headDiff(s *gitScan, hh plumbing.Hash) (added, deleted []string, err error) {
	es := s.idx.Entries
	add := func(e *index.Entry) {
		s.staged[e.Name] = 'A'
		added = append(added, e.Name)
	}
	if hh.IsZero() {
		for _, e := range es {
			add(e)
		}
		return added, nil, nil
	}
	cm, err := object.GetCommit(g.st, hh)
	if err != nil {
		return nil, nil, fmt.Errorf("read commit %s: %w", hh, err)
	}
	s.deleted = map[string]plumbing.Hash{}
	var cmp func(th plumbing.Hash, prefix string, lo, hi int, cn *gitCacheNode) error
	cmp = func(th plumbing.Hash, prefix string, lo, hi int, cn *gitCacheNode) error {
		if cn != nil && cn.valid && cn.hash == th && cn.count == hi-lo {
			return nil
		}
		t, err := object.GetTree(g.st, th)
		if err != nil {
			return fmt.Errorf("read tree %s: %w", th, err)
		}
		i := lo
		for _, te := range t.Entries {
			p := prefix + te.Name
			if te.Mode == filemode.Dir {
				key := p + "/"
				for i < hi && es[i].Name < key {
					add(es[i])
					i++
				}
				k := i
				for k < hi && strings.HasPrefix(es[k].Name, key) {
					k++
				}
				var sub *gitCacheNode
				if cn != nil {
					sub = cn.subs[te.Name]
				}
				if err := cmp(te.Hash, key, i, k, sub); err != nil {
					return err
				}
				i = k
				continue
			}
			if !te.Mode.IsFile() && te.Mode != filemode.Submodule {
				continue
			}
			for i < hi && es[i].Name < p {
				add(es[i])
				i++
			}
			if i >= hi || es[i].Name != p {
				s.staged[p] = 'D'
				s.deleted[p] = te.Hash
				deleted = append(deleted, p)
				continue
			}
			e := es[i]
			switch {
			case te.Hash != e.Hash:
				s.staged[p] = 'M'
				if (te.Mode == filemode.Symlink) != (e.Mode == filemode.Symlink) {
					s.staged[p] = 'T'
				}
			case te.Mode != e.Mode:
				s.staged[p] = 'M'
			}
			for i < hi && es[i].Name == p {
				i++ // and its other stages
			}
		}
		for ; i < hi; i++ {
			add(es[i])
		}
		return nil
	}
	if err := cmp(cm.TreeHash, "", 0, len(es), gitCacheNodes(s.idx.Cache)); err != nil {
		return nil, nil, err
	}
	return added, deleted, nil
}

// gitDirList is one directory listed by readDirStat.
type gitDirList struct {
	ents  []fs.DirEntry
	infos []fs.FileInfo
	err   error
}

// gitPreloadMin is the number of tracked directories from which status
// lists them on several goroutines.
const gitPreloadMin = 32

// preloadDirs lists the top and every tracked directory (the walk enters
// them all) on up to GOMAXPROCS goroutines, as git's preload-index lstats
// the index on several threads: the walk is mostly system calls. It
// returns them by path relative to the top ("" for the top); nil when
// there are too few to be worth it.
func (g *gitCtx) preloadDirs(ctx context.Context, tracked map[string]bool) map[string]*gitDirList {
	workers := min(runtime.GOMAXPROCS(0), 8)
	if workers < 2 || len(tracked) < gitPreloadMin {
		return nil
	}
	dirs := make([]string, 0, len(tracked)+1)
	dirs = append(dirs, "")
	for d := range tracked {
		dirs = append(dirs, d)
	}
	lists := make([]gitDirList, len(dirs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		// Each worker stops when no directory is left or ctx is done;
		// preloadDirs waits for all of them.
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(dirs) {
					return
				}
				full := g.top
				if dirs[i] != "" {
					full += "/" + dirs[i]
				}
				l := &lists[i]
				l.ents, l.infos, l.err = g.readDirStat(full)
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	out := make(map[string]*gitDirList, len(dirs))
	for i, d := range dirs {
		out[d] = &lists[i]
	}
	return out
}

// readDirStat lists a directory and lstats each entry that is not a
// directory while the directory is open, so that each is one fstatat
// relative to it. infos[i] is nil for a directory, and for an entry that
// vanished since it was listed.
func (g *gitCtx) readDirStat(name string) ([]fs.DirEntry, []fs.FileInfo, error) {
	f, err := g.c.FS.OpenFile(name, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, nil, err
	}
	infos := make([]fs.FileInfo, len(ents))
	for i, e := range ents {
		if e.IsDir() {
			continue
		}
		if fi, err := e.Info(); err == nil && !fi.IsDir() {
			infos[i] = fi
		}
	}
	return ents, infos, nil
}

// entryChanged compares an index entry with its worktree file: changed
// is 0 when unchanged, 'M' or 'T' otherwise; clean reports that the
// stat data matched, so the file was not read.
func (g *gitCtx) entryChanged(e *index.Entry, fi fs.FileInfo) (changed byte, clean bool, err error) {
	mode := gitWorktreeMode(fi)
	if (mode == filemode.Symlink) != (e.Mode == filemode.Symlink) {
		return 'T', false, nil
	}
	if mode != e.Mode {
		return 'M', false, nil
	}
	// An entry not older than the index file is "racy": the file may have
	// changed within the same timestamp after it was staged.
	racy := !e.ModifiedAt.Before(g.indexTime)
	if !racy && gitStatMatches(e, fi) {
		return 0, true, nil
	}
	data, err := g.readWork(e.Name, fi)
	if err != nil {
		return 'M', false, nil
	}
	if plumbing.ComputeHash(plumbing.BlobObject, data) != e.Hash {
		return 'M', false, nil
	}
	return 0, false, nil
}

// gitStatMatches is git's stat check: size, mtime, ctime, inode, owner
// (not the device: it changes when a sandbox is forked).
func gitStatMatches(e *index.Entry, fi fs.FileInfo) bool {
	if uint32(fi.Size()) != e.Size || e.ModifiedAt.IsZero() || !fi.ModTime().Equal(e.ModifiedAt) {
		return false
	}
	st, ok := fi.Sys().(*unix.Stat_t)
	if !ok {
		return true // size and mtime are all there is
	}
	return uint32(st.Ino) == e.Inode && st.Uid == e.UID && st.Gid == e.GID &&
		e.CreatedAt.Unix() == st.Ctim.Sec && int64(e.CreatedAt.Nanosecond()) == st.Ctim.Nsec
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
		return "HEAD detached at " + g.short(h), true
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
