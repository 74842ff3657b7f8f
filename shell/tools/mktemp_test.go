package tools

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestMktemp(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		args   []string
		want   string // regexp for stdout; "" means no output
		status int
		mode   os.FileMode // of the created entry, 0 when none
	}{
		{name: "default", args: []string{"mktemp"}, want: `^/tmp/tmp\.[A-Za-z0-9]{10}\n$`, mode: 0o600},
		{name: "d", args: []string{"mktemp", "-d"}, want: `^/tmp/tmp\.[A-Za-z0-9]{10}\n$`, mode: os.ModeDir | 0o700},
		{name: "template", args: []string{"mktemp", "fooXXXX"}, want: `^foo[A-Za-z0-9]{4}\n$`, mode: 0o600},
		{name: "template-suffix-text", args: []string{"mktemp", "fooXXX.txt"}, want: `^foo[A-Za-z0-9]{3}\.txt\n$`, mode: 0o600},
		{name: "suffix", args: []string{"mktemp", "--suffix=.go", "xXXXXX"}, want: `^x[A-Za-z0-9]{5}\.go\n$`, mode: 0o600},
		{name: "p", args: []string{"mktemp", "-p", "sub", "aXXXXXX"}, want: `^sub/a[A-Za-z0-9]{6}\n$`, mode: 0o600},
		{name: "tmpdir", args: []string{"mktemp", "--tmpdir", "bXXX"}, want: `^/tmp/b[A-Za-z0-9]{3}\n$`, mode: 0o600},
		{name: "t", args: []string{"mktemp", "-t", "cXXX"}, want: `^/tmp/c[A-Za-z0-9]{3}\n$`, mode: 0o600},
		{name: "u", args: []string{"mktemp", "-u", "dXXX"}, want: `^d[A-Za-z0-9]{3}\n$`},
		{name: "too-few", args: []string{"mktemp", "fooXX"}, status: 1},
		{name: "t-slash", args: []string{"mktemp", "-t", "a/XXX"}, status: 1},
		{name: "missing-dir", args: []string{"mktemp", "nodir/XXXXXX"}, status: 1},
		{name: "q-missing-dir", args: []string{"mktemp", "-q", "nodir/XXXXXX"}, status: 1},
		{name: "suffix-no-x", args: []string{"mktemp", "--suffix=.x", "abc"}, status: 1},
		{name: "two-templates", args: []string{"mktemp", "aXXX", "bXXX"}, status: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, filepath.Join(root, "workspace"), map[string]string{"sub/": ""})
			os.MkdirAll(filepath.Join(root, "tmp"), 0o755)
			out, errOut, status := runOurs(t, toolCase{args: tc.args}, root)
			if status != tc.status {
				t.Fatalf("%q status = %d, want %d (stderr %q)", tc.args, status, tc.status, errOut)
			}
			// GNU agrees on the status (dry-run or in a scratch dir).
			gnuDir := t.TempDir()
			os.Mkdir(filepath.Join(gnuDir, "sub"), 0o755)
			gargs := append([]string{}, tc.args...)
			if tc.status == 0 && !strings.Contains(strings.Join(gargs, " "), "-u") {
				gargs = append([]string{"mktemp", "-u"}, gargs[1:]...)
			}
			if _, _, gs := runGNU(t, toolCase{args: gargs}, gnuDir); gs != tc.status {
				t.Errorf("GNU %q status = %d, want %d", gargs, gs, tc.status)
			}
			if tc.want == "" {
				if out != "" {
					t.Errorf("%q stdout = %q, want none", tc.args, out)
				}
				return
			}
			if !regexp.MustCompile(tc.want).MatchString(out) {
				t.Fatalf("%q stdout = %q, want match %s", tc.args, out, tc.want)
			}
			name := strings.TrimSuffix(out, "\n")
			host := filepath.Join(root, "workspace", name)
			if strings.HasPrefix(name, "/") {
				host = filepath.Join(root, name)
			}
			fi, err := os.Lstat(host)
			if tc.mode == 0 {
				if err == nil {
					t.Errorf("%q created %s, want dry run", tc.args, name)
				}
				return
			}
			if err != nil {
				t.Fatalf("%q: %v", tc.args, err)
			}
			if got := fi.Mode() & (os.ModeDir | os.ModePerm); got != tc.mode {
				t.Errorf("%q mode = %v, want %v", tc.args, got, tc.mode)
			}
		})
	}
}
