package tools

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// gitHist builds a three-commit history at distinct dates.
var gitHist = []string{"git init -q -b main", "write a one\\n", "git add a", "git commit -q -m first",
	"date 1700000100", "write a one\\ntwo\\n", "write b bee\\n", "git add a b", "git commit -q -m second -m 'with body'",
	"date 1700000200", "write c/d deep\\n", "git rm -q b", "git add c", "git commit -q -m third"}

const gitLong = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nl15\nl16\nl17\nl18\nl19\nl20\n"

func TestGitLogShow(t *testing.T) {
	runGitCases(t, []gitScenario{
		{name: "log", setup: gitHist, steps: []string{"git log"}},
		{name: "log-oneline", setup: gitHist, steps: []string{"git log --oneline", "git log --oneline -2", "git log -1 --oneline", "git log -n 1"}},
		{name: "log-p", setup: gitHist, steps: []string{"git log -p", "git log -p -1 --oneline"}},
		{name: "log-stat", setup: gitHist, steps: []string{"git log --stat", "git log --oneline --stat"}},
		{name: "log-format", setup: gitHist, steps: []string{"git log --format=%H", "git log --format='%h %s (%an <%ae>) %ad'",
			"git log --pretty=format:'%h|%cn|%ce|%cd'", "git log --format='%s%n%b--'", "git log --format=%at:%ct:%P", "git log --format=%T%n%t%n%p"}},
		{name: "log-pretty", setup: gitHist, steps: []string{"git log --pretty=oneline", "git log --pretty=short", "git log --pretty=full", "git log --pretty=fuller", "git log --pretty=medium -1"}},
		{name: "log-reverse", setup: gitHist, steps: []string{"git log --reverse --oneline", "git log --reverse --format=%s -2"}},
		{name: "log-path", setup: gitHist, steps: []string{"git log --oneline -- b", "git log --oneline c", "git log --format=%s a"}},
		{name: "log-rev", setup: gitHist, steps: []string{"git log --oneline HEAD~1", "git log --oneline HEAD^^", "git log --oneline main"}},
		{name: "log-name", setup: gitHist, steps: []string{"git log --name-only --oneline", "git log --name-status --format=%s"}},
		{name: "log-empty", setup: gitBase, steps: []string{"git log"}},
		{name: "log-bad-rev", setup: gitHist, steps: []string{"git log nosuch"}},
		{name: "log-all", setup: append(append([]string{}, gitHist...), "git branch side HEAD~2", "git checkout -q side", "date 1700000300", "write s s\\n", "git add s", "git commit -q -m side", "git checkout -q main"),
			steps: []string{"git log --all --oneline", "git log --oneline"}},
		{name: "log-amend-date", setup: gitHist, steps: []string{"date 1700000500", "git commit --amend -m amended", "git log -2 --format='%s %ad %cd'"}},
		{name: "show", setup: gitHist, steps: []string{"git show", "git show HEAD~1", "git show --stat", "git show --name-only HEAD~1", "git show --oneline -s"}},
		{name: "show-path", setup: gitHist, steps: []string{"git show HEAD:a", "git show HEAD~1:b", "git show HEAD:c/d", "git show HEAD:nope"}},
		{name: "show-root", setup: gitHist, steps: []string{"git show HEAD~2", "git show --format=%s HEAD~2"}},
	})
}

func TestGitDiff(t *testing.T) {
	runGitCases(t, []gitScenario{
		{name: "diff-none", files: map[string]string{"a": "a\n"}, setup: gitOne, steps: []string{"git diff", "git diff --cached", "git diff --stat"}},
		{name: "diff-worktree", files: map[string]string{"a": "one\ntwo\nthree\n", "b": "b\n"}, setup: gitOne,
			steps: []string{"write a one\\n2\\nthree\\nfour\\n", "git diff", "git diff --stat", "git diff --name-only", "git diff --name-status", "git diff --numstat", "git diff a", "git diff -- b"}},
		{name: "diff-cached", files: map[string]string{"a": "one\n"}, setup: gitOne,
			steps: []string{"write a two\\n", "write n new\\n", "git add a n", "git diff --cached", "git diff --staged --stat", "git diff", "git diff HEAD"}},
		{name: "diff-deleted", files: map[string]string{"a": "one\ntwo\n", "b": "x"}, setup: gitOne,
			steps: []string{"rm a", "git diff", "git diff --stat", "git diff --name-status"}},
		{name: "diff-noeol", files: map[string]string{"a": "one\ntwo"}, setup: gitOne,
			steps: []string{"write a one\\ntwo\\n", "git diff", "write a one\\n3", "git diff"}},
		{name: "diff-hunks", files: map[string]string{"f": gitLong}, setup: gitOne,
			steps: []string{"write f l1\\nL2\\nl3\\nl4\\nl5\\nl6\\nl7\\nl8\\nl9\\nl10\\nl11\\nl12\\nl13\\nl14\\nl15\\nl16\\nl17\\nL18\\nl19\\nl20\\n", "git diff", "git diff -U1", "git diff --unified=0", "git diff -U10"}},
		{name: "diff-funcname", files: map[string]string{"m.c": "int main(void)\n{\n\tint a;\n\tint b;\n\tint c;\n\tint d;\n\treturn 0;\n}\n"}, setup: gitOne,
			steps: []string{"write m.c int main(void)\\n{\\n\\tint a;\\n\\tint b;\\n\\tint c;\\n\\tint d;\\n\\treturn 1;\\n}\\n", "git diff"}},
		{name: "diff-commits", setup: gitHist, steps: []string{"git diff HEAD~2 HEAD", "git diff HEAD~1..HEAD", "git diff --stat HEAD~2", "git diff --name-only HEAD~2 HEAD~1"}},
		{name: "diff-mode", files: map[string]string{"s": "x\n"}, setup: gitOne, steps: []string{"chmod s", "git diff", "write s y\\n", "git diff"}},
		{name: "diff-binary", files: map[string]string{"a": "x"}, setup: gitOne, steps: []string{"write bin \x00\x01", "git add bin", "git diff --cached", "git diff --cached --stat"}},
		{name: "diff-exit-code", files: map[string]string{"a": "x\n"}, setup: gitOne, steps: []string{"git diff --exit-code", "write a y\\n", "git diff --exit-code", "git diff --quiet"}},
		{name: "diff-new-empty", files: map[string]string{"a": "x\n"}, setup: gitOne, steps: []string{"write e ", "git add e", "git diff --cached", "git diff --cached --stat"}},
		{name: "diff-rename", files: map[string]string{"a": "x\ny\n"}, setup: gitOne, steps: []string{"git rm -q --cached a", "rm a", "write b x\\ny\\n", "git add b", "git diff --cached", "git diff --cached --stat", "git diff --cached --name-status"}},
		{name: "diff-typechange", files: map[string]string{"a": "x\n", "t": "target\n"}, setup: gitOne,
			steps: []string{"ln t a", "git diff", "git diff --stat", "git diff --name-status", "git add a", "git diff --cached", "git commit -q -m typechange", "git show", "git log --stat -1"}},
		{name: "diff-big-stat", files: map[string]string{"a": ""}, setup: gitOne,
			steps: []string{"write a " + gitMany(120), "write a-really-long-file-name-for-the-stat-column.txt x\\n", "git add .", "git diff --cached --stat", "git diff HEAD --stat"}},
	})
}

