package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"rung.dev/rung/shell"
)

// This file implements "git stash": the action word, its option tables
// and static check, the stash reflog (logs/refs/stash, which is the list
// of stashes), and the actions that only read or drop entries (list,
// show, drop, clear). Push is in gitstashpush.go, apply and pop in
// gitstashapply.go. The objects and the reflog are exactly git's, so a
// stash made here is popped by git in the container and the reverse.

const gitStashRef = plumbing.ReferenceName("refs/stash")

// gitStashOpts holds each action's options; an action missing here (branch,
// create, store) goes to a container.
var gitStashOpts = map[string]*Options{
	"push":  NewOptions("m,message=", "u,include-untracked", "q,quiet", "k,keep-index", "no-keep-index"),
	"save":  NewOptions("m,message=", "u,include-untracked", "q,quiet", "k,keep-index", "no-keep-index"),
	"list":  NewOptions(),
	"show":  NewOptions("p,patch", "stat", "name-only", "name-status", "u,include-untracked"),
	"apply": NewOptions("index", "q,quiet"),
	"pop":   NewOptions("index", "q,quiet"),
	"drop":  NewOptions("q,quiet"),
	"clear": NewOptions(),
}

// gitStashAction splits stash's arguments into the action and its
// arguments: none, or an option first, is push (as in git).
func gitStashAction(args []string) (string, []string) {
	if len(args) == 0 {
		return "push", nil
	}
	if strings.HasPrefix(args[0], "-") && args[0] != shell.Unknown {
		return "push", args
	}
	return args[0], args[1:]
}

// gitStashCheck is the static check of "git stash ...".
func gitStashCheck(args []string) error {
	action, rest := gitStashAction(args)
	table, ok := gitStashOpts[action]
	if !ok {
		return fmt.Errorf("%s: %w", action, shell.ErrUnsupported)
	}
	opts, ops, err := table.Parse(rest)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", action, err, shell.ErrUnsupported)
	}
	switch action {
	case "push":
		if len(ops) > 0 || gitHasDashDash(rest) {
			return fmt.Errorf("push with pathspecs: %w", shell.ErrUnsupported)
		}
	case "save":
		if gitHasDashDash(rest) {
			return fmt.Errorf("save with --: %w", shell.ErrUnsupported)
		}
		for _, o := range opts {
			if o.Key == "message" && len(ops) > 0 {
				return fmt.Errorf("save with -m and a message: %w", shell.ErrUnsupported)
			}
		}
	case "list", "clear":
		if len(ops) > 0 {
			return fmt.Errorf("%s with arguments: %w", action, shell.ErrUnsupported)
		}
	default:
		if len(ops) > 1 {
			return fmt.Errorf("%s with %d stashes: %w", action, len(ops), shell.ErrUnsupported)
		}
		if len(ops) == 1 && ops[0] != shell.Unknown {
			if _, _, _, ok := gitStashArg(ops[0], action == "show" || action == "apply"); !ok {
				return fmt.Errorf("%s %s (not stash@{N}): %w", action, ops[0], shell.ErrUnsupported)
			}
		}
	}
	return nil
}

func gitHasDashDash(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return true
		}
	}
	return false
}

// gitStashArg parses a stash argument: N, stash@{N} or refs/stash@{N}
// (entry N of the reflog), or, when tip is allowed, stash or refs/stash
// (the ref itself). It returns the name git reports errors with (the
// argument, "refs/stash@{N}" for a bare number), the ref part git names
// in "log for ... only has" and the entry.
func gitStashArg(a string, tip bool) (rev, ref string, n int, ok bool) {
	if gitIsDigits(a) {
		n, err := strconv.Atoi(a)
		return "refs/stash@{" + a + "}", "refs/stash", n, err == nil
	}
	if a == "stash" || a == "refs/stash" {
		return a, a, 0, tip
	}
	for _, ref := range []string{"stash", "refs/stash"} {
		if num, found := strings.CutPrefix(a, ref+"@{"); found {
			num, closed := strings.CutSuffix(num, "}")
			if !closed || !gitIsDigits(num) {
				return "", "", 0, false
			}
			n, err := strconv.Atoi(num)
			return a, ref, n, err == nil
		}
	}
	return "", "", 0, false
}

