package tools

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// findNow fixes the times findSetup gives files, so that both trees get
// the same nanoseconds.
var findNow = time.Now().Truncate(time.Second).Add(123456789)

var findFiles = map[string]string{
	"a.txt":             "hello\n",
	"b.go":              "package b\n",
	"empty.txt":         "",
	".hidden":           "h\n",
	"src/":              "",
	"src/main.go":       "package main\n",
	"src/util.go":       "package main\n\nfunc util() {}\n",
	"src/README.md":     "# readme\n",
	"src/lib/":          "",
	"src/lib/x.go":      "package lib\n",
	"src/lib/big.bin":   string(make([]byte, 5000)),
	"emptydir/":         "",
	"docs/":             "",
	"docs/guide.MD":     "guide\n",
	"deep/a/b/c/d.txt":  "deep\n",
	"sp ace/file n.txt": "x\n",
}

// findSetup adds symlinks, modes and fixed modification times.
func findSetup(t *testing.T, dir string) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("a.txt", filepath.Join(dir, "link.txt")))
	must(os.Symlink("nowhere", filepath.Join(dir, "dangling")))
	must(os.Symlink("src", filepath.Join(dir, "srclink")))
	must(os.Chmod(filepath.Join(dir, "b.go"), 0o755))
	must(os.Chmod(filepath.Join(dir, "src/lib/x.go"), 0o600))
	must(os.Chmod(filepath.Join(dir, "docs/guide.MD"), 0o4754))
	old := findNow.Add(-84 * time.Hour) // 3.5 days
	older := findNow.Add(-30 * 24 * time.Hour)
	must(os.Chtimes(filepath.Join(dir, "src/util.go"), old, old))
	must(os.Chtimes(filepath.Join(dir, "docs/guide.MD"), older, older))
	recent := findNow.Add(-90 * time.Second)
	must(os.Chtimes(filepath.Join(dir, "a.txt"), recent, recent))
}

func fc(name string, args ...string) toolCase {
	return toolCase{name: name, args: append([]string{"find"}, args...), files: findFiles, setup: findSetup}
}

