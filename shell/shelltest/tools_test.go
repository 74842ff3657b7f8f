package shelltest_test

import (
	"fmt"
	"testing"

	"rung.dev/rung/shell/shelltest"
	"rung.dev/rung/shell/tools"
)

var toolFiles = map[string]string{
	"a.txt":       "banana\napple\ncherry\napple\n",
	"b.txt":       "one two\nthree four\n",
	"src/main.go": "package main\n\nfunc main() {}\n",
	"src/util.go": "package main\n\n// TODO: x\n",
	"notes.md":    "# Notes\nTODO: write\n",
}

// toolScripts exercise the interpreter with real tools: pipes, fds,
// globs, process substitution, and tools that run commands (xargs,
// find -exec, env).
var toolScripts = []string{
	`cat a.txt | sort | uniq -c`,
	`sort a.txt | head -n 2`,
	`grep -n apple a.txt; echo "rc=$?"`,
	`grep -c nothing a.txt; echo "rc=$?"`,
	`ls; ls src`,
	`ls *.txt`,
	`wc -l < a.txt`,
	`cat a.txt b.txt | wc -l`,
	`for f in src/*.go; do echo "$f: $(wc -l < $f)"; done`,
	`grep -rn TODO . | sort`,
	`find . -name '*.go' | sort`,
	`find . -name '*.go' -exec grep -l TODO {} \; | sort`,
	`find src -type f | xargs wc -l | sort`,
	`printf '%s\n' c b a | sort -r`,
	`echo hello > out.txt; cat out.txt; ls out.txt`,
	`mkdir -p d/e && touch d/e/f && ls -R d`,
	`cp a.txt c.txt && sort -u c.txt`,
	`sed 's/apple/APPLE/' a.txt | tee s.txt | wc -l; cat s.txt`,
	`awk '{print $2}' b.txt`,
	`cut -d' ' -f1 b.txt | tr a-z A-Z`,
	`diff <(sort a.txt) <(sort -u a.txt); echo "rc=$?"`,
	`cat <(echo from-procsub) a.txt | head -2`,
	`x=$(cat a.txt | wc -l); echo "lines=$x"`,
	`head -1 a.txt; tail -1 a.txt`,
	`seq 5 | paste -sd+`,
	`seq 1 3 | while read n; do echo $((n*n)); done`,
	`yes | head -3`,
	`env A=1 printenv A`,
	`A=2 printenv A`,
	`export B=3; printenv B`,
	`echo a b c | xargs -n1 echo item`,
	`rm a.txt; ls a.txt 2>/dev/null; echo "rc=$?"`,
	`cat nosuch.txt; echo "rc=$?"`,
	`cat a.txt | grep -q apple && echo found`,
	`set -o pipefail; cat nosuch 2>/dev/null | sort; echo "rc=$?"`,
	`exec 3< a.txt; head -1 <&3; read -u 3 x; echo "x=$x"`,
	`{ echo 3; echo 1; echo 2; } | sort -n | tail -1`,
	`basename /a/b/c.txt .txt; dirname /a/b/c.txt`,
	`test -f a.txt && /usr/bin/test -d src && echo both`,
	`command -v ls; type cat; which grep`,
	`ls | grep -v '\.md$' | wc -l`,
	`mv b.txt z.txt; ls`,
	`echo data | tee x1 x2 >/dev/null; cat x1 x2`,
	`sort a.txt > sorted.txt && cmp sorted.txt sorted.txt && echo same`,
	`printf 'b\na\n' > u.txt; sort -o u.txt u.txt; cat u.txt`,
	`date -d @0 +%Y 2>/dev/null || date -u -r a.txt +%Y >/dev/null; echo ok`,
	`seq 3 | tac`,
	`echo 'a,b;c' | tr ',;' '  '`,
	`cat -n a.txt | head -2`,
	`find . -maxdepth 1 -type f -name '*.txt' | sort | xargs cat | sort | uniq`,
}

// knownToolDiffs are differences owned by the tools, with the reason.
var knownToolDiffs = map[string]string{
	`exec 3< a.txt; head -1 <&3; read -u 3 x; echo "x=$x"`: "head does not seek back on seekable input as GNU head does (fdesc implements io.Seeker for it)",
	`diff <(sort a.txt) <(sort -u a.txt); echo "rc=$?"`:    "diff stats /dev/fd/N through the FS instead of opening it with Call.Open",
}

func TestToolsDifferential(t *testing.T) {
	var cases []shelltest.Case
	for i, s := range toolScripts {
		c := shelltest.Case{Name: fmt.Sprintf("tools/%02d", i), Script: s, Files: toolFiles}
		c.Known = knownToolDiffs[s]
		cases = append(cases, c)
	}
	shelltest.Run(t, cases, tools.All())
}

// TestToolsExactStderr compares stderr byte for byte too, for messages
// whose wording the isolate tier must match.
func TestToolsExactStderr(t *testing.T) {
	cases := []shelltest.Case{
		// git outside a repository stops at the /workspace mount point in
		// the container, which the harness's bind mount (same device) is
		// not: TestParity's git cases compare that with the container.
		{Name: "extglob on the line that enables it", Script: "shopt -s extglob; echo !(*.txt)", Files: toolFiles},
	}
	for i := range cases {
		cases[i].StderrExact = true
	}
	shelltest.Run(t, cases, tools.All())
}