func gitMany(n int) string {
	s := ""
	for i := 0; i < n; i++ {
		s += "line\\n"
	}
	return s
}

func TestGitRefs(t *testing.T) {
	runGitCases(t, []gitScenario{
		{name: "branch-list", setup: gitHist, steps: []string{"git branch", "git branch feature", "git branch", "git branch old HEAD~2", "git branch -l", "git branch --show-current"}},
		{name: "branch-exists", setup: gitHist, steps: []string{"git branch main", "git branch 'bad..name'", "git branch x nosuch"}},
		{name: "branch-unborn", setup: gitBase, steps: []string{"git branch", "git branch x", "git branch --show-current"}},
		{name: "branch-delete", setup: gitHist, steps: []string{"git branch f", "git branch -d f", "git branch", "git branch -d main", "git branch -d nosuch"}},
		{name: "branch-delete-unmerged", setup: append(append([]string{}, gitHist...), "git checkout -q -b f", "write z z\\n", "git add z", "git commit -q -m z", "git checkout -q main"),
			steps: []string{"git branch -d f", "git branch -D f", "git branch"}},
		{name: "branch-move", setup: gitHist, steps: []string{"git branch f", "git branch -m f g", "git branch", "git branch -m trunk", "git branch", "git status -sb", "git branch -M g trunk"}},
		{name: "tag", setup: gitHist, steps: []string{"git tag", "git tag v1", "git tag v0 HEAD~2", "git tag", "git tag v1", "git log --oneline v0", "git tag -d v0", "git tag", "git tag -d v0"}},
		{name: "tag-annotated", setup: gitHist, steps: []string{"git tag -a v2 -m 'release two'", "git tag", "git log --oneline -1 v2", "git rev-parse v2^{}", "git rev-parse v2", "git rev-parse v2^{commit} v2^{tree} HEAD^{tree}", "git rev-parse --verify v2^{}", "git rev-parse --short v2"}},
		{name: "tag-annotated2", setup: gitHist, steps: []string{"git tag -a v2 -m 'release two'", "git tag -m msg v3 HEAD~1", "git tag -l", "git log --oneline -1 v2", "git tag -l 'v*'"}},
		{name: "rev-parse", setup: gitHist, steps: []string{"git rev-parse HEAD", "git rev-parse --short HEAD", "git rev-parse --abbrev-ref HEAD", "git rev-parse --show-toplevel",
			"git rev-parse --git-dir", "git rev-parse --is-inside-work-tree", "git rev-parse HEAD~1 HEAD~2", "git rev-parse main", "git rev-parse --short=10 HEAD", "git rev-parse --verify HEAD", "git rev-parse nosuch", "git rev-parse --show-prefix"}},
		{name: "rev-parse-sub", files: map[string]string{"d/e/f": "x\n"}, setup: gitOne, steps: []string{"git -C d/e rev-parse --show-toplevel", "git -C d/e rev-parse --git-dir", "git -C d/e rev-parse --show-prefix", "git -C d/e rev-parse --show-cdup"}},
		{name: "rev-parse-unborn", setup: gitBase, steps: []string{"git rev-parse --abbrev-ref HEAD", "git rev-parse --verify -q HEAD", "git rev-parse --is-inside-work-tree"}},
		{name: "ls-files", files: map[string]string{"a": "a\n", "d/b": "b\n", ".gitignore": "*.o\n"}, setup: gitOne,
			steps: []string{"git ls-files", "git ls-files -s", "write a changed\\n", "rm d/b", "write n new\\n", "write x.o obj", "git ls-files -m", "git ls-files -d", "git ls-files -o --exclude-standard", "git ls-files --others", "git ls-files d", "git -C d ls-files"}},
		{name: "config", setup: gitBase, steps: []string{"git config user.name 'Some One'", "git config user.name", "git config user.email", "git config core.bare", "git config --list", "git config --unset user.name", "git config user.name"}},
		{name: "config-commit", files: map[string]string{"a": "a\n"}, setup: gitBase, steps: []string{"git config user.name Cfg", "git add a", "git commit -q -m x", "git log --format=%an"}, known: "GIT_AUTHOR_NAME in env wins in both; kept as a check of precedence"},
		{name: "C-flag", files: map[string]string{"sub/a": "a\n"}, steps: []string{"git -C sub init -q -b main", "git -C sub add .", "git -C sub commit -q -m x", "git -C sub log --oneline", "git -C nosuch status"}},
		{name: "subdir-status", files: map[string]string{"d/a": "a\n", "b": "b\n"}, setup: gitOne, steps: []string{"write d/a changed\\n", "write b bb\\n", "write d/n n\\n", "git -C d status", "git -C d status -s", "git -C d status --porcelain", "git -C d add n", "git -C d diff --stat"}},
	})
}

