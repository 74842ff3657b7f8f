package tools

import (
	"strconv"
	"testing"
	"time"
)

// TestGitAbbrev covers abbreviated names where git prints more than 7
// digits: a repository whose packs hold 2^14 objects or more, a prefix
// another object shares, and core.abbrev.
func TestGitAbbrev(t *testing.T) {
	big := append(append([]string{}, gitHist...), "packblobs 17000")
	runGitCases(t, []gitScenario{
		{name: "abbrev-big", setup: big,
			steps: []string{"git log --oneline", "git log --format='%h %t %p'", "git log --abbrev-commit -1", "git rev-parse --short HEAD", "git rev-parse --short=4 HEAD",
				"write a changed\\n", "git diff", "write new n\\n", "git add new", "git rm -q --cached b", "git diff --cached", "git reset -q", "git commit -am more", "git show --stat --oneline", "git reset --hard HEAD~1", "!git checkout -q --detach", "git status",
				"git branch", "git branch x", "git branch -d x", "git tag v", "git tag -d v"}},
		{name: "abbrev-config", setup: append(append([]string{}, gitHist...), "git config core.abbrev 12"),
			steps: []string{"git log --oneline", "git rev-parse --short HEAD", "git rev-parse --short=5 HEAD", "write a x\\n", "git diff", "git commit -qam x", "git log -1 --format=%h",
				"git -c core.abbrev=no log --oneline -1", "git -c core.abbrev=auto log --oneline -1", "git -c core.abbrev=40 log --oneline -1", "git -c core.abbrev=4 log --format=%h%n%p -2",
				"git -c core.abbrev=4 rev-parse --short HEAD", "git stash", "git stash list"}},
		{name: "abbrev-shared-prefix", setup: gitHist,
			steps: []string{"packblobs 5000", "git log --format=%h", "git rev-parse --short=4 HEAD~1", "git -c core.abbrev=4 log --format=%h:%t"}},
	})
}

// gitTagged is gitMerged with a lightweight tag, an annotated tag and a
// stash, and a branch on the merge's side parent.
var gitTagged = append(append([]string{}, gitMerged...), "git tag v1 HEAD~3", "git tag -a v2 -m 'release 2' HEAD~2", "git branch zz HEAD~1",
	"git branch aa HEAD~3", "write a stashed\\n", "git stash -q")

func TestGitLogDateDecorate(t *testing.T) {
	runGitCases(t, []gitScenario{
		{name: "date-formats", setup: append(append([]string{}, gitHist...), "date 1700000300", "write z z\\n", "git add z", "git commit -q -m zone --date='@1700000300 +0530'"),
			steps: []string{"git log --date=iso", "git log --date=iso8601 -1 --format=%ad%n%cd", "git log --date=iso-strict --pretty=fuller", "git log --date=iso8601-strict -1 --format=%ad",
				"git log --date=rfc -2", "git log --date=rfc2822 --format=%ad", "git log --date=short --format='%h %ad %s'", "git log --date=raw -1", "git log --date=unix --format=%ad:%cd",
				"git log --date=default -1", "git show --date=short -s", "git show --date=iso --format=%ad%n%aI%n%ai%n%aD HEAD~1",
				"git -c log.date=iso log -1", "git -c log.date=short log -1 --date=rfc --format=%ad"}},
		{name: "decorate", setup: gitTagged,
			steps: []string{"git log --oneline --decorate", "git log --decorate -2", "git log --decorate=full --oneline", "git log --decorate=short --format=fuller -1",
				"git log --decorate=no --oneline -2", "git log --decorate --no-decorate --oneline -1", "git log --no-decorate --decorate --oneline -1", "git log --format='%h%d|%D|%s'",
				"git log --decorate=full --format=%d -1", "git log --all --oneline --decorate", "git show --decorate -s v2", "git log --decorate=bogus -1", "git -c log.decorate=short log --oneline -2",
				"git -c log.decorate=full log --oneline -1", "git -c log.decorate=true log --oneline -1", "git -c log.decorate=auto log --oneline -1", "git -c log.decorate=no log --oneline -1",
				"git -c log.decorate=short log --oneline --no-decorate -1", "git stash list", "!git checkout -q v1", "git log --oneline --decorate -3", "git log --format=%D -3"}},
		{name: "show-tag", setup: gitTagged, steps: []string{"git show v2", "git show --stat v2", "git show -s --date=iso v2", "git show refs/tags/v2 --name-only",
			"git show v1", "git show v2~1 -s"}},
		{name: "decorate-remotes", setup: append(append([]string{}, gitHist...), "git update-ref refs/remotes/origin/main HEAD~1", "git update-ref refs/remotes/origin/zz HEAD",
			"git symbolic-ref refs/remotes/origin/HEAD refs/remotes/origin/main", "git update-ref refs/notes/x HEAD~2"),
			steps: []string{"git log --oneline --decorate", "git log --decorate=full --format=%d", "git log --all --format=%D", "!git checkout -q --orphan o",
				"!git commit -q -m orphan", "git log --all --oneline", "git rev-list --all", "!git update-ref refs/remotes/origin/main HEAD", "git log --all --oneline"}},
		{name: "decorate-unborn", setup: gitBase, steps: []string{"git log --decorate", "write a a\\n", "git add a", "git commit -qm a", "git log --decorate --oneline"}},
	})
}

