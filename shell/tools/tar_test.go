package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var tarFiles = map[string]string{
	"d/a.txt":     "alpha\n",
	"d/sub/b.txt": "beta beta\n",
	"d/sub/c.log": "log\n",
	"d/empty/":    "",
	"top.txt":     "top\n",
	"out/":        "",
	"bin.dat":     "\x00\x01\x02\xff",
}

// tarSetup runs a host shell snippet (typically the real tar) in both
// trees, with a fixed mtime so listings agree.
func tarSetup(script string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		dataHostRun(t, dir, "sh", "-c", "chmod 640 d/sub/b.txt && ln -s a.txt d/link && "+script)
	}
}

func TestTarRead(t *testing.T) {
	tc := func(name, script string, args ...string) toolCase {
		return toolCase{name: name, args: args, files: tarFiles, setup: tarSetup(script)}
	}
	mk := "tar --mtime=@1715000000 -cf a.tar d top.txt"
	mkz := "tar --mtime=@1715000000 -czf a.tgz d top.txt"
	runDiffParallel(t, []toolCase{
		tc("list", mk, "tar", "tf", "a.tar"),
		tc("list dash", mk, "tar", "-tf", "a.tar"),
		tc("list long", mk, "tar", "--list", "--file=a.tar"),
		tc("list verbose", mk, "tar", "tvf", "a.tar"),
		tc("list gz", mkz, "tar", "tzf", "a.tgz"),
		tc("list gz autodetect", mkz, "tar", "tf", "a.tgz"),
		tc("list verbose gz", mkz, "tar", "-tvzf", "a.tgz"),
		tc("list members", mk, "tar", "tf", "a.tar", "d/sub"),
		tc("list missing member", mk, "tar", "tf", "a.tar", "nope"),
		tc("list exclude", mk, "tar", "tf", "a.tar", "--exclude=*.log"),
		tc("list exclude dir", mk, "tar", "tf", "a.tar", "--exclude", "sub"),
		tc("extract", mk, "tar", "xf", "a.tar", "-C", "out"),
		tc("extract here", mk+" && rm -r d top.txt", "tar", "xf", "a.tar"),
		tc("extract verbose", mk, "tar", "xvf", "a.tar", "-C", "out"),
		tc("extract gz", mkz, "tar", "xzf", "a.tgz", "-C", "out"),
		tc("extract gz autodetect", mkz, "tar", "-xf", "a.tgz", "--directory=out"),
		tc("extract member", mk, "tar", "xf", "a.tar", "-C", "out", "d/sub/b.txt"),
		tc("extract strip", mk, "tar", "xf", "a.tar", "-C", "out", "--strip-components=1"),
		tc("extract strip 2", mk, "tar", "xf", "a.tar", "-C", "out", "--strip-components", "2"),
		tc("extract exclude", mk, "tar", "xf", "a.tar", "-C", "out", "--exclude=*.txt"),
		tc("extract to stdout", mk, "tar", "xOf", "a.tar", "d/a.txt", "top.txt"),
		tc("extract to stdout all", mk, "tar", "-x", "-O", "-f", "a.tar"),
		tc("extract overwrite", mk+" && echo changed > d/a.txt", "tar", "xf", "a.tar"),
		tc("extract keep old", mk+" && echo changed > top.txt", "tar", "xkf", "a.tar"),
		tc("extract missing dir", mk, "tar", "xf", "a.tar", "-C", "nodir"),
		tc("extract missing archive", mk, "tar", "xf", "none.tar"),
		tc("extract not tar", mk, "tar", "xf", "top.txt"),
		tc("extract absolute names", "tar --mtime=@1715000000 --transform=s,^,/, -cPf a.tar top.txt", "tar", "xf", "a.tar", "-C", "out"),
		tc("extract dotdot refused", "mkdir -p x && echo evil > evil.txt && tar --mtime=@1715000000 -cPf a.tar x/../evil.txt", "tar", "xf", "a.tar", "-C", "out"),
		tc("extract hard link", "ln top.txt hard.txt && tar --mtime=@1715000000 -cf a.tar top.txt hard.txt && rm top.txt hard.txt", "tar", "xf", "a.tar"),
		tc("list hard link", "ln top.txt hard.txt && tar --mtime=@1715000000 -cf a.tar top.txt hard.txt", "tar", "tvf", "a.tar"),
		tc("list old gnu format", "tar --mtime=@1715000000 --format=oldgnu -cf a.tar d", "tar", "tf", "a.tar"),
		tc("list ustar format", "tar --mtime=@1715000000 --format=ustar -cf a.tar d", "tar", "tvf", "a.tar"),
		tc("list pax format", "tar --mtime=@1715000000 --format=pax --pax-option=delete=atime,delete=ctime -cf a.tar d", "tar", "tf", "a.tar"),
		tc("extract pax long name", "mkdir -p "+strings.Repeat("n", 120)+" && echo x > "+strings.Repeat("n", 120)+"/f && tar --mtime=@1715000000 --format=pax --pax-option=delete=atime,delete=ctime -cf a.tar "+strings.Repeat("n", 120), "tar", "xf", "a.tar", "-C", "out"),
		tc("extract gnu long name", "mkdir -p "+strings.Repeat("g", 120)+" && echo y > "+strings.Repeat("g", 120)+"/f && tar --mtime=@1715000000 -cf a.tar "+strings.Repeat("g", 120), "tar", "xf", "a.tar", "-C", "out"),
		tc("no mode", mk, "tar", "f", "a.tar"),
		tc("two modes", mk, "tar", "-c", "-x", "-f", "a.tar"),
		tc("create empty refused", "true", "tar", "cf", "new.tar"),
		tc("create missing file", "true", "tar", "cf", "new.tar", "nope"),
		tc("bad option", "true", "tar", "--bogus"),
	}, 4)
}