func TestGitResetSwitch(t *testing.T) {
	runGitCases(t, []gitScenario{
		{name: "reset-soft", setup: gitHist, steps: []string{"git reset --soft HEAD~1", "git status", "git log --oneline"}},
		{name: "reset-mixed", setup: gitHist, steps: []string{"git reset HEAD~1", "git status", "git status -s"}},
		{name: "reset-mixed-flag", setup: gitHist, steps: []string{"git reset --mixed HEAD~2", "git status -s", "git log --oneline"}},
		{name: "reset-hard", setup: gitHist, steps: []string{"write a dirty\\n", "git reset --hard HEAD~1", "git status", "git log --oneline"}},
		{name: "reset-hard-q", setup: gitHist, steps: []string{"git reset -q --hard HEAD~2", "git status -s"}},
		{name: "reset-hard-head", setup: gitHist, steps: []string{"write a dirty\\n", "write c/d x\\n", "git add a", "git reset --hard", "git status -s"}},
		{name: "reset-path", setup: gitHist, steps: []string{"write a new\\n", "git add a", "git reset a", "git status -s", "git add a", "git reset -q -- a", "git status -s"}},
		{name: "reset-unstaged-report", setup: gitHist, steps: []string{"write a new\\n", "git add a", "git reset", "git status -s"}},
		{name: "switch", setup: append(append([]string{}, gitHist...), "git branch old HEAD~2"),
			steps: []string{"git switch old", "git status", "git branch", "git switch main", "git switch main", "git switch nosuch"}},
		{name: "switch-c", setup: gitHist, steps: []string{"git switch -c feat", "git branch", "write f f\\n", "git add f", "git commit -q -m f", "git switch main", "git status -s", "git switch -c feat"}},
		{name: "checkout-b", setup: gitHist, steps: []string{"git checkout -b topic", "git status -sb", "git checkout main", "git checkout -q topic", "git branch --show-current"}},
		{name: "amend-no-edit", setup: gitHist, steps: []string{"write a more\\n", "git add a", "git commit --amend --no-edit", "git log --oneline"}},
		{name: "diff-realistic-go", files: map[string]string{"m.go": "package m\n\nimport \"fmt\"\n\nfunc A() {\n\tfmt.Println(\"a\")\n}\n\nfunc B() int {\n\treturn 1\n}\n\nfunc C() {}\n"}, setup: gitOne,
			steps: []string{"write m.go package m\\n\\nimport (\\n\\t\"fmt\"\\n\\t\"os\"\\n)\\n\\nfunc A() {\\n\\tfmt.Println(\"a\")\\n\\tos.Exit(0)\\n}\\n\\nfunc B() int {\\n\\treturn 2\\n}\\n", "git diff", "git diff --stat", "git commit -q -am edit", "git show"}},
		{name: "checkout-subdirs", setup: append(append([]string{}, gitHist...), "git branch old HEAD~2"),
			steps: []string{"git checkout old", "git ls-files", "git checkout main", "git ls-files"}},
	})
}

func TestGitMvRestore(t *testing.T) {
	runGitCases(t, []gitScenario{
		{name: "mv-file", setup: gitHist, steps: []string{"git mv a z", "git status", "git status -s", "git commit -q -m mv", "git log --stat -1"}},
		{name: "mv-into-dir", setup: gitHist, steps: []string{"git mv a c", "git status -s"}},
		{name: "mv-dir", setup: gitHist, steps: []string{"git mv c e", "git status -s", "git ls-files"}},
		{name: "mv-errors", setup: gitHist, steps: []string{"write u u\\n", "git mv u v", "git mv nosuch v", "git mv a c/d"}},
		{name: "restore", setup: gitHist, steps: []string{"write a dirty\\n", "git restore a", "git status -s", "rm c/d", "git restore c", "git status -s"}},
		{name: "restore-staged", setup: gitHist, steps: []string{"write a dirty\\n", "git add a", "git restore --staged a", "git status -s", "write n n\\n", "git add n", "git restore --staged n", "git status -s"}},
		{name: "restore-source", setup: gitHist, steps: []string{"git restore --source=HEAD~2 a", "git status -s", "git restore -s HEAD~1 --staged --worktree a", "git status -s"}},
		{name: "restore-missing", setup: gitHist, steps: []string{"git restore nosuch"}},
	})
}

// gitMerged adds a side branch (commit "side", touching s and a) merged
// back into main by a merge commit, on top of gitHist.
var gitMerged = append(append([]string{}, gitHist...),
	"git branch side HEAD~1", "git checkout -q side", "date 1700000300", "write s foo bar foo\\n", "write a one\\ntwo\\nfoo\\n", "git add s a",
	"git commit -q -m 'side: add foo' -m 'Fixes #12 (regex [chars]).'", "git checkout -q main", "date 1700000400",
	"git merge -q --no-edit side", "date 1700000500", "write c/d deep foo\\n", "git add c", "git commit -q -m 'fourth touches foo'")