func TestGitRanges(t *testing.T) {
	runGitCases(t, []gitScenario{
		{name: "log-ranges", setup: gitTagged,
			steps: []string{"git log --oneline side..main", "git log --oneline main..side", "git log --oneline v1..", "git log --oneline ..v1", "git log --format=%s side...main",
				"git log --oneline main...side", "git log --oneline ^side main", "git log --oneline main ^HEAD~2 ^side", "git log --oneline ^main", "git log --oneline HEAD..",
				"git log --oneline v2..v1", "git log --format=%s --reverse v1..main", "git log -1 --format=%s v1..main", "git log --oneline --first-parent v1..main",
				"git log --oneline --all ^main", "git log --stat --format=%s HEAD~1..HEAD", "git log --oneline --grep=foo aa..main",
				"git log --oneline nosuch..main", "git log --oneline main..nosuch", "git log --oneline ^nosuch", "git log --oneline main...nosuch", "git log --oneline .."}},
		{name: "log-merges-first-parent", setup: gitMerged,
			steps: []string{"git log --oneline -- s", "git log --oneline -- a", "git log --format=%s -- c", "git log --oneline --first-parent -- s", "git log --stat --format=%s -- a s",
				"git log --format=%s --reverse -- a", "git log --format=%s -1 -- s", "git log --oneline --first-parent", "git log --oneline --merges", "git log --oneline --no-merges", "git log --format=%s --first-parent --reverse"}},
		{name: "rev-list", setup: gitTagged,
			steps: []string{"git rev-list HEAD", "git rev-list main", "git rev-list --count HEAD", "git rev-list --count side..main", "git rev-list side...main", "git rev-list --max-count=2 HEAD",
				"git rev-list -n 1 HEAD", "git rev-list -2 HEAD", "git rev-list --reverse HEAD", "git rev-list --reverse -n 2 HEAD", "git rev-list --all", "git rev-list --count --all",
				"git rev-list --first-parent HEAD", "git rev-list --no-merges --count HEAD", "git rev-list --merges HEAD", "git rev-list HEAD -- s", "git rev-list HEAD -- nosuch", "git rev-list HEAD -- a", "git rev-list --first-parent HEAD -- s", "git rev-list -n 1x HEAD", "git rev-list --max-count=-1 --count HEAD",
				"git rev-list ^HEAD~1 HEAD", "git rev-list v2", "git rev-list --since='2023-11-14 22:16:40' HEAD", "git rev-list --grep=side HEAD",
				"git rev-list", "git rev-list --count", "git rev-list nosuch", "git rev-list -n x HEAD", "git rev-list HEAD..HEAD", "git rev-list --count v1..v1"}},
		{name: "all-detached", setup: append(append([]string{}, gitHist...), "git checkout -q --detach", "write a det\\n", "git commit -q -am detached", "git checkout -q main"),
			steps: []string{"git log --all --oneline", "git rev-list --all --count", "!git checkout -q --detach HEAD~1", "write a det2\\n", "!git commit -q -am det2",
				"git log --all --format=%s", "git rev-list --all", "git shortlog -s --all", "git log --all --oneline --decorate"}},
		{name: "rev-list-empty", setup: gitBase, steps: []string{"git rev-list HEAD", "git rev-list --all", "git rev-list --count --all"}},
		{name: "diff-ranges", setup: gitTagged,
			steps: []string{"git diff side...main", "git diff main...side --stat", "git diff v1..", "git diff ..v1 --name-only", "git diff HEAD~1..HEAD~1", "git diff side..main --stat", "git diff nosuch..main", "git diff main...nosuch"}},
	})
}

