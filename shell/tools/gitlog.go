package tools

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// This file implements "git log" and "git show": the commit walk (by
// committer date, as git's default order), the pretty formats and the
// per-commit diffs.

var (
	gitLogOpts = NewOptions("oneline", "n,max-count=", "p,patch", "u", "stat", "format=", "pretty=?",
		"reverse", "all", "name-only", "name-status", "no-patch", "s", "abbrev-commit", "no-decorate", "first-parent",
		"grep=", "author=", "committer=", "i,regexp-ignore-case", "E,extended-regexp", "F,fixed-strings", "basic-regexp",
		"all-match", "invert-grep", "S=", "since=", "after=", "until=", "before=",
		"date=", "decorate=?", "merges", "no-merges")
	gitShowOpts = NewOptions("oneline", "p,patch", "u", "stat", "format=", "pretty=?", "name-only", "name-status",
		"no-patch", "s", "abbrev-commit", "no-decorate", "date=", "decorate=?")
)

// gitDate is git's default date format.
func gitDate(t time.Time) string { return t.Format("Mon Jan 2 15:04:05 2006 -0700") }

// gitLogSettings is the parsed display options of log and show.
type gitLogSettings struct {
	format   string // medium gitShort full fuller oneline raw, or "format:..."
	tformat  bool   // terminator semantics for format:
	abbrev   bool
	patch    bool
	stat     bool
	nameOnly bool
	nameStat bool
	max      int
	reverse  bool
	all      bool
	// firstParent follows only first parents; merges > 0 keeps only
	// merges, < 0 none.
	firstParent bool
	merges      int
	filter      *gitLogFilter // log only; nil for show
	date        func(time.Time) string
	// decor maps commits to their decorations when --decorate is on.
	decor map[plumbing.Hash]string
	// decorFull is the mode %d and %D use.
	decorFull bool
}

func gitParseLogOpts(g *gitCtx, opts []Opt, show bool) (*gitLogSettings, bool) {
	lo := &gitLogSettings{format: "medium", max: -1, patch: show, date: gitDate}
	for _, k := range gitLogConfigRefused {
		if _, set := g.config(k); set {
			g.c.Fail("git " + g.sub + " with " + k + " set")
			return nil, false
		}
	}
	if _, err := g.c.FS.Lstat(g.top + "/.mailmap"); err == nil {
		g.c.Fail("git " + g.sub + " with a .mailmap")
		return nil, false
	}
	decorate := ""
	if v, set := g.config("log.decorate"); set {
		var ok bool
		if decorate, ok = gitDecorateMode(v, true); !ok {
			g.c.Fail("git " + g.sub + " with log.decorate=" + v)
			return nil, false
		}
	}
	if v, set := g.config("log.date"); set {
		f, ok := gitDateFormats[v]
		if !ok {
			g.c.Fail("git " + g.sub + " with log.date=" + v)
			return nil, false
		}
		lo.date = f
	}
	for _, o := range opts {
		switch o.Key {
		case "date":
			f, ok := gitDateFormats[o.Value]
			if !ok {
				g.c.Fail("git " + g.sub + " --date=" + o.Value)
				return nil, false
			}
			lo.date = f
		case "decorate":
			decorate = "short"
			if o.HasArg {
				d, ok := gitDecorateMode(o.Value, false)
				if !ok {
					g.fatal("invalid --decorate option: %s", o.Value)
					return nil, false
				}
				decorate = d
			}
		case "no-decorate":
			decorate = ""
		case "oneline":
			lo.format, lo.abbrev = "oneline", true
		case "max-count":
			lo.max = gitAtoi(o.Value)
		case "patch", "u":
			lo.patch = true
		case "no-patch", "s":
			lo.patch, lo.stat, lo.nameOnly, lo.nameStat = false, false, false, false
		case "stat":
			lo.stat, lo.patch = true, false
		case "name-only":
			lo.nameOnly, lo.patch = true, false
		case "name-status":
			lo.nameStat, lo.patch = true, false
		case "format":
			lo.format, lo.tformat = "format:"+o.Value, true
			if !strings.Contains(o.Value, "%") {
				if _, ok := gitPrettyNames[o.Value]; ok {
					lo.format, lo.tformat = o.Value, false
				}
			}
		case "pretty":
			v := o.Value
			if !o.HasArg {
				v = "medium"
			}
			switch {
			case strings.HasPrefix(v, "format:"):
				lo.format = v
			case strings.HasPrefix(v, "tformat:"):
				lo.format, lo.tformat = "format:"+strings.TrimPrefix(v, "tformat:"), true
			case gitPrettyNames[v]:
				lo.format = v
			case strings.Contains(v, "%"):
				lo.format, lo.tformat = "format:"+v, true
			default:
				g.c.Fail("git pretty format " + v)
				return nil, false
			}
		case "reverse":
			lo.reverse = true
		case "all":
			lo.all = true
		case "abbrev-commit":
			lo.abbrev = true
		case "first-parent":
			lo.firstParent = true
		case "merges":
			lo.merges = 1
		case "no-merges":
			lo.merges = -1
		}
	}
	isFormat := strings.HasPrefix(lo.format, "format:")
	if isFormat {
		if bad := gitBadPlaceholder(lo.format[7:]); bad != "" {
			g.c.Fail("git format placeholder " + bad)
			return nil, false
		}
	}
	lo.decorFull = decorate == "full"
	if decorate != "" && !isFormat || isFormat && gitHasDecorPlaceholder(lo.format[7:]) {
		lo.decor = g.decorations(lo.decorFull)
	}
	return lo, true
}