func TestGitLogFilter(t *testing.T) {
	runGitCases(t, []gitScenario{
		{name: "grep", setup: gitMerged, steps: []string{"git log --oneline --grep=foo", "git log --format=%s --grep=second", "git log --grep=nomatch",
			"git log --format=%s --grep=Merge", "git log --format=%s --grep='^s'", "git log --format=%s --grep='with body'", "git log --format=%s --grep=body -1"}},
		{name: "grep-regex", setup: gitMerged, steps: []string{"git log --format=%s --grep='[chars]'", "git log --format=%s --grep='\\[chars\\]'",
			"git log --format=%s --grep='#1[0-9]'", "git log --format=%s --grep='foo|third'", "git log --format=%s -E --grep='foo|third'",
			"git log --format=%s --grep='f\\(o\\)\\1'", "git log --format=%s -F --grep='(regex'", "git log --format=%s --grep='(regex'",
			"git log --format=%s --grep='^$'", "git log --format=%s --grep='a\\('", "git log --format=%s -E --grep='a('", "git log --format=%s --grep='.*'"}},
		{name: "grep-case", setup: gitMerged, steps: []string{"git log --format=%s --grep=FOO", "git log --format=%s -i --grep=FOO",
			"git log --format=%s --regexp-ignore-case --grep=SIDE", "git log --format=%s --grep=Fixes --grep=third", "git log --format=%s --all-match --grep=side --grep=Fixes",
			"git log --format=%s --all-match --grep=side --grep=third"}},
		{name: "grep-invert", setup: gitMerged, steps: []string{"git log --format=%s --invert-grep --grep=foo", "git log --format=%s --invert-grep --grep=foo --grep=first",
			"git log --format=%s --invert-grep --grep=nomatch", "git log --format=%s --invert-grep --grep=.", "git log --oneline --invert-grep --grep=foo -2"}},
		{name: "grep-author", setup: append(append([]string{}, gitHist...), "date 1700000300", "write z z\\n", "git add z", "git -c user.name=x commit -q -m zed --author='Bob Other <bob@other.org>'"),
			steps: []string{"git log --format=%s --author=Bob", "git log --format=%s --author=bob", "git log --format=%s -i --author=bob", "git log --format=%s --author='other.org>$'",
				"git log --format=%s --author='^A U'", "git log --format=%s --author=1700000", "git log --format=%s --author=Bob --author=Thor", "git log --format=%s --committer=Mitter",
				"git log --format=%s --committer=Bob", "git log --format=%s --author=Thor --grep=second", "git log --format=%s --author=Bob --grep=second",
				"git log --format=%s --author=Thor --grep=second --grep=first --all-match", "git log --format=%s --author=Thor --invert-grep --grep=first", "git log --format=%s --author=nobody"}},
		{name: "grep-show-stat", setup: gitMerged, steps: []string{"git log --stat --grep=third", "git log -p --grep=side --format=%s", "git log --grep=foo --reverse --format=%s", "git log --grep=foo -- s"}},
		{name: "pickaxe", setup: gitMerged, steps: []string{"git log --format=%s -S foo", "git log --oneline -Sfoo", "git log --format=%s -S deep", "git log --format=%s -S two",
			"git log --format=%s -S nomatch", "git log --format=%s -S 'bar foo'", "git log --format=%s -S '[ch'", "git log --format=%s -S foo -1", "git log --format=%s -S foo -- a",
			"git log --format=%s -S one --reverse", "git log --stat --format=%s -S foo", "git log -p --format=%s -S deep", "git log --name-only --format=%s -S foo"}},
		{name: "pickaxe-counts", files: map[string]string{"f": "x x\n"}, setup: gitOne,
			steps: []string{"date 1700000100", "write f x\\nx\\n", "git commit -q -am same-count", "date 1700000200", "write f x\\n", "git commit -q -am fewer",
				"date 1700000300", "write g xxxx\\n", "git add g", "git commit -q -m overlapping", "git log --format=%s -S x", "git log --format=%s -S xx", "git log --format=%s -S xxx"}},
		{name: "pickaxe-binary", files: map[string]string{"t": "a\n"}, setup: gitOne,
			steps: []string{"date 1700000100", "write bin key\x00x", "git add bin", "git commit -q -m bin", "git log --format=%s -S key"}},
		{name: "pickaxe-exact-rename", files: map[string]string{"old": "key\n"}, setup: gitOne,
			steps: []string{"date 1700000100", "git mv old new", "git commit -q -m renamed", "git log --format=%s -S key"}},
		{name: "since-until", setup: gitMerged, steps: []string{"git log --format=%s --since='2023-11-14 22:15:00'", "git log --format=%s --after='2023-11-14 22:15:00'",
			"git log --format=%s --until='2023-11-14 22:15:00'", "git log --format=%s --before='2023-11-14 22:15:00'", "git log --format=%s --since='2023-11-14 22:15'",
			"git log --format=%s --since=2023-11-14T22:16:40", "git log --format=%s --until=2023-11-14T22:16:40", "git log --format=%s --since='2023-11-14 22:16:40' --until='2023-11-14 22:20:00'",
			"git log --format=%s --since=2030-01-01", "git log --format=%s --until=2020-01-01", "git log --format=%s --since=2020-01-01", "git log --format=%s --since=2023-11-14 --grep=foo"}},
		{name: "since-reorder", setup: []string{"git init -q -b main", "write a 1\\n", "git add a", "date 1700000300", "git commit -q -m new-root",
			"date 1700000100", "write a 2\\n", "git commit -q -am older-child", "date 1700000400", "write a 3\\n", "git commit -q -am newest"},
			steps: []string{"git log --format=%s --since='2023-11-14 22:16:00'", "git log --format=%s --until='2023-11-14 22:16:00'"}},
		{name: "log-filter-empty", setup: gitBase, steps: []string{"git log --grep=x", "git log -S x", "git log --since=2020-01-01"}},
	})
}