// gitStash is "git stash ...".
func gitStash(ctx context.Context, g *gitCtx, _ []Opt, args []string) int {
	action, rest := gitStashAction(args)
	table := gitStashOpts[action]
	if table == nil {
		return g.c.Fail("git stash " + action)
	}
	opts, ops, err := table.Parse(rest)
	if err != nil {
		return g.c.Fail("git stash " + action + ": " + err.Error())
	}
	switch action {
	case "push", "save":
		return gitStashPush(ctx, g, action, opts, ops)
	case "list":
		return gitStashList(g)
	case "show":
		return gitStashShow(ctx, g, opts, ops)
	case "apply", "pop":
		return gitStashApply(ctx, g, action == "pop", opts, ops)
	case "drop":
		e, code := g.stashEntry(ops, false)
		if e == nil {
			return code
		}
		return g.dropStash(e, gitHasOpt(opts, "quiet"))
	case "clear":
		if err := g.clearStash(); err != nil {
			return g.fatal("%v", err)
		}
		return 0
	}
	return g.c.Fail("git stash " + action)
}

func gitHasOpt(opts []Opt, key string) bool {
	for _, o := range opts {
		if o.Key == key {
			return true
		}
	}
	return false
}

// gitReflogLine is one line of a reflog: the values before and after,
// and the rest as git wrote it (identity, date, tab, message).
type gitReflogLine struct {
	old, new plumbing.Hash
	rest     string
}

// msg is the line's message.
func (l gitReflogLine) msg() string {
	_, m, _ := strings.Cut(l.rest, "\t")
	return m
}

func (g *gitCtx) reflogFile(ref plumbing.ReferenceName) string {
	return g.top + "/.git/logs/" + string(ref)
}

// readReflog returns ref's reflog, oldest first; none when there is no
// log.
func (g *gitCtx) readReflog(ref plumbing.ReferenceName) ([]gitReflogLine, error) {
	b, err := g.readFile(g.reflogFile(ref))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read reflog of %s: %w", ref, err)
	}
	var out []gitReflogLine
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		if len(line) < 83 || line[40] != ' ' || line[81] != ' ' || !strings.HasSuffix(line, "\n") ||
			!gitIsHex(line[:40]) || !gitIsHex(line[41:81]) {
			return nil, fmt.Errorf("reflog of %s: malformed line %q", ref, line)
		}
		out = append(out, gitReflogLine{old: plumbing.NewHash(line[:40]), new: plumbing.NewHash(line[41:81]),
			rest: strings.TrimSuffix(line[82:], "\n")})
	}
	return out, nil
}

// writeReflog replaces ref's reflog with lines (through a lock file, as
// git does); no lines removes it.
func (g *gitCtx) writeReflog(ref plumbing.ReferenceName, lines []gitReflogLine) error {
	name := g.reflogFile(ref)
	if len(lines) == 0 {
		if err := g.c.FS.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove reflog of %s: %w", ref, err)
		}
		return nil
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s %s %s\n", l.old, l.new, l.rest)
	}
	if err := g.mkdirs(name[:strings.LastIndexByte(name, '/')]); err != nil {
		return err
	}
	if err := g.writeLocked(name, []byte(b.String())); err != nil {
		return fmt.Errorf("write reflog of %s: %w", ref, err)
	}
	return nil
}

// gitReflogMsg is the message as git stores it in a reflog: runs of
// whitespace become one space, with none at either end.
func gitReflogMsg(msg string) string {
	var b strings.Builder
	space := true
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		isSpace := c == ' ' || c == '\t' || c == '\n' || c == '\r'
		if space && isSpace {
			continue
		}
		space = isSpace
		if isSpace {
			c = ' '
		}
		b.WriteByte(c)
	}
	return strings.TrimRight(b.String(), " ")
}