// gitTree is a history whose tree has a subdirectory, a unicode name with
// a space, an executable and a symlink.
var gitTree = append(append([]string{}, gitHist...), "write d/e/f x\\n", "write 'd/ü t' y\\n", "write run.sh #!/bin/sh\\n", "chmod run.sh", "ln a link",
	"git add .", "date 1700000300", "git commit -q -m tree", "git tag -a v1 -m 'one' HEAD~1", "git tag light")

func TestGitCatFileLsTree(t *testing.T) {
	runGitCases(t, []gitScenario{
		{name: "cat-file", setup: gitTree,
			steps: []string{"git cat-file -t HEAD", "git cat-file -p HEAD", "git cat-file -s HEAD", "git cat-file -e HEAD", "git cat-file -t HEAD:a", "git cat-file -p HEAD:a",
				"git cat-file -s HEAD:a", "git cat-file -p HEAD:", "git cat-file -t HEAD:d", "git cat-file -p HEAD:d", "git cat-file -p HEAD:d/e/f", "git cat-file -p HEAD:link",
				"git cat-file -t v1", "git cat-file -p v1", "git cat-file -s v1", "git cat-file -t light", "git cat-file -p HEAD~1", "git cat-file -p HEAD^{tree}",
				"git cat-file -t nosuch", "git cat-file -e nosuch", "git cat-file -p HEAD:nosuch", "git cat-file -e HEAD:nosuch", "git cat-file -p nosuch:a",
				"git cat-file -e 0000000000000000000000000000000000000001", "git cat-file -t HEAD~9", "git cat-file -p main:d/", "git cat-file -t refs/tags/v1"}},
		{name: "cat-file-hashes", setup: gitTree,
			steps: []string{"git cat-file -t 8d0e41234f24b6da002d962a26c2495ea16a425f", "git cat-file -p 8d0e4123", "git cat-file -e 8d0e41234f24b6da002d962a26c2495ea16a425f"}},
		{name: "cat-file-empty", setup: gitBase, steps: []string{"git cat-file -t HEAD", "git cat-file -e HEAD"}},
		{name: "ls-tree", setup: gitTree,
			steps: []string{"git ls-tree HEAD", "git ls-tree -r HEAD", "git ls-tree -l HEAD", "git ls-tree -r -l HEAD", "git ls-tree --long -r HEAD", "git ls-tree --name-only HEAD",
				"git ls-tree --name-only -r HEAD", "git ls-tree --name-status HEAD", "git ls-tree -r -t HEAD", "git ls-tree -t HEAD d/e/f", "git ls-tree HEAD d", "git ls-tree HEAD d/",
				"git ls-tree -r HEAD d", "git ls-tree HEAD d/e/f", "git ls-tree HEAD d/e", "git ls-tree HEAD d/e/", "git ls-tree HEAD nosuch", "git ls-tree HEAD a d/e",
				"git ls-tree HEAD~2", "git ls-tree v1", "git ls-tree HEAD:d", "git ls-tree -r HEAD:d", "git ls-tree HEAD -- a", "git ls-tree nosuch", "git ls-tree",
				"git ls-tree HEAD:a", "git ls-tree HEAD:nosuch", "git ls-tree main^{tree}"}},
		{name: "ls-tree-subdir", setup: gitTree,
			steps: []string{"git -C d ls-tree HEAD", "git -C d ls-tree -r HEAD", "git -C d ls-tree -r -t HEAD", "git -C d ls-tree HEAD ..", "git -C d ls-tree -r HEAD ..",
				"git -C d ls-tree HEAD ../a", "git -C d ls-tree HEAD e", "git -C d ls-tree HEAD e/", "git -C d/e ls-tree -r --name-only HEAD", "git -C d ls-tree HEAD nosuch",
				"git -C d ls-tree -l HEAD ../c/", "git ls-tree HEAD .", "git ls-tree HEAD ./a", "git ls-tree HEAD ../x", "git -C d ls-tree HEAD ../..", "git -C d ls-tree -t HEAD e/f",
				"git -C d ls-tree -r HEAD . ../a", "git -C d/e ls-tree -t HEAD f", "git -C d/e ls-tree -t -r HEAD ../.."}},
		{name: "ls-tree-empty", setup: gitBase, steps: []string{"git ls-tree HEAD", "git -C . ls-tree -r HEAD"}},
	})
}