// TestGitLogDateNow covers the date forms that depend on the current
// time: "N units ago", and a date without a time (git takes the current
// time of day). The commits sit an hour either side of each boundary, so
// the seconds between the two runs never matter.
func TestGitLogDateNow(t *testing.T) {
	now := time.Now().Unix()
	at := func(ago int64) string { return "date " + strconv.FormatInt(now-ago, 10) }
	tod := now % 86400
	if tod > 86400-300 {
		// The date-only form takes the current time of day: a midnight
		// between git's run and ours would move its boundary by a day.
		t.Skip("within five minutes of midnight UTC")
	}
	day := time.Unix(now-3*86400, 0).UTC().Format("2006-01-02")
	dayStart := now - 3*86400 - tod
	setup := []string{"git init -q -b main", "write a 1\\n", "git add a", at(20 * 86400), "git commit -q -m old",
		"write a 2\\n", at(13*86400 + 3600), "git commit -q -am two-weeks-in",
		"write a 3\\n", "date " + strconv.FormatInt(dayStart+tod-3600, 10), "git commit -q -am before-day-boundary",
		"write a 4\\n", "date " + strconv.FormatInt(dayStart+tod+3600, 10), "git commit -q -am after-day-boundary",
		"write a 5\\n", at(2 * 3600), "git commit -q -am recent", "date " + strconv.FormatInt(now, 10)}
	runGitCases(t, []gitScenario{
		{name: "ago", setup: setup, steps: []string{"git log --format=%s --since='2 weeks ago'", "git log --format=%s --until='2 weeks ago'",
			"git log --format=%s --since='1 week ago'", "git log --format=%s --since='3 hours ago'", "git log --format=%s --since='1 hour ago'",
			"git log --format=%s --since='30 days ago'", "git log --format=%s --since='90 minutes ago'", "git log --format=%s --since='20000 seconds ago'",
			"git log --format=%s --after='1 day ago'", "git log --format=%s --before='1 day ago'"}},
		{name: "date-only", setup: setup, steps: []string{"git log --format=%s --since=" + day, "git log --format=%s --until=" + day}},
	})
}

func TestGitMergeBase(t *testing.T) {
	runGitCases(t, []gitScenario{
		{name: "merge-base", setup: append(append([]string{}, gitHist...), "git branch side HEAD~1", "git checkout -q side", "date 1700000300", "write s s\\n", "git add s", "git commit -q -m side", "git checkout -q main"),
			steps: []string{"git merge-base main side", "git merge-base side main", "git merge-base HEAD HEAD~2", "git merge-base main main", "git merge-base --all main side",
				"git merge-base main nosuch", "git merge-base nosuch main", "git merge-base --is-ancestor HEAD~1 main", "git merge-base --is-ancestor main HEAD~1",
				"git merge-base --is-ancestor side main", "git merge-base --is-ancestor HEAD~2 side", "git merge-base --is-ancestor main main", "git merge-base --is-ancestor main nosuch"}},
		{name: "merge-base-merged", setup: gitMerged, steps: []string{"git merge-base main side", "git merge-base HEAD~1 side", "git merge-base --is-ancestor side main", "git merge-base HEAD^2 HEAD~2"}},
		{name: "merge-base-unrelated", setup: append(append([]string{}, gitHist...), "git checkout -q --orphan other", "git rm -q -r --cached .", "write o o\\n", "git add o", "git commit -q -m orphan", "git checkout -q -f main"),
			steps: []string{"git merge-base main other", "git merge-base --is-ancestor main other"}},
		{name: "merge-base-tag", setup: append(append([]string{}, gitHist...), "git tag -a v1 -m v1 HEAD~1"), steps: []string{"git merge-base v1 main", "git merge-base --is-ancestor v1 HEAD"}},
		{name: "merge-base-empty", setup: gitBase, steps: []string{"git merge-base HEAD HEAD", "git merge-base --is-ancestor HEAD main"}},
	})
}

