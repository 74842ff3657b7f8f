package tools

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// dataHostRun runs a real command in dir and fails the test if it fails.
func dataHostRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%q: %v\n%s", args, err, out)
	}
}

// gzSetup compresses files with the real gzip in both trees.
func gzSetup(names ...string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		for _, n := range names {
			dataHostRun(t, dir, "gzip", "-n", n)
		}
	}
}

var gzFiles = map[string]string{"a.txt": "hello gzip\n", "b.txt": strings.Repeat("line of text\n", 500), "empty": "", "bin": "\x00\x01\xff\xfe binary"}

// dataGzBytes compresses s with the real gzip.
func dataGzBytes(t *testing.T, s string) string {
	t.Helper()
	cmd := exec.Command("gzip", "-nc")
	cmd.Stdin = strings.NewReader(s)
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("real gzip: %v", err)
	}
	return string(out)
}

// dataShellSetup runs a host shell snippet in the tree to prepare it.
func dataShellSetup(script string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) { dataHostRun(t, dir, "sh", "-c", script) }
}

func TestGzipDecompress(t *testing.T) {
	gz := func(name string, setup []string, args ...string) toolCase {
		return toolCase{name: name, args: args, files: gzFiles, setup: gzSetup(setup...)}
	}
	sh := func(name, script string, args ...string) toolCase {
		return toolCase{name: name, args: args, files: gzFiles, setup: dataShellSetup(script)}
	}
	aGz := dataGzBytes(t, "hello gzip\n")
	runDiffParallel(t, []toolCase{
		gz("gunzip file", []string{"a.txt"}, "gunzip", "a.txt.gz"),
		gz("gzip -d file", []string{"b.txt"}, "gzip", "-d", "b.txt.gz"),
		gz("gzip --decompress", []string{"b.txt"}, "gzip", "--decompress", "b.txt.gz"),
		gz("gunzip keep", []string{"a.txt"}, "gunzip", "-k", "a.txt.gz"),
		gz("gunzip to stdout", []string{"b.txt"}, "gunzip", "-c", "b.txt.gz"),
		gz("gunzip --stdout", []string{"b.txt"}, "gunzip", "--stdout", "b.txt.gz"),
		gz("zcat", []string{"a.txt", "b.txt"}, "zcat", "a.txt.gz", "b.txt.gz"),
		gz("zcat empty", []string{"empty"}, "zcat", "empty.gz"),
		gz("zcat binary", []string{"bin"}, "zcat", "bin.gz"),
		gz("gunzip two", []string{"a.txt", "b.txt"}, "gunzip", "a.txt.gz", "b.txt.gz"),
		gz("gunzip verbose", []string{"a.txt"}, "gunzip", "-v", "a.txt.gz"),
		gz("gunzip quiet", nil, "gunzip", "-q", "a.txt"),
		sh("gunzip exists", "gzip -kn a.txt; echo old > a.txt", "gunzip", "a.txt.gz"),
		sh("gunzip force", "gzip -kn a.txt; echo old > a.txt", "gunzip", "-f", "a.txt.gz"),
		gz("gunzip unknown suffix", nil, "gunzip", "a.txt"),
		sh("gunzip not gzip", "cp a.txt x.gz", "gunzip", "x.gz"),
		gz("gunzip missing", nil, "gunzip", "nope.gz"),
		gz("gzip -t ok", []string{"a.txt"}, "gzip", "-t", "a.txt.gz"),
		gz("gzip -t bad", nil, "gzip", "-t", "a.txt"),
		{name: "gunzip stdin", args: []string{"gunzip"}, stdin: aGz},
		{name: "zcat stdin dash", args: []string{"zcat", "-"}, stdin: aGz},
		{name: "gzip -dc stdin", args: []string{"gzip", "-dc"}, stdin: aGz + aGz},
		{name: "gunzip stdin not gzip", args: []string{"gunzip"}, stdin: "plain text"},
		sh("gunzip tgz", "gzip -nc a.txt > x.tgz", "gunzip", "x.tgz"),
		sh("gzip -dc multi member", "gzip -nc a.txt > m.gz; gzip -nc b.txt >> m.gz", "gzip", "-dc", "m.gz"),
		sh("gunzip directory", "mkdir d.gz", "gunzip", "d.gz"),
		gz("gzip already gz", []string{"a.txt"}, "gzip", "a.txt.gz"),
		gz("gzip bad option", nil, "gzip", "--bogus", "a.txt"),
		gz("gzip missing file", nil, "gzip", "nope"),
		sh("gzip directory", "mkdir d", "gzip", "d"),
		sh("gunzip truncated", "gzip -nc b.txt | head -c 40 > t.gz", "gunzip", "t.gz"),
		sh("gunzip crc error", "gzip -nc a.txt > c.gz; printf '\\001' | dd of=c.gz bs=1 seek=$(( $(stat -c %s c.gz) - 6 )) conv=notrunc 2>/dev/null", "gunzip", "c.gz"),
		sh("gunzip trailing garbage", "gzip -nc a.txt > g.gz; echo junk >> g.gz", "gunzip", "g.gz"),
		sh("gunzip keeps mode", "chmod 600 a.txt; gzip a.txt", "gunzip", "a.txt.gz"),
		sh("gzip exists refuses", "echo x > a.txt.gz", "gzip", "a.txt"),
	}, 4)
}