func TestGitBranchList(t *testing.T) {
	br := append(append([]string{}, gitMerged...), "git branch aaa HEAD~3", "git branch x/y HEAD~1", "git branch longer-name-here HEAD~2")
	runGitCases(t, []gitScenario{
		{name: "branch-v", setup: br,
			steps: []string{"git branch -v", "git branch -vv", "git branch --verbose", "git branch -a", "git branch -r", "git branch -a -v", "git branch --list 'a*'",
				"git branch --list '*y'", "git branch -l 'x*' -v", "git branch --list nosuch", "git branch -v --list 'm*' 's*'", "git branch --list '?aa'", "git branch -v 'a*'", "git branch -v newb", "git branch -v",
				"git branch --all --list 'm*'", "git branch --remotes -v", "!git checkout -q --detach HEAD~1", "git branch -v", "git branch -a", "git branch -vv"}},
		{name: "branch-v-unborn", setup: gitBase, steps: []string{"git branch -v", "git branch -a", "git branch --list 'm*'"}},
		{name: "branch-v-big", setup: append(append([]string{}, br...), "packblobs 17000"), steps: []string{"git branch -v"}},
	})
}

func TestGitDescribeShortlog(t *testing.T) {
	tagged := append(append([]string{}, gitHist...), "git tag -a v1 -m one HEAD~2", "git tag light HEAD~1")
	runGitCases(t, []gitScenario{
		{name: "describe", setup: tagged,
			steps: []string{"git describe", "git describe --tags", "git describe HEAD~1", "git describe --tags HEAD~1", "git describe HEAD~2", "git describe --long HEAD~2",
				"git describe --abbrev=0", "git describe --abbrev=10", "git describe --abbrev=2", "git describe --always", "git describe --dirty", "write a dirty\\n",
				"git describe --dirty", "git describe --tags --dirty", "git add a", "git describe --dirty", "git describe --always --dirty", "git describe nosuch", "git describe v1",
				"git describe --long --tags", "git tag -a v2 -m two", "git describe", "git describe --dirty"}},
		{name: "describe-none", setup: gitHist, steps: []string{"git describe", "git describe --always", "git describe --always --abbrev=12", "git tag light HEAD~1",
			"git describe", "git describe --tags", "git describe --tags HEAD~2", "git tag -a late -m late", "git describe HEAD~1"}},
		{name: "describe-empty", setup: gitBase, steps: []string{"git describe", "git describe --always"}},
		{name: "describe-big", setup: append(append([]string{}, tagged...), "packblobs 17000"), steps: []string{"git describe", "git describe --always"}},
		{name: "shortlog", setup: append(append([]string{}, gitMerged...), "date 1700000600", "write z z\\n", "git add z", "git -c user.name=x commit -q -m zed --author='Bob Other <bob@other.org>'",
			"date 1700000700", "write z zz\\n", "git -c user.name=x commit -q -am zed2 --author='Bob Other <bob@elsewhere.org>'"),
			steps: []string{"git shortlog -s HEAD", "git shortlog -sn HEAD", "git shortlog -sne HEAD", "git shortlog -s -e HEAD", "git shortlog -s -c HEAD", "git shortlog --summary --numbered --all",
				"git shortlog -sn HEAD~2..HEAD", "git shortlog -sn main -- s", "git shortlog -s nosuch", "git shortlog -sn HEAD~1..HEAD~1",
				"git shortlog HEAD", "git shortlog -n HEAD", "git shortlog -e HEAD", "git shortlog -c HEAD~2", "git shortlog --all", "git shortlog HEAD~1..HEAD~1",
				"git commit -q --allow-empty -m '[PATCH v2] fix thing'", "git commit -q --allow-empty -m '  spaced   subject  \nsecond line\n\nbody'", "git commit -q --allow-empty -m '[PATCHY no bracket'",
				"git commit -q --allow-empty -m '[PATCH]'", "git shortlog HEAD~4..", "git shortlog -s HEAD~4.."}},
	})
}