// dataTarTree lists a directory as path -> mode and content (symlinks by
// target), for comparing extraction results.
func dataTarTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	return snapshotTree(t, dir)
}

// TestTarRoundTrip creates archives with our tar and checks that GNU tar
// lists and extracts exactly the same tree, in both directions.
func TestTarRoundTrip(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("tar not installed")
	}
	cases := []struct {
		name   string
		args   []string // our tar, run in /workspace; writes the archive
		arch   string   // archive file ("" = stdout)
		gnuX   []string // GNU tar extraction flags
		expect []string // members GNU tar must list (sorted)
	}{
		{"create", []string{"tar", "cf", "o.tar", "d"}, "o.tar", []string{"xf"}, []string{"d/", "d/a.txt", "d/empty/", "d/link", "d/sub/", "d/sub/b.txt", "d/sub/c.log"}},
		{"create gz", []string{"tar", "czf", "o.tgz", "d", "top.txt"}, "o.tgz", []string{"xzf"}, []string{"d/", "d/a.txt", "d/empty/", "d/link", "d/sub/", "d/sub/b.txt", "d/sub/c.log", "top.txt"}},
		{"create stdout", []string{"tar", "-c", "d/sub"}, "", []string{"xf"}, []string{"d/sub/", "d/sub/b.txt", "d/sub/c.log"}},
		{"create verbose", []string{"tar", "cvf", "o.tar", "top.txt", "bin.dat"}, "o.tar", []string{"xf"}, []string{"bin.dat", "top.txt"}},
		{"create exclude", []string{"tar", "cf", "o.tar", "--exclude=*.log", "d"}, "o.tar", []string{"xf"}, []string{"d/", "d/a.txt", "d/empty/", "d/link", "d/sub/", "d/sub/b.txt"}},
		{"create -C", []string{"tar", "-C", "d", "-cf", "o.tar", "sub"}, "o.tar", []string{"xf"}, []string{"sub/", "sub/b.txt", "sub/c.log"}},
		{"create dereference", []string{"tar", "chf", "o.tar", "d/link"}, "o.tar", []string{"xf"}, []string{"d/link"}},
		{"create dot", []string{"tar", "-C", "d/sub", "-cf", "o.tar", "."}, "o.tar", []string{"xf"}, []string{"./", "./b.txt", "./c.log"}},
		{"create long names", []string{"tar", "cf", "o.tar", "long"}, "o.tar", []string{"xf"}, nil},
	}
	long := "long/" + strings.Repeat("x", 90) + "/" + strings.Repeat("y", 90) + ".txt"
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			ws := filepath.Join(root, "workspace")
			files := map[string]string{long: "long name\n"}
			for k, v := range tarFiles {
				files[k] = v
			}
			writeFiles(t, ws, files)
			os.Symlink("a.txt", filepath.Join(ws, "d/link"))
			out, errs, status := runOurs(t, toolCase{args: tc.args}, root)
			if status != 0 {
				t.Fatalf("%q status %d: %s", tc.args, status, errs)
			}
			archive := filepath.Join(root, "archive")
			if tc.arch == "" {
				os.WriteFile(archive, []byte(out), 0o644)
			} else {
				archive = filepath.Join(ws, tc.arch)
			}
			list, err := exec.Command("tar", "tf", archive).Output()
			if err != nil {
				t.Fatalf("GNU tar cannot list our archive: %v", err)
			}
			names := strings.Fields(string(list))
			sort.Strings(names)
			if tc.expect != nil {
				if diff := cmp.Diff(tc.expect, names); diff != "" {
					t.Errorf("GNU tar lists (-want +got):\n%s", diff)
				}
			}
			// GNU extraction of ours must equal our extraction of ours
			gnuDir, ourRoot := t.TempDir(), t.TempDir()
			ourDir := filepath.Join(ourRoot, "workspace")
			os.MkdirAll(ourDir, 0o755)
			cmd := exec.Command("tar", append(tc.gnuX, archive)...)
			cmd.Dir = gnuDir
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("GNU tar extract: %v %s", err, b)
			}
			data, _ := os.ReadFile(archive)
			os.WriteFile(filepath.Join(ourRoot, "a"), data, 0o644)
			if _, errs, st := runOurs(t, toolCase{args: []string{"tar", "xf", "/workspace/../a"}}, ourRoot); st != 0 {
				t.Fatalf("our extract status %d: %s", st, errs)
			}
			if diff := cmp.Diff(dataTarTree(t, gnuDir), dataTarTree(t, ourDir)); diff != "" {
				t.Errorf("extracted trees differ (-gnu +ours):\n%s", diff)
			}
			if !strings.Contains(tc.name, "verbose") {
				return
			}
			if out != "top.txt\nbin.dat\n" {
				t.Errorf("verbose output %q", out)
			}
		})
	}
}
