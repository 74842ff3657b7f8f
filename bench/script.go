package bench

import "sync"

// Script is one command line measured in every runner.
type Script struct {
	Name   string // short, used in benchmark names and the report
	Script string
	// Target is the issue's goal for the isolate tier, as text ("≤ 25 µs
	// p50"); empty when there is none.
	Target string
	// Fixture builds the workspace (called once per runner, so scripts
	// that write start from the same files everywhere).
	Fixture func() Fixture
	// NoJustBash says why just-bash cannot run the script ("" when it can).
	NoJustBash string
}

// Sizes scales the large fixtures.
type Sizes struct {
	RepoFiles int // files in the grep and git repositories; the target uses 5,000
}

// DefaultSizes are the sizes of the targets.
var DefaultSizes = Sizes{RepoFiles: 5000}

// Scripts returns the measured scripts: the three targets first,
// then typical agent commands.
func Scripts(sz Sizes) []Script {
	small := func() Fixture { return Fixture{Name: "small", Files: smallWorkspace()} }
	lines := func() Fixture { return Fixture{Name: "lines200", Files: map[string]string{"f": lines200()}} }
	repo := memo(func() Fixture { return Fixture{Name: "repo", Files: sourceTree(sz.RepoFiles)} })
	project := memo(func() Fixture { return Fixture{Name: "project", Files: sourceTree(100)} })
	gitRepo := memo(func() Fixture {
		files := sourceTree(sz.RepoFiles)
		mod := map[string]string{}
		for _, name := range []string{"pkg00/sub0/file0000.go", "pkg01/sub1/file0001.go", "pkg02/sub2/file0002.go"} {
			if body, ok := files[name]; ok {
				mod[name] = body + "// changed\n"
			}
		}
		return Fixture{Name: "git-repo", Files: files, Git: true, Modified: mod}
	})
	return []Script{
		{Name: "cat-ls", Script: "cat hello.txt && ls -la", Target: "≤ 25 µs p50", Fixture: small},
		{Name: "pipeline", Script: "cat f | grep x | sort | uniq -c | head", Target: "≤ 60 µs p50", Fixture: lines},
		{Name: "grep-r", Script: "grep -rn 'TODO(bench)' .", Target: "≤ 2× GNU grep on tmpfs", Fixture: repo},
		{Name: "find-xargs-wc", Script: "find . -name '*.go' | xargs wc -l", Fixture: project},
		{Name: "sed-i", Script: "sed -i 's/a/b/' f && cat f", Fixture: lines},
		{Name: "loop-arith", Script: "s=0; for i in {1..100}; do s=$((s + i*i)); done; echo $s", Fixture: small},
		{Name: "echo-awk", Script: "echo $((1+2)) | awk '{print $1*2}'", Fixture: small},
		{Name: "git-status", Script: "git status", Target: "≤ 20 ms", Fixture: gitRepo,
			NoJustBash: "just-bash has no git command"},
	}
}

// memo returns f, computing its fixture once (large trees are generated
// once per process; Materialize copies them out per runner).
func memo(f func() Fixture) func() Fixture {
	return sync.OnceValue(f)
}
