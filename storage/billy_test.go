package storage

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/util"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"rung.dev/rung/internal/testenv"
)

func TestBilly(t *testing.T) {
	v := newView(t)
	bfs := Billy(v, "/workspace/b")
	must(t, os.MkdirAll(v.h("/workspace/b"), 0o755))

	f, err := bfs.Create("x/y/file") // parents are created
	must(t, err)
	if f.Name() != "x/y/file" {
		t.Errorf("Name() = %q", f.Name())
	}
	must(t, f.Lock())
	io.WriteString(f, "data")
	must(t, f.Unlock())
	must(t, f.Close())
	if b, _ := os.ReadFile(v.h("/workspace/b/x/y/file")); string(b) != "data" {
		t.Errorf("host reads %q", b)
	}

	tf, err := bfs.TempFile("tmpdir", "pre-")
	must(t, err)
	if !strings.HasPrefix(tf.Name(), "tmpdir/pre-") {
		t.Errorf("TempFile name %q", tf.Name())
	}
	tf.Close()
	must(t, bfs.Rename(tf.Name(), "moved/here")) // as go-git does
	if _, err := bfs.Stat("moved/here"); err != nil {
		t.Error(err)
	}

	must(t, bfs.Symlink("../y/file", "x/z/link"))
	if target, err := bfs.Readlink("x/z/link"); target != "../y/file" || err != nil {
		t.Errorf("Readlink = %q, %v", target, err)
	}
	if fi, err := bfs.Lstat("x/z/link"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat = %v, %v", fi, err)
	}
	infos, err := bfs.ReadDir("x")
	must(t, err)
	if len(infos) != 2 || infos[0].Name() != "y" || infos[1].Name() != "z" {
		t.Errorf("ReadDir = %v", infos)
	}

	sub, err := bfs.Chroot("x")
	must(t, err)
	if sub.Root() != "/workspace/b/x" {
		t.Errorf("Root() = %q", sub.Root())
	}
	if b, err := util.ReadFile(sub, "y/file"); string(b) != "data" {
		t.Errorf("ReadFile in chroot = %q, %v", b, err)
	}
	// ".." stops at the billy root; a host-absolute name is relative.
	for _, name := range []string{"../../../secret", "/../secret", "../a/../../../../secretdir/f"} {
		if _, err := sub.Open(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open(%q) = %v, want not exist", name, err)
		}
	}
	if err := bfs.Remove(""); err == nil {
		t.Errorf("Remove of the root succeeded")
	}
	must(t, bfs.(billy.Chmod).Chmod("x/y/file", 0o600))
	must(t, util.RemoveAll(bfs, "x"))
	if _, err := os.Stat(v.h("/workspace/b/x")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RemoveAll left %v", err)
	}
	v.checkOutside(t)
}

// TestBillyGoGit runs go-git on a sandbox through the adapter and checks
// the repository with the real git binary, then the other way round.
func TestBillyGoGit(t *testing.T) {
	testenv.Require(t, "git")
	v := newView(t)
	must(t, v.Mkdir("/workspace/repo", 0o755))
	wt := Billy(v, "/workspace/repo")
	dot, err := wt.Chroot(".git")
	must(t, err)
	repo, err := git.Init(filesystem.NewStorage(dot, cache.NewObjectLRUDefault()), wt)
	must(t, err)
	w, err := repo.Worktree()
	must(t, err)

	sig := &object.Signature{Name: "Rung Test", Email: "test@rung.dev", When: time.Unix(1700000000, 0)}
	must(t, util.WriteFile(wt, "README.md", []byte("# hello\n"), 0o644))
	must(t, util.WriteFile(wt, "src/main.go", []byte("package main\n"), 0o644))
	must(t, util.WriteFile(wt, "bin/run.sh", []byte("#!/bin/sh\necho hi\n"), 0o755))
	must(t, wt.Symlink("src/main.go", "main-link"))
	_, err = w.Add(".")
	must(t, err)
	first, err := w.Commit("first commit", &git.CommitOptions{Author: sig})
	must(t, err)
	must(t, util.WriteFile(wt, "README.md", []byte("# hello\nmore\n"), 0o644))
	_, err = w.Add("README.md")
	must(t, err)
	second, err := w.Commit("second commit", &git.CommitOptions{Author: sig})
	must(t, err)

	dir := v.h("/workspace/repo")
	gitCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if got, want := gitCmd("log", "--format=%H %s"), second.String()+" second commit\n"+first.String()+" first commit\n"; got != want {
		t.Errorf("git log:\n%s\nwant:\n%s", got, want)
	}
	gitCmd("fsck", "--full", "--strict")
	if got := gitCmd("status", "--porcelain"); got != "" {
		t.Errorf("git status --porcelain = %q, want clean", got)
	}
	if got := gitCmd("ls-tree", "-r", "HEAD"); !strings.Contains(got, "100755 blob") || !strings.Contains(got, "120000 blob") {
		t.Errorf("git ls-tree lost the exec bit or the symlink:\n%s", got)
	}

	// Real git commits; go-git reads it back through the adapter.
	must(t, os.WriteFile(dir+"/new.txt", []byte("from git\n"), 0o644))
	gitCmd("add", "new.txt")
	gitCmd("-c", "user.name=Git", "-c", "user.email=git@example.com", "commit", "-q", "-m", "third from git")
	repo2, err := git.Open(filesystem.NewStorage(dot, cache.NewObjectLRUDefault()), wt)
	must(t, err)
	head, err := repo2.Head()
	must(t, err)
	c, err := repo2.CommitObject(head.Hash())
	must(t, err)
	if c.Message != "third from git\n" || c.ParentHashes[0] != second {
		t.Errorf("go-git reads HEAD %q with parent %v", c.Message, c.ParentHashes)
	}
	w2, err := repo2.Worktree()
	must(t, err)
	st, err := w2.Status()
	must(t, err)
	if !st.IsClean() {
		t.Errorf("go-git status after git commit:\n%s", st)
	}
	v.checkOutside(t)
}
