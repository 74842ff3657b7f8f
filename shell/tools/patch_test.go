package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mkPatch returns the unified diff from old to new with the given
// header names, made by GNU diff (dates are fixed by the labels).
func mkPatch(t *testing.T, oldName, newName, old, new string, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte(old), 0o644)
	os.WriteFile(b, []byte(new), 0o644)
	args := append([]string{"-u", "--label", oldName + "\t2024-01-01 00:00:00.000000000 +0000",
		"--label", newName + "\t2024-01-02 00:00:00.000000000 +0000"}, extra...)
	args = append(args, a, b)
	out, err := exec.Command("diff", args...).Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("diff: %v", err)
	}
	return string(out)
}

// patchHasTTY reports whether this process can open /dev/tty: GNU patch then
// asks its questions there instead of taking the default answers.
func patchHasTTY() bool {
	f, err := os.Open("/dev/tty")
	if err != nil {
		return false
	}
	f.Close()
	return true
}

func TestPatchDiff(t *testing.T) {
	base := "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\nline 11\nline 12\nline 13\nline 14\nline 15\n"
	mod := strings.Replace(strings.Replace(base, "line 5\n", "LINE FIVE\n", 1), "line 12\n", "line 12\nextra\n", 1)
	p1 := mkPatch(t, "a/f.txt", "b/f.txt", base, mod)
	p0 := mkPatch(t, "f.txt", "f.txt", base, mod)
	create := mkPatch(t, "/dev/null", "b/new/n.txt", "", "new file\nsecond\n")
	del := mkPatch(t, "a/f.txt", "/dev/null", base, "")
	noeol := mkPatch(t, "a/e.txt", "b/e.txt", "x\ny\n", "x\ny")
	addeol := mkPatch(t, "a/e.txt", "b/e.txt", "x\ny", "x\nz\n")
	multi := p1 + mkPatch(t, "a/g.txt", "b/g.txt", "g1\ng2\ng3\n", "g1\nG2\ng3\n")
	shifted := "new top\nnew top 2\n" + base
	fuzzy := strings.Replace(base, "line 3\n", "line three\n", 1)
	conflict := strings.Replace(base, "line 5\n", "line five changed\n", 1)
	long := ""
	for i := 1; i <= 40; i++ {
		long += "row " + string(rune('a'+i%26)) + " " + strings.Repeat("x", i%7) + "\n"
	}
	longMod := strings.Replace(strings.Replace(long, "row b x\n", "ROW B\n", 1), "row o xx\n", "ROW O\n", 1)
	pLong := mkPatch(t, "a/l.txt", "b/l.txt", long, longMod)
	startMod := "FIRST\n" + strings.SplitN(base, "\n", 2)[1]
	pStart := mkPatch(t, "a/f.txt", "b/f.txt", base, startMod)
	pEnd := mkPatch(t, "a/f.txt", "b/f.txt", base, strings.Replace(base, "line 15\n", "LAST\n", 1))
	git := "diff --git a/f.txt b/f.txt\nindex 1234567..89abcde 100644\n" + p1
	files := func(extra map[string]string) map[string]string {
		m := map[string]string{"f.txt": base, "p1.diff": p1, "p0.diff": p0, "create.diff": create,
			"del.diff": del, "noeol.diff": noeol, "addeol.diff": addeol, "e.txt": "x\ny\n", "e2.txt": "x\ny",
			"multi.diff": multi, "long.diff": pLong, "l.txt": long, "start.diff": pStart, "end.diff": pEnd, "g.txt": "g1\ng2\ng3\n", "git.diff": git, "garbage.diff": "hello\nworld\n"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	pc := func(name string, extra map[string]string, args ...string) toolCase {
		return toolCase{name: name, args: append([]string{"patch"}, args...), files: files(extra)}
	}
	cases := []toolCase{
		pc("p1 -i", nil, "-p1", "-i", "p1.diff"),
		pc("p1 stdin", nil, "-p1"),
		pc("p0", nil, "-p0", "-i", "p0.diff"),
		pc("no -p basename", nil, "-i", "p1.diff"),
		pc("explicit file", nil, "f.txt", "p1.diff"),
		pc("-R applied", map[string]string{"f.txt": mod}, "-p1", "-R", "-i", "p1.diff"),
		pc("--dry-run", nil, "--dry-run", "-p1", "-i", "p1.diff"),
		pc("-o", nil, "-p1", "-o", "out.txt", "-i", "p1.diff"),
		pc("-s", nil, "-s", "-p1", "-i", "p1.diff"),
		pc("-b", nil, "-b", "-p1", "-i", "p1.diff"),
		pc("-b suffix", nil, "-b", "-z", ".bak", "-p1", "-i", "p1.diff"),
		pc("offset", map[string]string{"f.txt": shifted}, "-p1", "-i", "p1.diff"),
		pc("offset no backup", map[string]string{"f.txt": shifted}, "--no-backup-if-mismatch", "-p1", "-i", "p1.diff"),
		pc("fuzz", map[string]string{"f.txt": fuzzy}, "-p1", "-i", "p1.diff"),
		pc("fuzz 0 fails", map[string]string{"f.txt": fuzzy}, "-F0", "-p1", "-i", "p1.diff"),
		pc("conflict rej", map[string]string{"f.txt": conflict}, "-p1", "-i", "p1.diff"),
		pc("conflict dry-run", map[string]string{"f.txt": conflict}, "--dry-run", "-p1", "-i", "p1.diff"),
		pc("conflict -r", map[string]string{"f.txt": conflict}, "-p1", "-r", "my.rej", "-i", "p1.diff"),
		pc("-N already applied", map[string]string{"f.txt": mod}, "-N", "-p1", "-i", "p1.diff"),
		pc("-f already applied", map[string]string{"f.txt": mod}, "-f", "-p1", "-i", "p1.diff"),
		pc("create", nil, "-p1", "-i", "create.diff"),
		pc("create dry-run", nil, "--dry-run", "-p1", "-i", "create.diff"),
		pc("delete", nil, "-p1", "-i", "del.diff"),
		pc("delete -R recreates", map[string]string{"f.txt": ""}, "-R", "-p1", "-i", "del.diff"),
		pc("remove newline", nil, "-p1", "-i", "noeol.diff"),
		pc("add newline", map[string]string{"e.txt": "x\ny"}, "-p1", "-i", "addeol.diff"),
		pc("multi file", nil, "-p1", "-i", "multi.diff"),
		pc("git header", nil, "-p1", "-i", "git.diff"),
		pc("garbage", nil, "-i", "garbage.diff"),
		pc("missing patch file", nil, "-i", "nope.diff"),
		pc("-E empty", nil, "-E", "-p1", "-i", "del.diff"),
		pc("directory -d", map[string]string{"sub/f.txt": base}, "-d", "sub", "-p1", "-i", "../p1.diff"),
		pc("two hunks offset", map[string]string{"l.txt": "new 1\nnew 2\n" + long}, "-p1", "-i", "long.diff"),
		pc("two hunks second moved", map[string]string{"l.txt": strings.Replace(long, "row j", "row j\nextra\nextra", 1)}, "-p1", "-i", "long.diff"),
		pc("start anchored", nil, "-p1", "-i", "start.diff"),
		pc("start anchored shifted", map[string]string{"f.txt": "zero\n" + base}, "-p1", "-i", "start.diff"),
		pc("end anchored", nil, "-p1", "-i", "end.diff"),
		pc("end anchored extra tail", map[string]string{"f.txt": base + "tail\n"}, "-p1", "-i", "end.diff"),
		pc("reverse creation deletes", map[string]string{"new/n.txt": "new file\nsecond\n"}, "-R", "-p1", "-i", "create.diff"),
		pc("bad option", nil, "--bogus"),
		pc("bad strip", nil, "-p", "x", "-i", "p1.diff"),
	}
	if !patchHasTTY() {
		cases = append(cases,
			pc("reversed detected", map[string]string{"f.txt": mod}, "-p1", "-i", "p1.diff"),
			pc("unreversed detected", nil, "-R", "-p1", "-i", "p1.diff"),
			pc("create existing", map[string]string{"new/n.txt": "other\n"}, "-p1", "-i", "create.diff"),
			pc("cannot find", nil, "-p0", "-i", "p1.diff"),
			pc("cannot find no -p", map[string]string{"f.txt": ""}, "-i", "multi.diff"),
		)
	}
	for i := range cases {
		if cases[i].name == "p1 stdin" {
			cases[i].stdin = p1
		}
	}
	runSearchDiff(t, cases, false)
}
