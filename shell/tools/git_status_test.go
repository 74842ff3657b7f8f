package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/index"
	"rung.dev/rung/storage"
)

// gitManyDirs is a tree of 48 directories (more than gitPreloadMin), so
// that status lists them on several goroutines.
func gitManyDirs() map[string]string {
	m := map[string]string{"top": "t\n"}
	for i := range 12 {
		for j := range 3 {
			m[fmt.Sprintf("d%02d/s%d/f", i, j)] = fmt.Sprintf("%d %d\n", i, j)
		}
		m[fmt.Sprintf("d%02d/g", i)] = "g\n"
	}
	return m
}

// TestGitStatusCacheTree runs status, add, commit, rm, mv and reset in
// sequence, so that each reads an index (and cache tree) our own tool
// wrote. The harness ends with real git's "write-tree" on our
// repository, which trusts the cache tree.
func TestGitStatusCacheTree(t *testing.T) {
	runGitCases(t, []gitScenario{
		{name: "many-dirs", files: gitManyDirs(), setup: gitOne,
			steps: []string{"git status", "write d03/s1/f changed\\n", "write d07/g changed\\n", "write d11/s2/new n\\n",
				"git status -s", "git add d03", "git status", "git add -A", "git status -s", "git commit -q -m two",
				"git status", "git rm -q d05/s0/f", "git status -s", "git mv d06/s1 d06/t1", "git status", "git commit -q -m three",
				"git reset -q HEAD~1", "git status -s", "git reset -q --hard", "git status"}},
		{name: "dir-file-order", files: map[string]string{"a.b": "1\n", "a/x": "2\n", "a-c": "3\n", "ab/y": "4\n", "b": "5\n"}, setup: gitOne,
			steps: []string{"git rm -q -r a", "write a now-a-file\\n", "git add a", "git status", "git status -s", "git commit -q -m swap",
				"git status", "git rm -q b", "write b/inner x\\n", "git add b", "git status -s", "git commit -q -m swap2", "git log --stat -1"}},
		{name: "ours-from-scratch", files: map[string]string{"x/y/z": "z\n", "x/w": "w\n", "v": "v\n"}, setup: gitBase,
			steps: []string{"git add .", "git status", "git commit -q -m one", "git status", "write x/y/z z2\\n", "git commit -q -am two",
				"git status -s", "git log --stat"}},
		// saveIndex's lock: an index.lock left behind makes add fail and
		// leaves the index as it was.
		{name: "index-locked", files: map[string]string{"a": "a\n"}, setup: gitOne,
			steps: []string{"write a changed\\n", "write .git/index.lock x", "git add a", "git status -s",
				"rm .git/index.lock", "git add a", "git status -s"}},
	})
}

// TestGitIndexKeepsCacheTree checks that the index our add and commit
// write keeps a cache tree: valid for the unchanged directories after
// add, and whole (equal to HEAD's tree) after commit.
func TestGitIndexKeepsCacheTree(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "workspace")
	writeFiles(t, dir, gitManyDirs())
	if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	view, err := storage.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	run := func(step string) {
		t.Helper()
		if out, errs, st := runOurGit(t, view, gitSplitStep(step), 1700000000); st != 0 {
			t.Fatalf("%s: status %d: %s%s", step, st, out, errs)
		}
	}
	cache := func() *index.Tree {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		idx, err := gitDecodeIndex(b)
		if err != nil {
			t.Fatal(err)
		}
		if idx.Cache == nil || len(idx.Cache.Entries) == 0 {
			t.Fatal("index has no cache tree")
		}
		return idx.Cache
	}
	run("git init -q -b main")
	run("git add .")
	run("git commit -q -m one")
	head := func() string {
		out, _, _ := runRealGit(t, dir, []string{"rev-parse", "HEAD^{tree}"}, 1700000000)
		return strings.TrimSpace(out)
	}
	if c := cache(); c.Entries[0].Entries != 49 || c.Entries[0].Hash.String() != head() {
		t.Errorf("after commit: root cache tree %+v, HEAD tree %s", c.Entries[0], head())
	}
	if err := os.WriteFile(filepath.Join(dir, "d03", "g"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("git add d03/g")
	valid := 0
	for _, e := range cache().Entries {
		if e.Entries >= 0 {
			valid++
		} else if e.Path != "" && e.Path != "d03" {
			t.Errorf("after add: %q invalidated", e.Path)
		}
	}
	if valid != 47 { // all but the top and d03
		t.Errorf("after add: %d valid directories, want 47", valid)
	}
	run("git commit -q -m two")
	if c := cache(); c.Entries[0].Entries != 49 || c.Entries[0].Hash.String() != head() {
		t.Errorf("after second commit: root cache tree %+v, HEAD tree %s", c.Entries[0], head())
	}
}

// FuzzGitDecodeIndex checks that no index file makes the decoder panic,
// and that what it accepts encodes back to an index it reads the same.
func FuzzGitDecodeIndex(f *testing.F) {
	idx := &index.Index{Version: 2}
	for _, n := range []string{"a", "d/b", "d/e/c"} {
		idx.Entries = append(idx.Entries, &index.Entry{Name: n, Mode: 0o100644, Size: 3})
	}
	idx.Cache = &index.Tree{Entries: []index.TreeEntry{{Path: "", Entries: -1, Trees: 1}, {Path: "d", Entries: 2, Trees: 1}, {Path: "e", Entries: 1}}}
	f.Add(gitEncodeIndex(idx))
	idx.Version = 4
	f.Add(gitEncodeIndex(idx))
	f.Fuzz(func(t *testing.T, b []byte) {
		idx, err := gitDecodeIndex(b)
		if err != nil {
			return
		}
		gitCacheNodes(idx.Cache)
		again, err := gitDecodeIndex(gitEncodeIndex(idx))
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		if len(again.Entries) != len(idx.Entries) {
			t.Fatalf("re-read: %d entries, want %d", len(again.Entries), len(idx.Entries))
		}
		for i, e := range idx.Entries {
			if a := again.Entries[i]; a.Name != e.Name || a.Hash != e.Hash || a.Mode != e.Mode || a.Stage != e.Stage {
				t.Fatalf("re-read entry %d: %q %s %o %d, want %q %s %o %d", i, a.Name, a.Hash, a.Mode, a.Stage, e.Name, e.Hash, e.Mode, e.Stage)
			}
		}
	})
}
