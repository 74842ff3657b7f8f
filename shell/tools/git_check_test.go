package tools

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"rung.dev/rung/shell"
)

// TestGitCheck verifies the static Check: implemented forms pass,
// network and unimplemented ones are rejected as unsupported, and Run
// refuses the same forms with status 125 before writing to stdout.
func TestGitCheck(t *testing.T) {
	ok := [][]string{
		{"status"}, {"status", "-s"}, {"-C", "d", "status", "--porcelain"}, {"-c", "user.name=x", "commit", "-m", "m"},
		{"log", "--oneline", "-3"}, {"log", "--format=%h", "--", "a"}, {"diff", "--cached", "--stat"}, {"add", "-A"},
		{"--no-pager", "log"}, {"reset", "--hard", "HEAD~1"}, {"switch", "-c", "x"}, {"checkout", "-b", "y"},
		{"rev-parse", "--abbrev-ref", "HEAD"}, {"tag", "-a", "v1", "-m", "m"}, {"config", "--list"}, {"commit", "--amend", "--no-edit"}, {"log", shell.Unknown},
		{"log", "--grep=fix", "-i", "--all-match", "--grep", "x"}, {"log", "--invert-grep", "--grep=wip"}, {"log", "-E", "--grep=a|b", "--author=Bob"},
		{"log", "-S", "needle", "--oneline"}, {"log", "-Sneedle", "-p"}, {"log", "--since=2024-01-01"}, {"log", "--until=2024-01-01 12:00:00"},
		{"log", "--after=2024-01-01T12:00"}, {"log", "--since=2 weeks ago"}, {"log", "--before", "3 days ago"}, {"log", "--since", shell.Unknown},
		{"merge-base", "main", "HEAD"}, {"merge-base", "--is-ancestor", "a", "b"}, {"merge-base", "--all", "a", shell.Unknown},
		{"stash"}, {"stash", "-q"}, {"stash", "-m", "msg"}, {"stash", "-u", "-k"}, {"stash", "push", "--include-untracked", "--message=x"},
		{"stash", "save", "some", "words"}, {"stash", "save", "-q", "-u"}, {"stash", "list"}, {"stash", "show"}, {"stash", "show", "-p", "stash@{1}"},
		{"stash", "show", "--stat", "--patch", "-u", "2"}, {"stash", "show", "--name-only", "refs/stash@{0}"}, {"stash", "show", "stash"}, {"stash", "show", shell.Unknown},
		{"stash", "pop"}, {"stash", "pop", "--index", "-q", "stash@{0}"}, {"stash", "apply", "1"}, {"stash", "apply", "refs/stash"}, {"stash", "drop"},
		{"stash", "drop", "-q", "stash@{3}"}, {"stash", "clear"}, {"log", "--oneline", "stash@{0}"}, {"show", "stash@{1}:a"},
		{"diff", "stash@{0}^1", "stash@{0}"}, {"rev-parse", "refs/stash@{2}~1"}, {"log", "--", "odd@{name}"},
		{"log", "main..side"}, {"log", "A...B", "--oneline"}, {"log", "^a", "b"}, {"log", "--date=iso"}, {"log", "--date=short", "--format=%ad %d"},
		{"log", "--date", "iso-strict"}, {"log", "--date=relative"}, {"log", "--date", shell.Unknown}, {"log", "--decorate"}, {"log", "--decorate=full", "--oneline"}, {"show", "--decorate", "--date=rfc"},
		{"log", "--first-parent", "--no-merges"}, {"log", "--merges"}, {"rev-list", "HEAD"}, {"rev-list", "--count", "a..b"}, {"rev-list", "-5", "--reverse", "--all"},
		{"rev-list", "--max-count=3", "--first-parent", "HEAD", "--", "p"}, {"diff", "a...b"}, {"diff", "a.."},
		{"cat-file", "-p", "HEAD:a"}, {"cat-file", "-t", "v1"}, {"cat-file", "-e", "x"}, {"cat-file", "-s", "HEAD^{tree}"}, {"ls-tree", "-r", "--name-only", "HEAD"},
		{"ls-tree", "-l", "HEAD", "d/"}, {"rev-parse", "HEAD^{tree}"}, {"branch", "-v"}, {"branch", "-vv"}, {"branch", "-a"}, {"branch", "--list", "a*"},
		{"branch", "-r"}, {"branch", "-a", "-v", "--list", "x"}, {"describe"}, {"describe", "--tags", "--always", "--dirty"}, {"describe", "--abbrev=0", "HEAD~1"},
		{"check-ignore", "-v", "x"}, {"check-ignore", "-q", "--no-index", "x"}, {"check-ignore", "-v", "-n", "a", "b"},
		{"diff", "--no-index", "a", "b"}, {"diff", "--no-index", "--stat", "/dev/null", "b"},
		{"shortlog", "-sn", "HEAD"}, {"shortlog", "-sne", "--all"}, {"shortlog", "-s", "-c", "a..b"},
	}
	for _, a := range ok {
		if err := gitCheck(a); err != nil {
			t.Errorf("gitCheck(%q) = %v, want nil", a, err)
		}
	}
	bad := [][]string{
		{"push"}, {"clone", "https://example.com/r.git"}, {"fetch"}, {"pull"}, {"blame", "f"},
		{"restore", "--patch", "a"}, {"--git-dir=x", "status"}, {"status", "--ignored"}, {"log", "--graph"}, {"diff", "--word-diff"},
		{"commit", "--fixup=HEAD"}, {}, {"commit"}, {"commit", "-a"}, {"commit", "--amend"}, {"remote", "-v"}, {"submodule", "update"},
		{"log", "--since=yesterday"}, {"log", "--since=2 months ago"}, {"log", "--since=2.weeks.ago"}, {"log", "--until=2024-02-30"}, {"log", "--since=2024-01-01 12:00 +0200"},
		{"log", "--invert-grep", "--all-match", "--grep=a"}, {"log", "-S", "x", "-i"}, {"log", "-S", ""}, {"log", "-G", "x"}, {"log", "-S", "x", "--pickaxe-regex"},
		{"log", "-S", "x", "--pickaxe-all"}, {"log", "-P", "--grep=x"}, {"merge-base", "a"}, {"merge-base", "a", "b", "c"}, {"merge-base", "--octopus", "a", "b"},
		{"stash", "branch", "b"}, {"stash", "create"}, {"stash", "store", "x"}, {"stash", "push", "--", "a"}, {"stash", "push", "a"}, {"stash", "-p"},
		{"stash", "--staged"}, {"stash", "-a"}, {"stash", "--pathspec-from-file=f"}, {"stash", "list", "--oneline"}, {"stash", "clear", "x"},
		{"stash", "pop", "stash"}, {"stash", "drop", "refs/stash"}, {"stash", "drop", "HEAD"}, {"stash", "apply", "main"}, {"stash", "show", "stash@{x}"},
		{"stash", "show", "stash@{0}", "stash@{1}"}, {"log", "HEAD@{1}"}, {"show", "@{-1}"}, {"diff", "main@{u}"}, {"rev-parse", "stash@{x}"},
		{"reset", "--hard", "HEAD@{2}"}, {"log", "stash@{1.day.ago}"}, {"stash", "show", "--word-diff"}, {"stash", "save", "-m", "x", "y"}, {"stash", shell.Unknown},
		{"log", "--date=human"}, {"log", "--date=local"}, {"log", "--date=iso-local"}, {"log", "--date=format:%Y"},
		{"log", "--date=bogus"}, {"log", "--decorate-refs=refs/tags"}, {"rev-list", "--objects", "HEAD"}, {"rev-list", "--topo-order", "HEAD"},
		{"rev-list", "--parents", "HEAD"}, {"rev-list", "--left-right", "a...b"}, {"diff", "^a", "b"}, {"log", "--graph", "a..b"},
		{"cat-file", "blob", "x"}, {"cat-file", "--batch"}, {"cat-file", "-t", "-s", "x"}, {"cat-file", "-p"}, {"ls-tree", "-z", "HEAD"}, {"ls-tree", "--format=%(path)", "HEAD"},
		{"branch", "--contains", "x"}, {"branch", "--merged"}, {"branch", "-u", "origin/main"}, {"branch", "--sort=-committerdate"}, {"branch", "--format=%(refname)"},
		{"describe", "--contains"}, {"describe", "--match", "v*"}, {"describe", "--exclude=x"}, {"describe", "--first-parent"}, {"describe", "--dirty=x"},
		{"check-ignore", "--stdin"}, {"check-ignore", "-z", "x"},
		{"shortlog", "-w"}, {"shortlog", "--format=%s"}, {"shortlog", "--group=trailer:co-authored-by"},
		{"show", "a..b"}, {"show", "^a", "b"}, {"rev-parse", "a..b"}, {"rev-parse", "^a"}, {"show", "a...b"},
		{"log", "v1^{}"}, {"diff", "HEAD^{tree}"}, {"show", "v1^{commit}"},
		{"config", "--global", "user.name", "A B"}, {"config", "--global", "--get", "user.name"}, {"config", "--global", "--list"},
	}
	for _, a := range bad {
		err := gitCheck(a)
		if !errors.Is(err, shell.ErrUnsupported) {
			t.Errorf("gitCheck(%q) = %v, want ErrUnsupported", a, err)
			continue
		}
		var out, errb bytes.Buffer
		c := &shell.Call{Args: append([]string{"git"}, a...), Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Dir: "/workspace", Env: []string{"HOME=/workspace"}}
		if st := runGit(context.Background(), c); st != shell.ExitUnsupported || out.Len() != 0 || c.Unsupported == nil {
			t.Errorf("runGit(%q) = %d, stdout %q, unsupported %v", a, st, out.String(), c.Unsupported)
		}
	}
}
