package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// This file is git's entry point: global options (-C, -c, --no-pager),
// subcommand dispatch, finding the repository, and helpers every
// subcommand shares. The subcommands live in git<family>.go and print
// what git 2.39 prints; anything they cannot do faithfully (network
// remotes, unimplemented flags) fails with c.Fail before writing.

// gitSub is one subcommand: its option table and its runner.
type gitSub struct {
	opts *Options
	run  func(ctx context.Context, g *gitCtx, opts []Opt, args []string) int
	// noRepo marks subcommands that run without a repository (init).
	noRepo bool
	// raw marks subcommands that parse their own arguments (stash,
	// whose options depend on its action word); opts is unused.
	raw bool
}

// gitCtx carries one git invocation: the call, -c overrides and, once
// found, the repository.
type gitCtx struct {
	c         *shell.Call
	overrides [][2]string // -c key=value, in order
	dir       string      // effective working directory (after -C)
	top       string      // worktree top, absolute sandbox path
	st        *filesystem.Storage
	sub       string
	noIgnore  bool // ls-files -o without --exclude-standard
	// indexTime is the index file's mtime: entries not older are racy.
	indexTime time.Time
	// written holds the tree objects this invocation stored, for the
	// cache tree.
	written map[plumbing.Hash]bool
	abbrevs gitAbbrev
	cfgs    map[string]*config.Config // config files read, by name
}

// gitNetwork lists subcommands that need a remote and so run in a container.
var gitNetwork = map[string]bool{
	"clone": true, "fetch": true, "pull": true, "push": true, "remote": true,
	"submodule": true, "ls-remote": true, "archive": false,
}

func gitSubs() map[string]*gitSub {
	return map[string]*gitSub{
		"init":         {opts: gitInitOpts, run: gitInit, noRepo: true},
		"status":       {opts: gitStatusOpts, run: gitStatus},
		"add":          {opts: gitAddOpts, run: gitAdd},
		"rm":           {opts: gitRmOpts, run: gitRm},
		"commit":       {opts: gitCommitOpts, run: gitCommit},
		"log":          {opts: gitLogOpts, run: gitLog},
		"show":         {opts: gitShowOpts, run: gitShow},
		"diff":         {opts: gitDiffOpts, run: gitDiff},
		"branch":       {opts: gitBranchOpts, run: gitBranch},
		"rev-parse":    {opts: gitRevParseOpts, run: gitRevParse},
		"ls-files":     {opts: gitLsFilesOpts, run: gitLsFiles},
		"config":       {opts: gitConfigOpts, run: gitConfig},
		"tag":          {opts: gitTagOpts, run: gitTag},
		"reset":        {opts: gitResetOpts, run: gitReset},
		"mv":           {opts: gitMvOpts, run: gitMv},
		"restore":      {opts: gitRestoreOpts, run: gitRestore},
		"switch":       {opts: gitSwitchOpts, run: gitSwitch},
		"checkout":     {opts: gitCheckOpts, run: gitSwitch},
		"merge-base":   {opts: gitMergeBaseOpts, run: gitMergeBase},
		"stash":        {run: gitStash, raw: true},
		"rev-list":     {opts: gitRevListOpts, run: gitRevList},
		"cat-file":     {opts: gitCatFileOpts, run: gitCatFile},
		"ls-tree":      {opts: gitLsTreeOpts, run: gitLsTree},
		"describe":     {opts: gitDescribeOpts, run: gitDescribe},
		"shortlog":     {opts: gitShortlogOpts, run: gitShortlog},
		"check-ignore": {opts: gitCheckIgnoreOpts, run: gitCheckIgnore},
	}
}

var gitSubTable = gitSubs()

// gitSplit parses git's global options; it returns the -C directories,
// the -c pairs, the subcommand and its arguments.
func gitSplit(args []string) (dirs []string, cfg [][2]string, sub string, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-C" || a == "-c":
			if i+1 >= len(args) {
				return nil, nil, "", nil, fmt.Errorf("option requires an argument: %s", a)
			}
			i++
			if a == "-C" {
				dirs = append(dirs, args[i])
				continue
			}
			k, v, ok := strings.Cut(args[i], "=")
			if !ok {
				v = "true"
			}
			cfg = append(cfg, [2]string{strings.ToLower(k), v})
		case a == "--no-pager" || a == "-P" || a == "--no-optional-locks":
		case strings.HasPrefix(a, "-"):
			return nil, nil, "", nil, fmt.Errorf("option %s: %w", a, shell.ErrUnsupported)
		default:
			return dirs, cfg, a, args[i+1:], nil
		}
	}
	return dirs, cfg, "", nil, nil
}

