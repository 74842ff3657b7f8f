package tools

import "testing"

// TestGitAbbrev covers abbreviated names where git prints more than 7
// digits: a repository whose packs hold 2^14 objects or more, a prefix
// another object shares, and core.abbrev.
func TestGitAbbrev(t *testing.T) {
	big := append(append([]string{}, gitHist...), "packblobs 17000")
	runGitCases(t, []gitScenario{
		{name: "abbrev-big", setup: big,
			steps: []string{"git log --oneline", "git log --format='%h %t %p'", "git log --abbrev-commit -1", "git rev-parse --short HEAD", "git rev-parse --short=4 HEAD",
				"write a changed\\n", "git diff", "git commit -am more", "git show --stat --oneline", "git reset --hard HEAD~1", "!git checkout -q --detach", "git status",
				"git branch", "git branch x", "git branch -d x", "git tag v", "git tag -d v"}},
		{name: "abbrev-config", setup: append(append([]string{}, gitHist...), "git config core.abbrev 12"),
			steps: []string{"git log --oneline", "git rev-parse --short HEAD", "git rev-parse --short=5 HEAD", "write a x\\n", "git diff", "git commit -qam x", "git log -1 --format=%h",
				"git -c core.abbrev=no log --oneline -1", "git -c core.abbrev=auto log --oneline -1", "git -c core.abbrev=40 log --oneline -1", "git -c core.abbrev=4 log --format=%h%n%p -2",
				"git -c core.abbrev=4 rev-parse --short HEAD", "git stash", "git stash list"}},
		{name: "abbrev-shared-prefix", setup: gitHist,
			steps: []string{"packblobs 5000", "git log --format=%h", "git rev-parse --short=4 HEAD~1", "git -c core.abbrev=4 log --format=%h:%t"}},
	})
}