func TestGitCheckIgnore(t *testing.T) {
	ign := []string{"git init -q -b main", "write .gitignore *.log\\nbuild/\\n!keep.log\\n# c\\n\\n/top\\ndeep/**/x\\n", "write sub/.gitignore x*\\n!xok\\n",
		"write .git/info/exclude inf\\n", "write a.log a\\n", "write keep.log k\\n", "write top t\\n", "mkdir build", "mkdir dir.log", "write tr.log t\\n", "git add -f tr.log .gitignore",
		"git commit -q -m i"}
	runGitCases(t, []gitScenario{
		{name: "check-ignore", setup: ign,
			steps: []string{"git check-ignore a.log", "git check-ignore -v a.log", "git check-ignore b.log c", "git check-ignore -v b.log c", "git check-ignore c", "git check-ignore keep.log",
				"git check-ignore -v keep.log", "git check-ignore -q b.log", "git check-ignore -q c", "git check-ignore -q keep.log", "git check-ignore build/x", "git check-ignore -v build/x",
				"git check-ignore -v build", "git check-ignore -v nobuild/build", "git check-ignore -v sub/xy", "git check-ignore -v sub/a/xy", "git check-ignore -v sub/xok",
				"git check-ignore -v top sub/top", "git check-ignore -v inf sub/inf", "git check-ignore -v ./b.log", "git check-ignore -v sub/../b.log", "git check-ignore -v 'ü.log' 'sp ace.log'",
				"git check-ignore -v -n b.log c keep.log", "git check-ignore --verbose --non-matching c", "git check-ignore tr.log", "git check-ignore -v tr.log", "git check-ignore --no-index tr.log",
				"git check-ignore -v --no-index tr.log", "git check-ignore -v -n tr.log", "git check-ignore -v dir.log dir.log/f", "git check-ignore -v deep/a/b/x deep/x",
				"git check-ignore", "git check-ignore -q a b", "git check-ignore -q -v a", "git check-ignore -n a", "git check-ignore /etc/x", "git check-ignore -- a.log",
				"git -C sub check-ignore -v ../b.log xy xok", "git check-ignore -v build/sub/xy"}},
	})
}