// gitCheck is git's static Check.
func gitCheck(args []string) error {
	_, cfg, sub, rest, err := gitSplit(args)
	if err != nil {
		return fmt.Errorf("git: %w", err)
	}
	for _, kv := range cfg {
		if kv[0] == shell.Unknown {
			continue
		}
	}
	if sub == "" || sub == shell.Unknown {
		return fmt.Errorf("git: subcommand %q: %w", sub, shell.ErrUnsupported)
	}
	s, ok := gitSubTable[sub]
	if !ok {
		return fmt.Errorf("git %s: %w", sub, shell.ErrUnsupported)
	}
	if err := gitCheckArgs(sub, s, rest); err != nil {
		return fmt.Errorf("git %s: %w", sub, err)
	}
	return nil
}

// gitCheckArgs rejects flags of sub that are not implemented.
func gitCheckArgs(sub string, s *gitSub, rest []string) error {
	if sub == "stash" {
		return gitStashCheck(rest)
	}
	// log/show accept -N (a commit count).
	var filtered []string
	for i, a := range rest {
		if a == "--" {
			filtered = append(filtered, rest[i:]...)
			break
		}
		if (sub == "log" || sub == "show" || sub == "rev-list") && len(a) > 1 && a[0] == '-' && gitIsDigits(a[1:]) {
			continue
		}
		filtered = append(filtered, a)
	}
	opts, ops, err := s.opts.Parse(filtered)
	if err != nil {
		return fmt.Errorf("%s: %w", err, shell.ErrUnsupported)
	}
	if sub != "config" {
		revs := ops
		if i := slices.Index(filtered, "--"); i >= 0 {
			// Paths follow "--".
			_, revs, _ = s.opts.Parse(filtered[:i])
		}
		if err := gitCheckReflogRevs(revs); err != nil {
			return err
		}
		if sub == "show" || sub == "rev-parse" {
			// Both list a range's commits (rev-parse as B ^A); the tools
			// would read it as one name.
			for _, a := range revs {
				if strings.Contains(a, "..") || strings.HasPrefix(a, "^") {
					return fmt.Errorf("revision range %s: %w", a, shell.ErrUnsupported)
				}
			}
		}
		if sub != "cat-file" && sub != "ls-tree" && sub != "rev-parse" {
			for _, a := range revs {
				if strings.Contains(a, "^{") {
					return fmt.Errorf("revision %s: %w", a, shell.ErrUnsupported)
				}
			}
		}
	}
	if sub == "log" || sub == "show" || sub == "rev-list" {
		if err := gitCheckLogFilter(opts); err != nil {
			return fmt.Errorf("%w: %w", err, shell.ErrUnsupported)
		}
		for _, o := range opts {
			if o.Key == "date" && gitDateFormats[o.Value] == nil && !strings.Contains(o.Value, shell.Unknown) {
				return fmt.Errorf("--date=%s: %w", o.Value, shell.ErrUnsupported)
			}
		}
	}
	if sub == "diff" {
		for _, a := range ops {
			if a == "--" {
				break
			}
			if strings.HasPrefix(a, "^") {
				return fmt.Errorf("revision %s: %w", a, shell.ErrUnsupported)
			}
		}
	}
	if sub == "cat-file" {
		if err := gitCheckCatFile(opts, ops); err != nil {
			return fmt.Errorf("%w: %w", err, shell.ErrUnsupported)
		}
	}
	if sub == "merge-base" && len(ops) != 2 {
		return fmt.Errorf("merge-base with %d commits (only two): %w", len(ops), shell.ErrUnsupported)
	}
	if sub == "commit" {
		// Without a message git opens an editor.
		for _, o := range opts {
			if o.Key == "message" || o.Key == "no-edit" {
				return nil
			}
		}
		return fmt.Errorf("commit without -m (needs an editor): %w", shell.ErrUnsupported)
	}
	return nil
}

// gitCheckReflogRevs rejects reflog revisions (HEAD@{1}, @{-1}, main@{u})
// among the operands: the tools do not write logs/HEAD or a branch's
// reflog, so only the stash's (stash@{N}) can be read.
func gitCheckReflogRevs(ops []string) error {
	for _, a := range ops {
		if !strings.Contains(a, "@{") {
			continue
		}
		rev, _, _ := strings.Cut(a, ":")
		if i := strings.IndexAny(rev, "~^"); i >= 0 {
			rev = rev[:i]
		}
		if _, _, _, ok := gitStashArg(rev, false); !ok {
			return fmt.Errorf("reflog revision %s: %w", a, shell.ErrUnsupported)
		}
	}
	return nil
}

func gitIsDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// runGit runs git.
func runGit(ctx context.Context, c *shell.Call) int {
	dirs, cfg, sub, rest, err := gitSplit(c.Args[1:])
	if err != nil {
		return c.Fail(err.Error())
	}
	if sub == "" {
		return c.Fail("git without a subcommand")
	}
	if gitNetwork[sub] {
		return c.Fail("git " + sub + " (needs a network remote)")
	}
	s, ok := gitSubTable[sub]
	if !ok {
		return c.Fail("git " + sub)
	}
	if err := gitCheckArgs(sub, s, rest); err != nil {
		return c.Fail("git " + sub + ": " + strings.TrimSuffix(err.Error(), ": "+shell.ErrUnsupported.Error()))
	}
	g := &gitCtx{c: c, overrides: cfg, dir: c.Dir, sub: sub}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		g.dir = path.Clean(gitAbsFrom(g.dir, d))
		if fi, err := c.FS.Stat(g.dir); err != nil || !fi.IsDir() {
			fmt.Fprintf(c.Stderr, "fatal: cannot change to '%s': No such file or directory\n", d)
			return 128
		}
	}
	if s.raw {
		if code := g.open(); code != 0 {
			return code
		}
		return s.run(ctx, g, nil, rest)
	}
	// Parse sub options; log/show's -N becomes -n N.
	var pre []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			pre = append(pre, rest[i:]...)
			break
		}
		if (sub == "log" || sub == "show" || sub == "rev-list") && len(a) > 1 && a[0] == '-' && gitIsDigits(a[1:]) {
			pre = append(pre, "-n", a[1:])
			continue
		}
		pre = append(pre, a)
	}
	var tail []string
	for i, a := range pre {
		if a == "--" {
			pre, tail = pre[:i], pre[i:]
			break
		}
	}
	opts, operands, err := s.opts.Parse(pre)
	if err != nil {
		return c.Fail("git " + sub + ": " + err.Error())
	}
	operands = append(operands, tail...)
	if sub == "diff" && slices.ContainsFunc(opts, func(o Opt) bool { return o.Key == "no-index" }) {
		// Inside a repository or not; abbreviations follow it when inside.
		stderr := c.Stderr
		c.Stderr = io.Discard
		code := g.open()
		c.Stderr = stderr
		if c.Unsupported != nil {
			return code
		}
		if code != 0 {
			g.st = nil
		}
		return gitDiffNoIndex(ctx, g, opts, operands)
	}
	if !s.noRepo {
		if code := g.open(); code != 0 {
			return code
		}
	}
	return s.run(ctx, g, opts, operands)
}

func gitAbsFrom(dir, p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	return dir + "/" + p
}

// open finds the repository above g.dir, as git does.
func (g *gitCtx) open() int {
	d := path.Clean(g.dir)
	for {
		fi, err := g.c.FS.Lstat(path.Join(d, ".git"))
		if err == nil {
			if !fi.IsDir() {
				return g.c.Fail("a .git file (linked worktree or submodule)")
			}
			g.top = d
			g.st = filesystem.NewStorage(storage.Billy(g.c.FS, path.Join(d, ".git")), cache.NewObjectLRUDefault())
			if why := g.abbrevRefusal(); why != "" {
				// Abbreviated names would differ from git's.
				return g.c.Fail("git " + g.sub + " in " + why)
			}
			return 0
		}
		if d == "/" || d == "/workspace" || d == "/tmp" {
			if g.sub == "diff" {
				fmt.Fprintln(g.c.Stderr, "warning: Not a git repository. Use --no-index to compare two paths outside a working tree\nusage: git diff --no-index [<options>] <path> <path>")
				return 129
			}
			if d != "/" {
				// In the container /workspace and /tmp are mount points,
				// where git's discovery stops.
				fmt.Fprintln(g.c.Stderr, "fatal: not a git repository (or any parent up to mount point /)\nStopping at filesystem boundary (GIT_DISCOVERY_ACROSS_FILESYSTEM not set).")
				return 128
			}
			fmt.Fprintln(g.c.Stderr, "fatal: not a git repository (or any of the parent directories): .git")
			return 128
		}
		d = path.Dir(d)
	}
}

// fatal prints git's "fatal: " message and returns 128.
func (g *gitCtx) fatal(format string, args ...any) int {
	fmt.Fprintf(g.c.Stderr, "fatal: "+format+"\n", args...)
	return 128
}