var gitPrettyNames = map[string]bool{"oneline": true, "short": true, "medium": true, "full": true, "fuller": true}

// resolveRev resolves a revision: HEAD, branch, tag, hash prefix, with
// ~N and ^ suffixes.
func (g *gitCtx) resolveRev(rev string) (plumbing.Hash, bool) {
	base := rev
	var ops []string
	for {
		i := strings.LastIndexAny(base, "~^")
		if i < 0 {
			break
		}
		ops = append([]string{base[i:]}, ops...)
		base = base[:i]
	}
	if base == "@" {
		base = "HEAD"
	}
	h, ok := g.resolveName(base)
	if !ok {
		return h, false
	}
	for _, op := range ops {
		n := 1
		if len(op) > 1 {
			v, err := strconv.Atoi(op[1:])
			if err != nil {
				return h, false
			}
			n = v
		}
		cm, err := object.GetCommit(g.st, h)
		if err != nil {
			return h, false
		}
		if op[0] == '^' {
			if n == 0 {
				continue
			}
			if n > len(cm.ParentHashes) {
				return h, false
			}
			h = cm.ParentHashes[n-1]
			continue
		}
		for k := 0; k < n; k++ {
			if len(cm.ParentHashes) == 0 {
				return h, false
			}
			h = cm.ParentHashes[0]
			if cm, err = object.GetCommit(g.st, h); err != nil {
				return h, false
			}
		}
	}
	return h, true
}

func (g *gitCtx) resolveName(name string) (plumbing.Hash, bool) {
	if name == "HEAD" {
		_, h, _, err := g.headRef()
		return h, err == nil && !h.IsZero()
	}
	if strings.Contains(name, "@{") {
		// stash@{N}: the static check lets no other reflog form through.
		_, _, n, ok := gitStashArg(name, false)
		lines, err := g.readReflog(gitStashRef)
		if !ok || err != nil || n >= len(lines) {
			return plumbing.ZeroHash, false
		}
		return lines[len(lines)-1-n].new, true
	}
	for _, full := range []string{name, "refs/" + name, "refs/tags/" + name, "refs/heads/" + name} {
		if r, err := g.st.Reference(plumbing.ReferenceName(full)); err == nil && r.Type() == plumbing.HashReference {
			h := r.Hash()
			if t, err := object.GetTag(g.st, h); err == nil {
				h = t.Target
			}
			return h, true
		}
	}
	if len(name) >= 4 && len(name) <= 40 && gitIsHex(name) {
		if len(name) == 40 {
			h := plumbing.NewHash(name)
			if _, err := g.st.EncodedObject(plumbing.AnyObject, h); err == nil {
				return h, true
			}
			return h, false
		}
		var found plumbing.Hash
		n := 0
		iter, err := g.st.IterEncodedObjects(plumbing.AnyObject)
		if err != nil {
			return found, false
		}
		iter.ForEach(func(o plumbing.EncodedObject) error {
			if strings.HasPrefix(o.Hash().String(), strings.ToLower(name)) {
				found = o.Hash()
				n++
			}
			return nil
		})
		return found, n == 1
	}
	return plumbing.ZeroHash, false
}

func gitIsHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if !(s[i] >= '0' && s[i] <= '9') && !(c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// splitRevs separates revisions from paths (after "--", or when an
// argument is not a revision but exists as a file).
func (g *gitCtx) splitRevs(args []string) (revs []plumbing.Hash, paths []string, code int) {
	for i, a := range args {
		if a == "--" {
			for _, p := range args[i+1:] {
				sp, ok := g.pathspec(p)
				if !ok {
					return nil, nil, g.fatal("%s: '%s' is outside repository at '%s'", p, p, g.top)
				}
				paths = append(paths, sp)
			}
			return revs, paths, 0
		}
		if len(paths) == 0 {
			if h, ok := g.resolveRev(a); ok {
				revs = append(revs, h)
				continue
			}
		}
		if _, err := g.c.FS.Lstat(gitAbsFrom(g.dir, a)); err != nil {
			fmt.Fprintf(g.c.Stderr, "fatal: ambiguous argument '%s': unknown revision or path not in the working tree.\n"+
				"Use '--' to separate paths from revisions, like this:\n'git <command> [<revision>...] -- [<file>...]'\n", a)
			return nil, nil, 128
		}
		sp, ok := g.pathspec(a)
		if !ok {
			return nil, nil, g.fatal("%s: '%s' is outside repository at '%s'", a, a, g.top)
		}
		paths = append(paths, sp)
	}
	return revs, paths, 0
}

// commitChanges returns the changes a commit made against its first
// parent, limited to paths.
func (g *gitCtx) commitChanges(cm *object.Commit, paths []string) ([]gitFileChange, error) {
	newT, err := g.flatTreeOf(cm.TreeHash)
	if err != nil {
		return nil, err
	}
	oldT := map[string]gitTreeEntry{}
	if len(cm.ParentHashes) > 0 {
		if oldT, err = g.flatTree(cm.ParentHashes[0]); err != nil {
			return nil, err
		}
	}
	chs := gitTreeChanges(gitFilterPaths(oldT, paths), gitFilterPaths(newT, paths), true)
	return chs, nil
}

func gitFilterPaths(m map[string]gitTreeEntry, paths []string) map[string]gitTreeEntry {
	if len(paths) == 0 {
		return m
	}
	out := map[string]gitTreeEntry{}
	for p, e := range m {
		for _, sp := range paths {
			if gitUnder(p, sp) {
				out[p] = e
				break
			}
		}
	}
	return out
}

// logWalk reads the commit filters of log or rev-list into lo and their
// revisions (with --all's) into a walk; a status other than 0 ends the
// command with it.
func (g *gitCtx) logWalk(opts []Opt, args []string, lo *gitLogSettings) (*gitRevWalk, int) {
	var ok bool
	if lo.filter, ok = gitParseLogFilter(g, opts); !ok {
		return nil, gitExitStatus(g)
	}
	rw, code := g.parseRevWalk(args)
	if code != 0 {
		return nil, code
	}
	if lo.all {
		g.addAll(rw)
	}
	return rw, 0
}

// gitLog is "git log".
func gitLog(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	lo, ok := gitParseLogOpts(g, opts, false)
	if !ok {
		return gitExitStatus(g)
	}
	rw, code := g.logWalk(opts, args, lo)
	if code != 0 {
		return code
	}
	if len(rw.pos)+len(rw.sym) == 0 && !rw.limited() {
		br, h, _, err := g.headRef()
		if err != nil {
			return g.fatal("%v", err)
		}
		if h.IsZero() {
			return g.fatal("your current branch '%s' does not have any commits yet", strings.TrimPrefix(string(br), "refs/heads/"))
		}
		rw.pos = []plumbing.Hash{h}
	}
	list, code := g.walkCommits(ctx, rw, lo)
	if code != 0 {
		return code
	}
	paths := rw.paths
	w := bufio.NewWriter(g.c.Stdout)
	defer w.Flush()
	for i, cm := range list {
		if err := g.printCommit(ctx, w, cm, lo, paths, i == 0, i == len(list)-1); err != nil {
			return g.fatal("%v", err)
		}
	}
	return 0
}

// gitExitStatus returns the status after gitParseLogOpts failed: 125 when it
// refused, 128 otherwise.
func gitExitStatus(g *gitCtx) int {
	if g.c.Unsupported != nil {
		return 125
	}
	return 128
}

// printCommit prints one commit in lo's format, then its diff output.
func (g *gitCtx) printCommit(ctx context.Context, w *bufio.Writer, cm *object.Commit, lo *gitLogSettings, paths []string, first, last bool) error {
	hashStr := cm.Hash.String()
	if lo.abbrev {
		hashStr = g.short(cm.Hash)
	}
	if d := lo.decor[cm.Hash]; d != "" && !strings.HasPrefix(lo.format, "format:") {
		hashStr += " (" + d + ")"
	}
	isFormat := strings.HasPrefix(lo.format, "format:")
	if !first && lo.format != "oneline" && !isFormat {
		w.WriteString("\n")
	}
	if isFormat && !first && !lo.tformat {
		w.WriteString("\n")
	}
	indent := func(msg string) {
		for _, l := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
			w.WriteString("    " + l + "\n")
		}
	}
	merge := ""
	if len(cm.ParentHashes) > 1 {
		var ps []string
		for _, p := range cm.ParentHashes {
			ps = append(ps, g.short(p))
		}
		merge = "Merge: " + strings.Join(ps, " ") + "\n"
	}
	switch lo.format {
	case "oneline":
		fmt.Fprintf(w, "%s %s\n", hashStr, gitSubject(cm.Message))
	case "short":
		fmt.Fprintf(w, "commit %s\n%sAuthor: %s <%s>\n\n", hashStr, merge, cm.Author.Name, cm.Author.Email)
		indent(gitSubject(cm.Message))
	case "medium":
		fmt.Fprintf(w, "commit %s\n%sAuthor: %s <%s>\nDate:   %s\n\n", hashStr, merge, cm.Author.Name, cm.Author.Email, lo.date(cm.Author.When))
		indent(cm.Message)
	case "full":
		fmt.Fprintf(w, "commit %s\n%sAuthor: %s <%s>\nCommit: %s <%s>\n\n", hashStr, merge, cm.Author.Name, cm.Author.Email, cm.Committer.Name, cm.Committer.Email)
		indent(cm.Message)
	case "fuller":
		fmt.Fprintf(w, "commit %s\n%sAuthor:     %s <%s>\nAuthorDate: %s\nCommit:     %s <%s>\nCommitDate: %s\n\n", hashStr, merge,
			cm.Author.Name, cm.Author.Email, lo.date(cm.Author.When), cm.Committer.Name, cm.Committer.Email, lo.date(cm.Committer.When))
		indent(cm.Message)
	default:
		w.WriteString(g.expandFormat(lo.format[7:], cm, lo))
		if lo.tformat {
			w.WriteString("\n")
		}
	}
	if !lo.patch && !lo.stat && !lo.nameOnly && !lo.nameStat {
		return nil
	}
	if len(cm.ParentHashes) > 1 {
		return nil
	}
	chs, err := g.commitChanges(cm, paths)
	if err != nil {
		return err
	}
	if lo.filter != nil && lo.filter.pickaxe != "" {
		// Only the file pairs the pickaxe selected are shown.
		if chs, _, err = g.pickaxeFilter(lo.filter, chs); err != nil {
			return err
		}
	}
	if len(chs) == 0 {
		return nil
	}
	if lo.format != "oneline" && lo.format != "format:" {
		w.WriteString("\n")
	}
	for i := range chs {
		if err := g.load(&chs[i], nil); err != nil {
			return err
		}
	}
	g.writeDiffOutput(ctx, w, chs, lo.patch, lo.stat, lo.nameOnly, lo.nameStat, 3)
	return nil
}