func TestGitDiffNoIndex(t *testing.T) {
	files := map[string]string{"x": "a\nb\n", "y": "a\nc\n", "z": "a\nb\n", "bin": "\x00\x01", "d/f": "a\nb\n", "ü t": "a\n"}
	steps := []string{"git diff --no-index x y", "git diff --no-index x z", "git diff --no-index ./x y", "git diff --no-index x nosuch", "git diff --no-index nosuch x",
		"git diff --no-index --stat x y", "git diff --no-index --numstat x y", "git diff --no-index --name-only x y", "git diff --no-index --name-status x y",
		"git diff --no-index --quiet x y", "git diff --no-index --exit-code x z", "git diff --no-index -U0 x y", "git diff --no-index x", "git diff --no-index x y z",
		"git diff --no-index /dev/null x", "git diff --no-index x /dev/null", "git diff --no-index /dev/null /dev/null", "git diff --no-index x bin", "git diff --no-index x 'ü t'", "git diff --no-index 'ü t' x", "git diff --no-index /dev/null 'ü t'",
		"git diff --no-index x d/f", "git diff --no-index -- x y", "git diff --no-index --stat /dev/null x", "git diff --no-index --numstat x /dev/null",
		"git diff --no-index --name-status /dev/null x", "git diff --no-index x d", "git diff --no-index d x", "git diff --no-index y d", "chmod z", "git diff --no-index x z", "git diff --no-index --stat x z", "git -C d diff --no-index f ../y"}
	runGitCases(t, []gitScenario{
		{name: "no-index-outside", files: files, steps: steps},
		{name: "no-index-repo", files: files, setup: gitOne, steps: steps},
		{name: "diff-space-names", files: map[string]string{"sp ace": "a\n", "plain": "p\n"}, setup: gitOne,
			steps: []string{"write 'sp ace' b\\n", "git diff", "write 'new sp' n\\n", "git add 'new sp'", "git diff --cached", "git commit -qam x", "git show", "git log -p -1",
				"write 'ü t' u\\n", "git add 'ü t'", "git diff --cached --stat", "git diff --cached --numstat", "git commit -qm u", "git mv 'ü t' 'ü v'", "git diff --cached --stat",
				"git diff --cached --numstat", "git commit -qm mv", "git log --stat -1 --format=%s", "git mv 'ü v' plain2", "git diff --cached --stat"}},
		{name: "no-index-dirs", files: map[string]string{"d1/a/x": "1\n", "d2/a/x": "2\n", "d1/a-b": "s\n", "d2/a-b": "t\n", "d1/same": "s\n", "d2/same": "s\n",
			"d1/gone": "g\n", "d3/a/x": "1\n", "d3/a-b": "s\n", "d3/same": "s\n", "d3/gone": "g\n", "d3/new": "n\n", "e1/ü t": "1\n", "e2/ü t": "2\n"},
			steps: []string{"git diff --no-index d1 d2", "git diff --no-index --stat d1 d2", "git diff --no-index --name-status d1/ d2/", "git diff --no-index --numstat ./d1 d2",
				"git diff --no-index --name-only d2 d1", "git diff --no-index d1 d3", "git diff --no-index --stat d3 d1", "git diff --no-index d1 d1", "git diff --no-index --quiet d1 d2",
				"git diff --no-index e1 e2", "git diff --no-index --stat e1 e2", "chmod d3/new", "git diff --no-index d1 d3"}},
		{name: "no-index-big-repo", files: files, setup: append(append([]string{}, gitOne...), "packblobs 17000"), steps: []string{"git diff --no-index x y", "git diff --no-index /dev/null x"}},
	})
}

// TestGitRelativeDate compares --date=relative and %ar with git's at
// ages in the middle of their units, so the seconds between the two runs
// never change a word.
func TestGitRelativeDate(t *testing.T) {
	now := time.Now().Unix()
	setup := []string{"git init -q -b main", "write a 0\\n", "git add a"}
	for i, ago := range []int64{7*365*86400 + 10*86400, 2*365*86400 + 92*86400, 365*86400 + 40*86400, 400 * 86400, 120 * 86400, 21 * 86400, 5*86400 + 3*3600,
		36*3600 + 600, 3*3600 + 600, 65 * 60, -3600} {
		setup = append(setup, "write a "+strconv.Itoa(i)+"\\n", "date "+strconv.FormatInt(now-ago, 10), "git commit -q -am c"+strconv.Itoa(i))
	}
	runGitCases(t, []gitScenario{
		{name: "relative", setup: setup, steps: []string{"git log --date=relative", "git log --format='%ar|%cr|%s'", "git -c log.date=relative log -2 --format=%ad",
			"git show -s --date=relative HEAD~3"}},
	})
}