// TestGitRefusedAtRun covers forms the static check admits but whose
// answer, for this repository, could differ from git's: the run refuses
// them (status 125, nothing on stdout) so that they go to a container.
func TestGitRefusedAtRun(t *testing.T) {
	testenv.Require(t, "bash")
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	cases := []struct {
		name  string
		setup []string
		step  string
	}{
		// "old" and "new" are 80% alike: git pairs them as a rename and
		// the counts of "key" cancel out; we would list the commit.
		{name: "pickaxe-inexact-rename", setup: []string{"git init -q -b main", "write old key\\n1\\n2\\n3\\n4\\n", "git add old", "git commit -q -m one",
			"date 1700000100", "rm old", "write new key\\n1\\n2\\n3\\n5\\n", "git add -A", "git commit -q -m renamed"}, step: "git log --format=%s -S key"},
		// Two best common ancestors: git prints one by its walk order.
		{name: "merge-base-criss-cross", setup: []string{"git init -q -b main", "write a 1\\n", "git add a", "git commit -q -m root", "git branch b",
			"date 1700000100", "write a 2\\n", "git commit -q -am m1", "git checkout -q b", "date 1700000200", "write b 1\\n", "git add b", "git commit -q -m b1",
			"date 1700000300", "git merge -q --no-edit main", "git checkout -q main", "date 1700000400", "git merge -q --no-edit b~1"}, step: "git merge-base main b"},
		// stash apply/pop that need git's merge: the index is no longer
		// the stash's base, or the worktree is in the way.
		{name: "stash-pop-after-commit", setup: append(append([]string{}, gitStashBase...), "write a x\\n", "git stash -q", "write a y\\n", "git commit -q -am y"),
			step: "git stash pop"},
		{name: "stash-pop-conflicting-commit-elsewhere", setup: append(append([]string{}, gitStashBase...), "write a x\\n", "git stash -q", "write d/b y\\n", "git commit -q -am y"),
			step: "git stash pop"},
		{name: "stash-apply-staged", setup: append(append([]string{}, gitStashBase...), "write a x\\n", "git stash -q", "write d/b y\\n", "git add d/b"),
			step: "git stash apply"},
		{name: "stash-pop-over-local-change", setup: append(append([]string{}, gitStashBase...), "write a x\\n", "git stash -q", "write a z\\n"),
			step: "git stash pop"},
		{name: "stash-pop-untracked-in-the-way", setup: append(append([]string{}, gitStashBase...), "write n n\\n", "git add n", "git stash -q", "write n other\\n"),
			step: "git stash pop"},
		{name: "stash-pop-u-untracked-exists", setup: append(append([]string{}, gitStashBase...), "write u u\\n", "git stash -q -u", "write u other\\n"),
			step: "git stash pop --index"},
		{name: "stash-pop-file-in-the-way-of-dir", setup: append(append([]string{}, gitStashBase...), "write e/f n\\n", "git add e", "git stash -q", "write e file\\n"),
			step: "git stash pop"},
		{name: "stash-unmerged", setup: []string{"git init -q -b main", "write a 1\\n", "git add a", "git commit -q -m root", "git checkout -q -b b",
			"write a 2\\n", "git commit -q -am two", "git checkout -q main", "write a 3\\n", "git commit -q -am three", "!git merge -q b"}, step: "git stash"},
		{name: "stash-core-abbrev-bad", setup: append(append([]string{}, gitStashBase...), "git config core.abbrev 1x", "write a x\\n"), step: "git stash"},
		{name: "stash-u-global-excludes", setup: append(append([]string{}, gitStashBase...), "write .config/git/ignore *.tmp\\n", "write a x\\n"), step: "git stash -u"},
		// Path limiting through a merge in a walk with excluded commits:
		// git's simplification then depends on which parents are excluded.
		{name: "range-paths-merge", setup: gitMerged, step: "git log --oneline HEAD~3..main -- s"},
		// A commit older than its parent: git's limited walk may stop
		// marking excluded commits early.
		{name: "range-clock-skew", setup: []string{"git init -q -b main", "write a 1\\n", "git add a", "date 1700000500", "git commit -q -m new",
			"date 1700000100", "write a 2\\n", "git commit -q -am older", "date 1700000600", "write a 3\\n", "git commit -q -am newest"}, step: "git log --oneline HEAD~2..HEAD"},
		{name: "show-tag-oneline", setup: append(append([]string{}, gitHist...), "git tag -a v1 -m one"), step: "git show --oneline v1"},
		{name: "log-mailmap", setup: append(append([]string{}, gitHist...), "write .mailmap Someone <author@example.com>\\n"), step: "git log -1"},
		{name: "log-format-pretty", setup: append(append([]string{}, gitHist...), "git config format.pretty oneline"), step: "git log"},
		{name: "log-date-relative-config", setup: append(append([]string{}, gitHist...), "git config log.date human"), step: "git log"},
		{name: "ls-tree-subdir", setup: append(append([]string{}, gitHist...), "write c/e x\\n"), step: "git -C c ls-tree HEAD:c"},
		{name: "branch-a-remotes", setup: append(append([]string{}, gitHist...), "git update-ref refs/remotes/origin/main HEAD"), step: "git branch -a"},
		{name: "branch-v-upstream", setup: append(append([]string{}, gitHist...), "git config branch.main.remote .", "git config branch.main.merge refs/heads/main"), step: "git branch -v"},
		{name: "branch-list-bracket", setup: gitHist, step: "git branch --list '[m]*'"},
		// The merge's other side adds to git's count.
		{name: "describe-through-merge", setup: append(append([]string{}, gitMerged...), "git tag -a v0 -m v0 HEAD~3"), step: "git describe"},
		{name: "describe-two-tags", setup: append(append([]string{}, gitHist...), "git tag -a v1 -m v1", "git tag -a v2 -m v2"), step: "git describe"},
		// Without a revision git reads a log from standard input.
		{name: "shortlog-stdin", setup: gitHist, step: "git shortlog -sn"},
		{name: "shortlog-mailmap", setup: append(append([]string{}, gitHist...), "write .mailmap X <author@example.com>\\n"), step: "git shortlog -s HEAD"},
		{name: "check-ignore-global", setup: append(append([]string{}, gitHist...), "write .config/git/ignore *.tmp\\n"), step: "git check-ignore x.tmp"},
		{name: "check-ignore-trailing-blank", setup: append(append([]string{}, gitHist...), "write .gitignore '*.tmp  '\\n"), step: "git check-ignore -v x.tmp"},
		{name: "no-index-dirs-renames", setup: []string{"write d1/f a\\n", "write d2/g a\\n"}, step: "git diff --no-index d1 d2"},
		{name: "no-index-dir-one-side", setup: []string{"write d1/f/x a\\n", "write d2/f a\\n"}, step: "git diff --no-index d1 d2"},
		// Objects in another store count for git's abbreviations.
		{name: "alternates", setup: append(append([]string{}, gitHist...), "write .git/objects/info/alternates /tmp\\n"), step: "git log --oneline"},
		{name: "stash-show-alternates", setup: append(append([]string{}, gitStashBase...), "write a x\\n", "git stash -q", "write .git/objects/info/alternates /tmp\\n"), step: "git stash show -p"},
		{name: "stash-show-inexact-rename", setup: append(append([]string{}, gitStashBase...), "git mv a z", "write z one\\ntwo\\nthree\\n", "git stash -q"),
			step: "git stash show"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir := filepath.Join(root, "workspace")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			date := 1700000000
			for _, st := range tc.setup {
				argv := gitSplitStep(st)
				if gitDoDirect(t, dir, argv, &date) {
					continue
				}
				// "!git" marks a step that may fail (a merge conflict).
				if _, errs, code := runRealGit(t, dir, argv[1:], date); code != 0 && argv[0] != "!git" {
					t.Fatalf("setup %q: status %d: %s", st, code, errs)
				}
			}
			before := snapshotTree(t, root)
			view, err := storage.OpenRoot(root)
			if err != nil {
				t.Fatal(err)
			}
			defer view.Close()
			var out, errb bytes.Buffer
			argv := gitSplitStep(tc.step)
			c := &shell.Call{Args: argv, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
				Dir: "/workspace", FS: view, Env: gitEnv("/workspace", date)}
			if err := gitCheck(argv[1:]); err != nil {
				t.Fatalf("gitCheck(%q) = %v, want nil", argv, err)
			}
			if st := execTool(t.Context(), c); st != shell.ExitUnsupported || out.Len() != 0 || c.Unsupported == nil {
				t.Errorf("%q = %d, stdout %q, unsupported %v; want a refusal", tc.step, st, out.String(), c.Unsupported)
			}
			// Refused before any effect: the container runs it on the
			// same files.
			if diff := cmp.Diff(before, snapshotTree(t, root)); diff != "" {
				t.Errorf("%q changed files before refusing (-before +after):\n%s", tc.step, diff)
			}
		})
	}
}