// writeDiffOutput prints changes in the selected diff formats.
func (g *gitCtx) writeDiffOutput(ctx context.Context, w *bufio.Writer, chs []gitFileChange, patch, stat, nameOnly, nameStat bool, ctxLines int) {
	switch {
	case nameOnly:
		for _, fc := range chs {
			fmt.Fprintln(w, gitQuotePath(fc.newPath))
		}
	case nameStat:
		for _, fc := range chs {
			if fc.status == 'R' {
				fmt.Fprintf(w, "R100\t%s\t%s\n", gitQuotePath(fc.oldPath), gitQuotePath(fc.newPath))
				continue
			}
			fmt.Fprintf(w, "%c\t%s\n", fc.status, gitQuotePath(fc.newPath))
		}
	case stat:
		gitWriteStat(w, g.statRows(ctx, chs))
	}
	if patch {
		for i := range chs {
			g.writePatch(ctx, w, &chs[i], ctxLines)
		}
	}
}

// gitAtoi is C's atoi, which git 2.39 reads -n and --max-count with:
// leading blanks, a sign, the digits that follow; 0 when there are none.
// A negative count means no limit.
func gitAtoi(s string) int {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	n := 0
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9' && n < 1<<30; i++ {
		n = n*10 + int(s[i]-'0')
	}
	if neg {
		return -1
	}
	return n
}