func TestFindDiff(t *testing.T) {
	cases := []toolCase{
		fc("all"),
		fc("dot", "."),
		fc("dir", "src"),
		fc("dir slash", "src/"),
		fc("two starts", "src", "docs"),
		fc("missing start", "nope", "src"),
		fc("-name", ".", "-name", "*.go"),
		fc("-name exact", "-name", "a.txt"),
		fc("-name hidden", "-name", ".*"),
		fc("-name class", "-name", "[ab].*"),
		fc("-name start", "src", "-name", "src"),
		fc("-iname", "-iname", "*.md"),
		fc("-path", "-path", "./src/*"),
		fc("-path no dot", "src", "-path", "src/lib*"),
		fc("-ipath", "-ipath", "*DOCS*"),
		fc("-wholename", "-wholename", "*lib/x.go"),
		fc("-regex", "-regex", ".*\\.go"),
		fc("-regex emacs plus", "-regex", ".*/[a-z]+\\.go"),
		fc("-regex emacs alt", "-regex", ".*\\(main\\|util\\)\\.go"),
		fc("-regextype posix-extended", "-regextype", "posix-extended", "-regex", ".*/(main|x)\\.go"),
		fc("-iregex", "-iregex", ".*readme.*"),
		fc("-type f", "-type", "f"),
		fc("-type d", "-type", "d"),
		fc("-type l", "-type", "l"),
		fc("-type f,l", "-type", "f,l"),
		fc("-type bad", "-type", "z"),
		fc("-xtype l", "-xtype", "l"),
		fc("-xtype f", "-xtype", "f"),
		fc("-L type l", "-L", ".", "-type", "l"),
		fc("-L follows dir", "-L", "srclink"),
		fc("-H start link", "-H", "srclink"),
		fc("-P start link", "srclink"),
		fc("-follow", "-follow", "-name", "*.go"),
		fc("-maxdepth 1", "-maxdepth", "1"),
		fc("-maxdepth 0", "-maxdepth", "0"),
		fc("-mindepth 2", "-mindepth", "2", "-type", "f"),
		fc("-mindepth maxdepth", "-mindepth", "1", "-maxdepth", "2", "-type", "d"),
		fc("maxdepth after test", "-name", "*.go", "-maxdepth", "1"),
		fc("-depth", "src", "-depth"),
		fc("-empty", "-empty"),
		fc("-empty -type d", "-empty", "-type", "d"),
		fc("-size +0", "-type", "f", "-size", "+0"),
		fc("-size -1k", "-type", "f", "-size", "-1k"),
		fc("-size 1", "-type", "f", "-size", "1"),
		fc("-size +4k", "-size", "+4k"),
		fc("-size c", "-size", "6c"),
		fc("-size -10c", "-type", "f", "-size", "-10c"),
		fc("-size M", "-size", "-1M", "-type", "f"),
		fc("-size bad", "-size", "x"),
		fc("-mtime +2", "-type", "f", "-mtime", "+2"),
		fc("-mtime 3", "-type", "f", "-mtime", "3"),
		fc("-mtime -1", "-type", "f", "-mtime", "-1"),
		fc("-mtime +20", "-mtime", "+20"),
		fc("-mmin -5", "-type", "f", "-mmin", "-5"),
		fc("-mmin +1", "-type", "f", "-mmin", "+1"),
		fc("-newer", "-newer", "src/util.go", "-type", "f"),
		fc("-newer missing", "-newer", "nope"),
		fc("-perm exact", "-perm", "755"),
		fc("-perm all", "-perm", "-644", "-type", "f"),
		fc("-perm any", "-perm", "/111", "-type", "f"),
		fc("-perm symbolic", "-perm", "-u=x", "-type", "f"),
		fc("-perm setuid", "-perm", "-4000"),
		fc("-user root", "-user", "root", "-name", "a.txt"),
		fc("-uid 0", "-uid", "0", "-name", "b.go"),
		fc("-group root", "-group", "root", "-maxdepth", "0"),
		fc("-links", "-type", "f", "-links", "1", "-name", "*.txt"),
		fc("-not", "-not", "-name", "*.go"),
		fc("bang", "!", "-type", "d"),
		fc("-o", "-name", "*.md", "-o", "-name", "*.MD"),
		fc("-or", "-name", "a.txt", "-or", "-type", "l"),
		fc("-a", "-type", "f", "-a", "-name", "*.txt"),
		fc("-and", "-type", "f", "-and", "-empty"),
		fc("parens", "(", "-name", "*.go", "-o", "-name", "*.md", ")", "-print"),
		fc("parens not", "!", "(", "-type", "d", "-o", "-type", "l", ")"),
		fc("-prune", "-name", "src", "-prune", "-o", "-print"),
		fc("-prune print", "-path", "./deep", "-prune", "-o", "-type", "f", "-print"),
		fc("-prune depth", "-depth", "-name", "src", "-prune"),
		fc("-quit", "-print", "-quit"),
		fc("-quit one match", "-name", "main.go", "-print", "-quit", "-o", "-name", "nothing"),
		fc("-true -false", "-false", "-o", "-true", "-name", "b.go"),
		fc("-print0", "-name", "*.md", "-print0"),
		fc("-print twice", "-name", "a.txt", "-print", "-print"),
		fc("-printf basic", "-printf", "%p %f %h %d %y\\n"),
		fc("-printf P H", "src", "-printf", "[%P] [%H]\\n"),
		fc("-printf size mode", "-type", "f", "-printf", "%s %m %M %n\\n"),
		fc("-printf width", "-name", "*.go", "-printf", "%-12f|%5s|%-3d|\\n"),
		fc("-printf link", "-type", "l", "-printf", "%p -> %l %Y\\n"),
		fc("-printf user", "-name", "a.txt", "-printf", "%u %g %U %G\\n"),
		fc("-printf time", "-name", "util.go", "-printf", "%TY-%Tm-%Td %TH:%TM %t %T+ %T@\\n"),
		fc("-printf escapes", "-name", "a.txt", "-printf", "a\\tb\\\\c %% \\101\\n"),
		fc("-printf \\c", "-name", "x.go", "-printf", "%f\\cmore"),
		fc("-printf no newline", "-name", "a.txt", "-printf", "%f"),
		fc("-printf bad", "-printf", "%Q"),
		fc("-printf blocks", "-name", "big.bin", "-printf", "%k %b\\n"),
		fc("-exec", "-name", "*.go", "-exec", "sed", "-n", "p", "{}", ";"),
		fc("-exec plus", "-name", "*.txt", "-type", "f", "-exec", "sed", "-n", "p", "{}", "+"),
		fc("-exec braces embedded", "-name", "a.txt", "-exec", "sed", "-n", "p", "./{}", ";"),
		fc("-exec status", "-name", "*.go", "-exec", "grep", "-q", "main", "{}", ";", "-print"),
		fc("-exec missing term", "-exec", "sed", "-n", "p", "{}"),
		fc("-execdir", "-name", "x.go", "-execdir", "sed", "-n", "p", "{}", ";"),
		fc("-execdir plus", "src", "-name", "*.go", "-execdir", "grep", "-H", "package", "{}", "+"),
		fc("-exec sed", "-name", "main.go", "-exec", "sed", "s/main/MAIN/", "{}", ";"),
		fc("-delete", "-name", "*.go", "-delete"),
		fc("-delete dir", "deep", "-delete"),
		fc("-delete nonempty", "src", "-maxdepth", "0", "-delete"),
		fc("unknown predicate", "-bogus"),
		fc("missing argument", "-name"),
		fc("paths after expr", "-name", "x", "src"),
		fc("missing paren", "(", "-name", "x"),
		fc("extra paren", "-name", "x", ")"),
		fc("empty parens", "(", ")"),
		fc("dangling -o", "-name", "x", "-o"),
		fc("space in name", "-name", "* *"),
		fc("comma", "-name", "a.txt", "-print", ",", "-name", "b.go", "-print"),
		fc("-mount -xdev", "-xdev", "-mount", "-maxdepth", "1", "-type", "d"),
		fc("-executable", "-type", "f", "-executable"),
		fc("-readable", "-maxdepth", "1", "-readable"),
		fc("-lname", "-lname", "a*"),
		fc("-samefile refused", "-maxdepth", "0"),
		fc("prune print go", "-path", "./src", "-prune", "-o", "-name", "*.go", "-print"),
		fc("-empty -delete", "-empty", "-delete"),
		fc("-type f -newer", "-type", "f", "-newer", "docs/guide.MD"),
		fc("-name -a -not -path", "-name", "*.go", "-not", "-path", "*/lib/*"),
		fc("-iname -type", "-iname", "README*", "-type", "f"),
		fc("-printf depth sort", "-maxdepth", "2", "-printf", "%d %p\n"),
		fc("-exec with two braces", "-name", "a.txt", "-exec", "grep", "-H", "hello", "{}", "{}", ";"),
		fc("-print0 -quit", "-name", "b.go", "-print0", "-quit"),
	}
	runDiffSorted(t, cases)
}