// errorf prints git's "error: " message and returns status.
func (g *gitCtx) errorf(status int, format string, args ...any) int {
	fmt.Fprintf(g.c.Stderr, "error: "+format+"\n", args...)
	return status
}

// rel returns the repository path p (relative to the top) as seen from
// the working directory, like git's relative paths in status output.
func (g *gitCtx) rel(p string) string {
	prefix := g.prefix()
	if prefix == "" {
		return p
	}
	// Both relative to top: compute a path from prefix to p.
	from := strings.Split(prefix, "/")
	to := strings.Split(p, "/")
	i := 0
	for i < len(from) && i < len(to)-1 && from[i] == to[i] {
		i++
	}
	var parts []string
	for range from[i:] {
		parts = append(parts, "..")
	}
	parts = append(parts, to[i:]...)
	return strings.Join(parts, "/")
}

// prefix is the working directory relative to the top ("" at the top).
func (g *gitCtx) prefix() string {
	d := path.Clean(g.dir)
	if d == g.top {
		return ""
	}
	return strings.TrimPrefix(d, g.top+"/")
}

// pathspec turns a command-line path into a path relative to the top;
// ok is false when it lies outside the repository.
func (g *gitCtx) pathspec(p string) (string, bool) {
	full := path.Clean(gitAbsFrom(path.Clean(g.dir), p))
	if full == g.top {
		return "", true
	}
	if !strings.HasPrefix(full, g.top+"/") {
		return "", false
	}
	return strings.TrimPrefix(full, g.top+"/"), true
}

// headRef returns the branch HEAD points at ("refs/heads/main") and the
// commit it resolves to (zero hash when the branch is unborn); detached
// is true when HEAD holds a hash.
func (g *gitCtx) headRef() (branch plumbing.ReferenceName, h plumbing.Hash, detached bool, err error) {
	ref, err := g.st.Reference(plumbing.HEAD)
	if err != nil {
		return "", plumbing.ZeroHash, false, fmt.Errorf("read HEAD: %w", err)
	}
	if ref.Type() == plumbing.HashReference {
		return "", ref.Hash(), true, nil
	}
	branch = ref.Target()
	r, err := storer.ResolveReference(g.st, branch)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return branch, plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return "", plumbing.ZeroHash, false, fmt.Errorf("resolve %s: %w", branch, err)
	}
	return branch, r.Hash(), false, nil
}

// gitTreeEntry is one file of a flattened tree.
type gitTreeEntry struct {
	hash plumbing.Hash
	mode uint32
}

// flatTree maps every file path of commit h's tree to its blob; an empty
// map for the zero hash.
func (g *gitCtx) flatTree(h plumbing.Hash) (map[string]gitTreeEntry, error) {
	out := map[string]gitTreeEntry{}
	if h.IsZero() {
		return out, nil
	}
	cm, err := object.GetCommit(g.st, h)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", h, err)
	}
	return g.flatTreeOf(cm.TreeHash)
}

func (g *gitCtx) flatTreeOf(th plumbing.Hash) (map[string]gitTreeEntry, error) {
	out := map[string]gitTreeEntry{}
	t, err := object.GetTree(g.st, th)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", th, err)
	}
	w := object.NewTreeWalker(t, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("walk tree: %w", err)
		}
		if e.Mode.IsFile() || e.Mode == 0o160000 {
			out[name] = gitTreeEntry{hash: e.Hash, mode: uint32(e.Mode)}
		}
	}
	return out, nil
}

// blob returns the content of blob h.
func (g *gitCtx) blob(h plumbing.Hash) ([]byte, error) {
	o, err := g.st.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	r, err := o.Reader()
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	defer r.Close()
	return io.ReadAll(r)
}

// writeBlob stores data as a blob and returns its hash.
func (g *gitCtx) writeBlob(data []byte) (plumbing.Hash, error) {
	o := g.st.NewEncodedObject()
	o.SetType(plumbing.BlobObject)
	o.SetSize(int64(len(data)))
	w, err := o.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := g.st.SetEncodedObject(o)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write blob: %w", err)
	}
	return h, nil
}

// readWork returns the content git would hash for worktree path p
// (relative to the top): file bytes, or a symlink's target.
func (g *gitCtx) readWork(p string, fi fs.FileInfo) ([]byte, error) {
	full := g.top + "/" + p
	if fi.Mode()&fs.ModeSymlink != 0 {
		t, err := g.c.FS.Readlink(full)
		return []byte(t), err
	}
	f, err := g.c.FS.OpenFile(full, 0, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
