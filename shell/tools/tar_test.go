package tools

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"rung.dev/rung/shell"
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

// TestTarCompressedRead lists and extracts archives compressed by the
// real bzip2, xz and zstd (through GNU tar), with the option and without
// (detected from the magic, as GNU tar does for a named archive).
func TestTarCompressedRead(t *testing.T) {
	tc := func(name, script string, args ...string) toolCase {
		return toolCase{name: name, args: args, files: tarFiles, setup: tarSetup(script)}
	}
	mk := func(opt, file string) string {
		return "tar --mtime=@1715000000 " + opt + " -cf " + file + " d top.txt bin.dat"
	}
	big := "seq 1 200000 > d/big.txt && "
	var cases []toolCase
	for _, c := range []struct{ opt, short, file string }{
		{"--bzip2", "j", "a.tar.bz2"}, {"--xz", "J", "a.tar.xz"}, {"--zstd", "", "a.tar.zst"},
		{"--gzip", "z", "a.tar.gz"},
	} {
		make := mk(c.opt, c.file)
		cases = append(cases,
			tc(c.opt+" list", make, "tar", "-t", c.opt, "-f", c.file),
			tc(c.opt+" list detected", make, "tar", "tf", c.file),
			tc(c.opt+" list auto", make, "tar", "-taf", c.file),
			tc(c.opt+" list verbose", make, "tar", "-tv", c.opt, "-f", c.file),
			tc(c.opt+" list members", make, "tar", "-t", c.opt, "-f", c.file, "d/sub", "top.txt"),
			tc(c.opt+" list missing member", make, "tar", "-tf", c.file, "nope"),
			tc(c.opt+" extract", make, "tar", "-x", c.opt, "-f", c.file, "-C", "out"),
			tc(c.opt+" extract detected", make, "tar", "-xf", c.file, "-C", "out"),
			tc(c.opt+" extract verbose", make, "tar", "-xv", c.opt, "-f", c.file, "-C", "out"),
			tc(c.opt+" extract strip", make, "tar", "-xf", c.file, "-C", "out", "--strip-components=1"),
			tc(c.opt+" extract to stdout", make, "tar", "-xOf", c.file, "d/a.txt", "top.txt"),
			tc(c.opt+" extract exclude", make, "tar", "-xf", c.file, "-C", "out", "--exclude=*.txt"),
			tc(c.opt+" extract big", big+mk(c.opt, c.file), "tar", "-xf", c.file, "-C", "out"),
			toolCase{name: c.opt + " stdin without option", args: []string{"tar", "-t"}, stdin: tarBytes(t, c.opt)},
			toolCase{name: c.opt + " stdin dash without option", args: []string{"tar", "-xf", "-"}, stdin: tarBytes(t, c.opt)},
			toolCase{name: c.opt + " stdin with option", args: []string{"tar", "-tv", c.opt}, stdin: tarBytes(t, c.opt)},
			toolCase{name: c.opt + " stdin with option extract", args: []string{"tar", "-x", c.opt}, stdin: tarBytes(t, c.opt)},
			tc(c.opt+" on a plain archive", mk("", "p.tar"), "tar", "-t", c.opt, "-f", "p.tar"),
			tc(c.opt+" on a plain archive extract", mk("", "p.tar"), "tar", "-x", c.opt, "-f", "p.tar", "-C", "out"),
		)
		if c.short != "" {
			cases = append(cases,
				tc(c.opt+" old style", make, "tar", "t"+c.short+"vf", c.file),
				tc(c.opt+" old style extract", make, "tar", "x"+c.short+"f", c.file, "-C", "out"),
			)
		}
	}
	cases = append(cases,
		tc("bzip2 option on xz", mk("--xz", "a.txz"), "tar", "-tjf", "a.txz"),
		tc("xz option on bzip2", mk("--bzip2", "a.tbz"), "tar", "-tJf", "a.tbz"),
		tc("zstd option on bzip2", mk("--bzip2", "a.tbz"), "tar", "--zstd", "-tf", "a.tbz"),
		tc("gzip option on zstd", mk("--zstd", "a.tzst"), "tar", "-tzf", "a.tzst"),
		tc("xz best", "tar --mtime=@1715000000 -cf - d top.txt | xz -9e > a.txz", "tar", "-tvf", "a.txz"),
		tc("xz fast", "tar --mtime=@1715000000 -cf - d top.txt | xz -0 > a.txz", "tar", "-xf", "a.txz", "-C", "out"),
		tc("xz crc32 check", "tar --mtime=@1715000000 -cf - d top.txt | xz -C crc32 > a.txz", "tar", "-xf", "a.txz", "-C", "out"),
		tc("xz two streams", "tar --mtime=@1715000000 -cf - d top.txt | xz > a.txz && xz < /dev/null >> a.txz", "tar", "-tf", "a.txz"),
		tc("zstd level 19", "tar --mtime=@1715000000 -cf - d top.txt | zstd -q -19 > a.tzst", "tar", "-xf", "a.tzst", "-C", "out"),
		tc("zstd two frames", "tar --mtime=@1715000000 -cf - d | zstd -q > a.tzst && printf '' | zstd -q >> a.tzst", "tar", "-tf", "a.tzst"),
		tc("bzip2 fast", "tar --mtime=@1715000000 -cf - d top.txt | bzip2 -1 > a.tbz", "tar", "-xvf", "a.tbz", "-C", "out"),
		tc("bzip2 many blocks", "seq 1 300000 > d/big.txt && tar --mtime=@1715000000 -cf - d | bzip2 -1 > a.tbz", "tar", "-xf", "a.tbz", "-C", "out"),
		tc("create zstd refused", "true", "tar", "--zstd", "-cf", "x.tzst", "d"),
	)
	cases[len(cases)-1].known = "refused: the zstd program's bytes are not reproduced (TestTarCheck)"
	runDiffParallel(t, cases, 4)
}