// TestGzipRoundTrip compresses with our gzip and checks that the real
// gunzip restores the original, and the reverse direction, for each flag.
func TestGzipRoundTrip(t *testing.T) {
	if _, err := exec.LookPath("gzip"); err != nil {
		t.Skip("gzip not installed")
	}
	cases := []struct {
		name string
		args []string // our gzip invocation on "data"
		out  string   // file our gzip writes ("" = stdout)
	}{
		{"default", []string{"gzip", "data"}, "data.gz"},
		{"keep", []string{"gzip", "-k", "data"}, "data.gz"},
		{"best", []string{"gzip", "-9", "data"}, "data.gz"},
		{"fast", []string{"gzip", "-1", "data"}, "data.gz"},
		{"no name", []string{"gzip", "-n", "data"}, "data.gz"},
		{"stdout", []string{"gzip", "-c", "data"}, ""},
		{"suffix", []string{"gzip", "-S", ".z", "data"}, "data.z"},
		{"force overwrite", []string{"gzip", "-f", "data"}, "data.gz"},
	}
	contents := map[string]string{
		"text":   strings.Repeat("the quick brown fox\n", 1000),
		"empty":  "",
		"binary": string(bytes.Repeat([]byte{0, 1, 2, 255, 254}, 3000)),
	}
	for _, tc := range cases {
		for cname, content := range contents {
			t.Run(tc.name+"/"+cname, func(t *testing.T) {
				root := t.TempDir()
				dir := filepath.Join(root, "workspace")
				writeFiles(t, dir, map[string]string{"data": content})
				c := toolCase{args: tc.args}
				out, _, status := runOurs(t, c, root)
				if status != 0 {
					t.Fatalf("%q status %d", tc.args, status)
				}
				gz := []byte(out)
				if tc.out != "" {
					var err error
					if gz, err = os.ReadFile(filepath.Join(dir, tc.out)); err != nil {
						t.Fatal(err)
					}
				}
				cmd := exec.Command("gzip", "-dc")
				cmd.Stdin = bytes.NewReader(gz)
				got, err := cmd.Output()
				if err != nil {
					t.Fatalf("real gzip -dc of our output: %v", err)
				}
				if string(got) != content {
					t.Errorf("round trip of %q changed %d bytes into %d", tc.args, len(content), len(got))
				}
				_, statErr := os.Stat(filepath.Join(dir, "data"))
				kept := statErr == nil
				if want := tc.out == "" || strings.Contains(strings.Join(tc.args, " "), "-k"); kept != want {
					t.Errorf("%q: input kept = %v, want %v", tc.args, kept, want)
				}
			})
		}
	}
}

// TestGzipHeader checks the name and mode our gzip records, as read back
// by the real gzip -N.
func TestGzipHeader(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "workspace")
	writeFiles(t, dir, map[string]string{"orig.txt": "abc\n"})
	os.Chmod(filepath.Join(dir, "orig.txt"), 0o600)
	if _, _, st := runOurs(t, toolCase{args: []string{"gzip", "orig.txt"}}, root); st != 0 {
		t.Fatalf("gzip status %d", st)
	}
	fi, err := os.Stat(filepath.Join(dir, "orig.txt.gz"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("orig.txt.gz mode = %v, %v; want 0600", fi, err)
	}
	os.Rename(filepath.Join(dir, "orig.txt.gz"), filepath.Join(dir, "renamed.gz"))
	dataHostRun(t, dir, "gzip", "-dN", "renamed.gz")
	if b, err := os.ReadFile(filepath.Join(dir, "orig.txt")); err != nil || string(b) != "abc\n" {
		t.Errorf("gzip -dN restored %q, %v; want orig.txt with abc", b, err)
	}
}

// TestGzipCheck: only decompressing is admitted; compressing (Go's
// deflate makes other bytes than GNU gzip) and restoring the stored name
// go to the container.
func TestGzipCheck(t *testing.T) {
	cases := []struct {
		mode string
		args []string
		ok   bool
	}{
		{"gunzip", []string{"a.gz"}, true},
		{"zcat", []string{"a.gz"}, true},
		{"gzip", []string{"-d", "a.gz"}, true},
		{"gzip", []string{"-dc", "a.gz"}, true},
		{"gzip", []string{"-t", "a.gz"}, true},
		{"gzip", []string{"a"}, false},
		{"gzip", []string{"-9", "-k", "a"}, false},
		{"gzip", []string{"-c"}, false},
		{"gunzip", []string{"-N", "a.gz"}, false},
	}
	for _, tc := range cases {
		err := gzipCheck(tc.mode, tc.args)
		if (err == nil) != tc.ok {
			t.Errorf("gzipCheck(%s %q) = %v, want ok=%v", tc.mode, tc.args, err, tc.ok)
		}
	}
}