// gitReflogWho is the identity and date part of a reflog line.
func gitReflogWho(sig object.Signature) string {
	return fmt.Sprintf("%s <%s> %d %s", sig.Name, sig.Email, sig.When.Unix(), sig.When.Format("-0700"))
}

// stashLog returns the stash reflog, checked against refs/stash: ok is
// false (and c.Fail called) when they disagree, a state only other tools
// leave.
func (g *gitCtx) stashLog() ([]gitReflogLine, int, bool) {
	lines, err := g.readReflog(gitStashRef)
	if err != nil {
		return nil, g.fatal("%v", err), false
	}
	ref, err := g.st.Reference(gitStashRef)
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		if len(lines) == 0 {
			return nil, 0, true
		}
	case err != nil:
		return nil, g.fatal("%v", err), false
	case len(lines) > 0 && ref.Type() == plumbing.HashReference && ref.Hash() == lines[len(lines)-1].new:
		return lines, 0, true
	}
	return nil, g.c.Fail("git stash with refs/stash and its reflog out of step"), false
}

// gitStashEntry is one stash: the WIP commit and the trees of its parts.
type gitStashEntry struct {
	rev   string // as git names it in messages
	n     int    // reflog entry, 0 the newest
	w     plumbing.Hash
	b     plumbing.Hash // the commit it was made on
	wTree plumbing.Hash
	bTree plumbing.Hash
	iTree plumbing.Hash
	uTree plumbing.Hash // zero without untracked files
	hasU  bool
}

// stashEntry resolves the stash the arguments name (the newest when
// none), printing git's error when there is none; tip allows "stash"
// and "refs/stash" (show and apply do, drop and pop cannot drop them).
func (g *gitCtx) stashEntry(args []string, tip bool) (*gitStashEntry, int) {
	lines, code, ok := g.stashLog()
	if !ok {
		return nil, code
	}
	rev, ref, n := "refs/stash@{0}", "refs/stash", 0
	if len(args) > 0 {
		if rev, ref, n, ok = gitStashArg(args[0], tip); !ok {
			return nil, g.c.Fail("git stash argument " + args[0] + " (not stash@{N})")
		}
	}
	switch {
	case len(lines) == 0 && len(args) == 0:
		fmt.Fprintln(g.c.Stderr, "No stash entries found.")
		return nil, 1
	case len(lines) == 0:
		return nil, g.errorf(1, "%s is not a valid reference", rev)
	case n >= len(lines):
		return nil, g.fatal("log for '%s' only has %d entries", ref, len(lines))
	}
	e := &gitStashEntry{rev: rev, n: n, w: lines[len(lines)-1-n].new}
	cm, err := object.GetCommit(g.st, e.w)
	if err != nil || len(cm.ParentHashes) < 2 || len(cm.ParentHashes) > 3 {
		return nil, g.c.Fail("git stash of an entry that is not a stash made by git stash push")
	}
	e.b, e.wTree = cm.ParentHashes[0], cm.TreeHash
	trees := make([]plumbing.Hash, len(cm.ParentHashes))
	for i, p := range cm.ParentHashes {
		pc, err := object.GetCommit(g.st, p)
		if err != nil {
			return nil, g.fatal("%v", err)
		}
		trees[i] = pc.TreeHash
	}
	e.bTree, e.iTree = trees[0], trees[1]
	if len(trees) == 3 {
		e.uTree, e.hasU = trees[2], true
	}
	return e, 0
}

// gitStashList is "git stash list": the reflog, newest first.
func gitStashList(g *gitCtx) int {
	lines, code, ok := g.stashLog()
	if !ok {
		return code
	}
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	for i := len(lines) - 1; i >= 0; i-- {
		fmt.Fprintf(w, "stash@{%d}: %s\n", len(lines)-1-i, lines[i].msg())
	}
	return 0
}