// tarBytes is an archive of tarFiles made by GNU tar with a compression
// option.
func tarBytes(t *testing.T, opt string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, tarFiles)
	cmd := exec.Command("tar", "--mtime=@1715000000", opt, "-cf", "-", "d", "top.txt")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("GNU tar %s: %v", opt, err)
	}
	return string(out)
}

// TestTarCheck pins which tar forms the check admits: reading every
// compression, creating only plain and gzip archives.
func TestTarCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		ok   bool
	}{
		{[]string{"-xjf", "a.tbz"}, true},
		{[]string{"-tJf", "a.txz"}, true},
		{[]string{"--zstd", "-xf", "a.tzst"}, true},
		{[]string{"xaf", "a.tzst"}, true},
		{[]string{"-czf", "a.tgz", "."}, false},
		{[]string{"-caf", "a.tgz", "."}, false},
		{[]string{"-caf", "a.tar", "."}, true},
		{[]string{"-caf", "a.tar.gz", "."}, false},
		{[]string{"--zstd", "-cf", "x.tzst", "."}, false},
		{[]string{"-cjf", "x.tbz", "."}, false},
		{[]string{"cJf", "x.txz", "."}, false},
		{[]string{"-caf", "x.tar.zst", "."}, false},
		{[]string{"-caf", "x.tar.bz2", "."}, false},
		{[]string{"-caf", "x.tar.xz", "."}, false},
		{[]string{"-caf", "x.tar.lzma", "."}, false},
		{[]string{"-caf", "x.tar.Z", "."}, false},
		{[]string{"-c", "-a", "-f", shell.Unknown, "."}, false},
		{[]string{"-czaf", "x.tgz", "."}, false},
		{[]string{"-tzjf", "x"}, false},
		{[]string{"-rf", "x.tar", "y"}, false},
	}
	for _, tc := range cases {
		err := checkTar(tc.args)
		if (err == nil) != tc.ok {
			t.Errorf("checkTar(%q) = %v, want ok=%v", tc.args, err, tc.ok)
		}
		if err != nil && !errors.Is(err, shell.ErrUnsupported) {
			t.Errorf("checkTar(%q) = %v, not ErrUnsupported", tc.args, err)
		}
	}
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
		{"create auto gz", []string{"tar", "-caf", "o.tar.gz", "top.txt"}, "o.tar.gz", []string{"xzf"}, []string{"top.txt"}},
		{"create auto tgz", []string{"tar", "-caf", "o.tgz", "top.txt"}, "o.tgz", []string{"xzf"}, []string{"top.txt"}},
		{"create auto plain", []string{"tar", "-caf", "o.tar", "top.txt"}, "o.tar", []string{"xf"}, []string{"top.txt"}},
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

// TestTarDamagedRefused: a damaged bzip2, xz or zstd archive makes GNU
// tar print its decompressor's words, which the tier does not reproduce;
// the run is refused (status 125) instead of answering differently.
func TestTarDamagedRefused(t *testing.T) {
	t.Parallel()
	for _, opt := range []string{"--bzip2", "--xz", "--zstd"} {
		archive := tarBytes(t, opt)
		for _, cut := range []int{len(archive) / 2, len(archive) - 5} {
			root := t.TempDir()
			writeFiles(t, filepath.Join(root, "workspace"), map[string]string{"a": archive[:cut]})
			_, errs, st := runOurs(t, toolCase{args: []string{"tar", "-tf", "a"}}, root)
			if st != 125 || !strings.Contains(errs, "not supported in the isolate tier") {
				t.Errorf("%s cut at %d of %d: status %d, stderr %q; want a refusal", opt, cut, len(archive), st, errs)
			}
		}
	}
}