// gitStashBase is a repository with three tracked files, two of them in
// a directory, and an excluded pattern.
var gitStashBase = []string{"git init -q -b main", "write a one\\ntwo\\n", "write d/b bee\\n", "write d/c sea\\n",
	"write .git/info/exclude *.log\\n", "git add .", "git commit -q -m 'first line' -m body"}

func TestGitStash(t *testing.T) {
	runGitCases(t, []gitScenario{
		{name: "stash-unborn", files: map[string]string{"a": "a\n"}, setup: gitBase,
			steps: []string{"git stash", "git stash -q", "git stash list", "git stash show", "git stash pop", "git stash apply", "git stash drop",
				"git stash clear", "git stash show stash@{0}", "git stash drop 1", "git stash show stash", "git status -s"}},
		{name: "stash-clean", setup: gitStashBase,
			steps: []string{"git stash", "git stash -q", "git stash push -u", "git stash list", "git stash show", "git stash pop", "git stash drop stash@{1}", "git stash pop 0"}},
		{name: "stash-modified", setup: gitStashBase,
			steps: []string{"write a one\\n2\\n", "git stash", "git status", "git stash list", "git stash show", "git stash show -p", "git stash show --stat",
				"git stash show --name-only", "git stash show --name-status", "git stash show --stat -p", "git stash pop", "git status -s", "git stash list", "git diff"}},
		{name: "stash-staged", setup: gitStashBase,
			steps: []string{"write a x\\n", "git add a", "write n new\\n", "git add n", "write d/b y\\n", "git stash", "git status -s", "git stash show -p",
				"git stash apply", "git status -s", "git diff --cached", "git stash list", "git stash drop", "git stash list"}},
		{name: "stash-staged-then-changed", setup: gitStashBase,
			steps: []string{"write a x\\n", "git add a", "write a y\\n", "git stash", "git stash show -p", "git stash pop", "git status -s", "git diff"}},
		{name: "stash-added-then-changed", setup: gitStashBase,
			steps: []string{"write n 1\\n", "git add n", "write n 2\\n", "git stash", "git stash show -p", "git stash pop", "git status -s", "git diff --cached"}},
		{name: "stash-staged-then-reverted", setup: gitStashBase,
			steps: []string{"write a x\\n", "git add a", "write a one\\ntwo\\n", "git stash", "git stash show", "git stash pop", "git status -s"}},
		{name: "stash-deleted", setup: gitStashBase,
			steps: []string{"rm a", "rm d/b", "git stash", "git status -s", "git stash show -p", "git stash show --name-status", "git stash pop", "git status -s"}},
		{name: "stash-staged-deleted", setup: gitStashBase,
			steps: []string{"git rm -q d/b", "git stash", "git status -s", "git stash pop", "git status -s"}},
		{name: "stash-whole-dir-deleted", setup: gitStashBase,
			steps: []string{"rm d", "git stash", "git status -s", "git stash pop", "git status -s"}},
		{name: "stash-new-dir", setup: gitStashBase,
			steps: []string{"write e/f/g new\\n", "git add e", "git stash", "git status -s", "git stash pop", "git status", "git ls-files"}},
		{name: "stash-untracked-kept", setup: gitStashBase,
			steps: []string{"write u u\\n", "write a x\\n", "git stash", "git status -s", "git stash pop", "git status -s"}},
		{name: "stash-include-untracked", setup: gitStashBase,
			steps: []string{"write u u\\n", "write d/e/f f\\n", "write d/i.log ignored\\n", "mkdir empty", "mkdir d/sub/deeper", "write a x\\n", "git stash -u",
				"git status -s", "git stash show", "git stash show -u", "git stash show --include-untracked -p", "git stash pop", "git status -s"}},
		{name: "stash-include-untracked-only", setup: gitStashBase,
			steps: []string{"write u u\\n", "git stash --include-untracked", "git status -s", "git stash list", "git stash pop", "git status -s"}},
		{name: "stash-include-untracked-none", setup: gitStashBase,
			steps: []string{"write a x\\n", "mkdir empty", "git stash -u", "git stash pop", "git status -s"}},
		{name: "stash-u-ignored-dir", setup: append(append([]string{}, gitStashBase...), "write .gitignore build/\\n", "git add .gitignore", "git commit -q -m ignore"),
			steps: []string{"mkdir build", "mkdir logs", "write logs/x.log l\\n", "write u u\\n", "git stash -u", "git stash pop", "git status -s"}},
		{name: "stash-message", setup: gitStashBase,
			steps: []string{"write a x\\n", "git stash push -m 'my work'", "write a y\\n", "git stash -m second", "git stash list", "write d/b z\\n",
				"git stash save three words here", "write d/c w\\n", "git stash push -m '  spaced   out  '", "write a w\\n", "git stash push -m ''",
				"git stash list", "git stash show stash@{3}", "git stash pop stash@{2}", "git stash list", "git stash drop", "git stash list"}},
		{name: "stash-quiet", setup: gitStashBase,
			steps: []string{"write a x\\n", "git stash -q", "git stash list", "git stash pop -q", "git status -s", "git stash push --quiet -m q", "git stash apply --quiet", "git stash drop -q", "git stash list"}},
		{name: "stash-multiple-drop", setup: gitStashBase,
			steps: []string{"write a 1\\n", "git stash", "date 1700000100", "write a 2\\n", "git stash", "date 1700000200", "write a 3\\n", "git stash",
				"date 1700000300", "write a 4\\n", "git stash", "git stash list", "git stash drop stash@{1}", "git stash list", "git stash drop 2", "git stash list",
				"git stash drop refs/stash@{0}", "git stash list", "git stash pop", "git stash list", "git status -s"}},
		{name: "stash-out-of-range", setup: gitStashBase,
			steps: []string{"write a 1\\n", "git stash", "git stash show stash@{5}", "git stash drop 3", "git stash pop refs/stash@{9}", "git stash apply 1", "git stash list"}},
		{name: "stash-clear", setup: gitStashBase,
			steps: []string{"write a 1\\n", "git stash", "write a 2\\n", "git stash", "git stash clear", "git stash list", "git stash show", "git stash clear"}},
		{name: "stash-apply-keeps", setup: gitStashBase,
			steps: []string{"write a 1\\n", "git stash", "git stash apply", "git stash list", "git checkout -q main", "git reset -q --hard", "git stash apply stash@{0}", "git stash show stash"}},
		{name: "stash-detached", setup: append(append([]string{}, gitStashBase...), "git checkout -q --detach"),
			steps: []string{"write a x\\n", "git stash", "git stash list", "git stash show", "git stash pop", "git status"}},
		{name: "stash-keep-index", setup: gitStashBase,
			steps: []string{"write a x\\n", "git add a", "write a y\\n", "write d/b z\\n", "git stash -k", "git status -s", "git diff --cached", "git stash show -p"}},
		{name: "stash-keep-index-new-deleted", setup: gitStashBase,
			steps: []string{"write n n\\n", "git add n", "git rm -q d/c", "write d/b z\\n", "git stash --keep-index", "git status -s", "git stash list"}},
		{name: "stash-symlinks-modes", setup: append(append([]string{}, gitStashBase...), "ln a link", "git add link", "git commit -q -m link"),
			steps: []string{"ln d/b link", "ln a newlink", "git add newlink", "write x.sh run\\n", "chmod x.sh", "rm a", "ln d/c a", "git stash -u", "git status -s",
				"git stash show -p --include-untracked", "git stash pop", "git status -s"}},
		{name: "stash-u-keep-index", setup: gitStashBase,
			steps: []string{"write a x\\n", "git add a", "write d/b z\\n", "write u u\\n", "git stash save -u -k both", "git status -s", "git stash list",
				"write d/c w\\n", "git stash push --keep-index --no-keep-index", "git status -s", "git stash show stash@{1} -u --name-status"}},
		{name: "stash-apply-index", setup: gitStashBase,
			steps: []string{"write a x\\n", "git add a", "write a y\\n", "write n n\\n", "git add n", "write d/b z\\n", "git stash", "git stash apply --index",
				"git status -s", "git diff --cached", "git reset -q --hard", "git stash pop --index", "git status -s"}},
		{name: "stash-subdir", setup: gitStashBase,
			steps: []string{"write d/b x\\n", "write a y\\n", "git -C d stash", "git -C d stash list", "git -C d stash show", "git -C d stash pop", "git -C d status -s"}},
		{name: "stash-rm-cached", setup: gitStashBase,
			steps: []string{"git rm -q --cached a", "git stash", "git status -s", "git stash show -p", "git stash pop", "git status -s"}},
		{name: "stash-rm-cached-u", setup: gitStashBase,
			steps: []string{"git rm -q --cached a", "write u u\\n", "git stash -u", "git status -s", "git ls-files", "!git stash show -p --include-untracked"}},
		{name: "stash-added-then-deleted", setup: gitStashBase,
			steps: []string{"write n n\\n", "git add n", "rm n", "write a x\\n", "git stash", "git status -s", "git stash show", "git stash pop", "git status -s"}},
		{name: "stash-mode", setup: gitStashBase,
			steps: []string{"chmod a", "git stash", "git status -s", "git stash show", "git stash pop", "git status -s"}},
		{name: "stash-staged-mode", setup: gitStashBase,
			steps: []string{"chmod a", "git add a", "git stash", "git status -s", "git stash pop", "git status -s"}},
		{name: "stash-pop-after-unrelated-dirty", setup: gitStashBase,
			steps: []string{"write a x\\n", "git stash", "write d/b dirty\\n", "git stash pop", "git status -s"}},
		{name: "stash-pop-onto-deleted", setup: gitStashBase,
			steps: []string{"write a x\\n", "git stash", "rm a", "git stash pop", "git status -s"}},
		{name: "stash-pop-same-tree-new-commit", setup: gitStashBase,
			steps: []string{"write a x\\n", "git stash", "git commit -q --allow-empty -m empty", "git stash pop", "git status -s"}},
		{name: "stash-revisions", setup: append(append([]string{}, gitStashBase...), "write a x\\n", "git stash -q", "date 1700000100", "write d/b y\\n", "git stash -q -m two"),
			steps: []string{"git log --oneline -1 stash@{0}", "git rev-parse stash@{1} refs/stash@{0} stash", "git diff --stat stash@{1}^1 stash@{1}",
				"git show stash@{1}:a", "git cat-file -p stash@{1}:a", "git rev-parse stash@{0}^{tree}", "git log --format=%s -1 stash", "git log --format=%s -1 stash@{1}^2", "git diff --name-only stash@{0}"}},
		{name: "stash-big-repo", setup: append(append([]string{}, gitStashBase...), "packblobs 17000"),
			steps: []string{"write a x\\n", "git stash", "git stash list", "write a y\\n", "git stash -u", "git stash pop", "git reset -q --hard", "git stash pop"}},
		{name: "stash-core-abbrev", setup: append(append([]string{}, gitStashBase...), "git config core.abbrev 12"),
			steps: []string{"write a x\\n", "git stash", "git stash list", "git stash show", "git stash pop"}},
		{name: "stash-made-by-git", setup: append(append([]string{}, gitStashBase...), "write a x\\n", "write n n\\n", "git add n", "write u u\\n", "git stash -u -m 'by git'"),
			steps: []string{"git stash list", "git stash show", "git stash show -p -u", "git stash pop", "git status -s"}},
		{name: "stash-read-by-git", setup: gitStashBase,
			steps: []string{"write a x\\n", "write n n\\n", "git add n", "write u u\\n", "git stash -u -m ours", "!git stash list", "!git stash show -p",
				"write a y\\n", "!git stash", "git stash list", "git stash show -p", "git stash drop", "!git stash pop", "git status -s", "!git stash list"}},
	})
}