// dropStash removes entry e from the reflog as "git reflog delete
// --updateref --rewrite" does: the next newer entry's old value becomes
// the previous entry's new value, and refs/stash follows the newest; the
// ref goes when no entry is left.
func (g *gitCtx) dropStash(e *gitStashEntry, quiet bool) int {
	lines, code, ok := g.stashLog()
	if !ok {
		return code
	}
	k := len(lines) - 1 - e.n
	if k+1 < len(lines) {
		lines[k+1].old = plumbing.ZeroHash
		if k > 0 {
			lines[k+1].old = lines[k-1].new
		}
	}
	lines = append(lines[:k], lines[k+1:]...)
	if len(lines) == 0 {
		if err := g.clearStash(); err != nil {
			return g.fatal("%v", err)
		}
	} else {
		if err := g.writeReflog(gitStashRef, lines); err != nil {
			return g.fatal("%v", err)
		}
		if err := g.st.SetReference(plumbing.NewHashReference(gitStashRef, lines[len(lines)-1].new)); err != nil {
			return g.fatal("%v", err)
		}
	}
	if !quiet {
		fmt.Fprintf(g.c.Stdout, "Dropped %s (%s)\n", e.rev, e.w)
	}
	return 0
}

// clearStash removes refs/stash and its reflog.
func (g *gitCtx) clearStash() error {
	if err := g.st.RemoveReference(gitStashRef); err != nil && !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return fmt.Errorf("delete refs/stash: %w", err)
	}
	return g.writeReflog(gitStashRef, nil)
}

// gitStashShow is "git stash show": the diff from the commit the stash
// was made on to its worktree commit (with -u, its untracked files too),
// as --stat unless another format is asked for.
func gitStashShow(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	for _, k := range []string{"stash.showstat", "stash.showpatch", "stash.showincludeuntracked"} {
		if _, set := g.config(k); set {
			return g.c.Fail("git stash show with " + k + " set")
		}
	}
	var patch, stat, nameOnly, nameStat, untracked bool
	for _, o := range opts {
		switch o.Key {
		case "patch":
			patch = true
		case "stat":
			stat = true
		case "name-only":
			nameOnly = true
		case "name-status":
			nameStat = true
		case "include-untracked":
			untracked = true
		}
	}
	if (nameOnly || nameStat) && (patch || stat || nameOnly == nameStat) {
		return g.c.Fail("git stash show with these formats together")
	}
	if !patch && !nameOnly && !nameStat {
		stat = true
	}
	e, code := g.stashEntry(args, true)
	if e == nil {
		return code
	}
	from, err := g.flatTreeOf(e.bTree)
	if err != nil {
		return g.fatal("%v", err)
	}
	to, err := g.flatTreeOf(e.wTree)
	if err != nil {
		return g.fatal("%v", err)
	}
	if untracked && e.hasU {
		u, err := g.flatTreeOf(e.uTree)
		if err != nil {
			return g.fatal("%v", err)
		}
		for p, te := range u {
			if _, clash := to[p]; clash {
				return g.c.Fail("git stash show -u of a path both tracked and untracked")
			}
			to[p] = te
		}
	}
	chs := gitTreeChanges(from, to, true)
	if gitMayPairInexact(chs) {
		return g.c.Fail("git stash show with added and deleted files (git may pair them as a rename)")
	}
	for i := range chs {
		if err := g.load(&chs[i], nil); err != nil {
			return g.fatal("%v", err)
		}
	}
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	g.writeDiffOutput(ctx, w, chs, false, stat, nameOnly, nameStat, 3)
	if patch {
		if stat && len(chs) > 0 {
			w.WriteString("\n")
		}
		g.writeDiffOutput(ctx, w, chs, true, false, false, false, 3)
	}
	return 0
}

// gitMayPairInexact reports whether changes hold both an added and a
// deleted file: git pairs those as a rename when they are similar
// enough, which our exact pairing does not do.
func gitMayPairInexact(chs []gitFileChange) bool {
	var added, deleted bool
	for _, c := range chs {
		added = added || c.status == 'A'
		deleted = deleted || c.status == 'D'
	}
	return added && deleted
}
