package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLs(t *testing.T) {
	t.Parallel()
	tree := map[string]string{
		"a.txt": "hello\n", "b.go": "package b\n", "c": "", ".hidden": "x",
		"dir/x": "1", "dir/y.md": "22", "dir/sub/z": "333", "empty/": "",
		"v/file10": "", "v/file2": "", "v/file1.tar.gz": "", "v/file1": "", "v/a~": "", "v/.x1": "",
		"big": string(make([]byte, 123456)),
	}
	old := fuOldTimes
	withLinks := fuSetup(fuSymlink("a.txt", "ln"), fuSymlink("dir", "dl"), fuSymlink("nowhere", "dangle"),
		fuSymlink("loop", "loop"), fuChmod("b.go", 0o755), fuMkfifo("fifo"), fuSocket("sock"), old)
	cases := []toolCase{
		{name: "plain", args: []string{"ls"}, files: tree},
		{name: "dot", args: []string{"ls", "."}, files: tree},
		{name: "a", args: []string{"ls", "-a"}, files: tree},
		{name: "A", args: []string{"ls", "-A"}, files: tree},
		{name: "aA", args: []string{"ls", "-aA"}, files: tree},
		{name: "l", args: []string{"ls", "-l"}, files: tree, setup: old},
		{name: "l-recent", args: []string{"ls", "-l"}, files: tree, setup: fuRecentTimes},
		{name: "la-sub", args: []string{"ls", "-la", "dir"}, files: tree, setup: old},
		{name: "lh", args: []string{"ls", "-lh"}, files: tree, setup: old},
		{name: "lhS", args: []string{"ls", "-lhS"}, files: tree, setup: old},
		{name: "R", args: []string{"ls", "-R"}, files: tree},
		{name: "R-args", args: []string{"ls", "-R", "dir", "empty"}, files: tree},
		{name: "lR", args: []string{"ls", "-lR", "dir"}, files: tree, setup: old},
		{name: "1", args: []string{"ls", "-1", "dir"}, files: tree},
		{name: "d", args: []string{"ls", "-d", "dir", "a.txt"}, files: tree},
		{name: "d-noargs", args: []string{"ls", "-d"}, files: tree},
		{name: "ld", args: []string{"ls", "-ld", "dir", "empty"}, files: tree, setup: old},
		{name: "t", args: []string{"ls", "-t"}, files: tree, setup: fuSetup(old, fuMtime("c", fuOld.Add(time.Hour)), fuMtime("b.go", fuOld.Add(2*time.Hour)))},
		{name: "tr", args: []string{"ls", "-tr"}, files: tree, setup: fuSetup(old, fuMtime("c", fuOld.Add(time.Hour)), fuMtime("b.go", fuOld.Add(2*time.Hour)))},
		{name: "S", args: []string{"ls", "-S"}, files: tree},
		{name: "Sr", args: []string{"ls", "-Sr"}, files: tree},
		{name: "r", args: []string{"ls", "-r"}, files: tree},
		{name: "F", args: []string{"ls", "-F"}, files: tree, setup: withLinks},
		{name: "classify-always", args: []string{"ls", "--classify=always"}, files: tree, setup: withLinks},
		{name: "p", args: []string{"ls", "-p"}, files: tree, setup: withLinks},
		{name: "file-type", args: []string{"ls", "--file-type"}, files: tree, setup: withLinks},
		{name: "l-links", args: []string{"ls", "-l"}, files: tree, setup: withLinks},
		{name: "lF-links", args: []string{"ls", "-lF"}, files: tree, setup: withLinks},
		{name: "n", args: []string{"ls", "-n", "dir"}, files: tree, setup: old},
		{name: "G", args: []string{"ls", "-lG", "dir"}, files: tree, setup: old},
		{name: "o", args: []string{"ls", "-o", "dir"}, files: tree, setup: old},
		{name: "g", args: []string{"ls", "-g", "dir"}, files: tree, setup: old},
		{name: "color-never", args: []string{"ls", "--color=never"}, files: tree},
		{name: "color-auto", args: []string{"ls", "--color=auto", "-F"}, files: tree},
		{name: "X", args: []string{"ls", "-X", "v", "dir"}, files: tree},
		{name: "v", args: []string{"ls", "-v", "v"}, files: tree},
		{name: "va", args: []string{"ls", "-va", "v"}, files: tree},
		{name: "U-single", args: []string{"ls", "-U", "dir/sub"}, files: tree},
		{name: "full-time", args: []string{"ls", "--full-time", "dir"}, files: tree, setup: old},
		{name: "time-style-long-iso", args: []string{"ls", "-l", "--time-style=long-iso", "dir"}, files: tree, setup: old},
		{name: "time-style-iso-old", args: []string{"ls", "-l", "--time-style=iso", "dir"}, files: tree, setup: old},
		{name: "time-style-iso-recent", args: []string{"ls", "-l", "--time-style=iso", "dir"}, files: tree, setup: fuRecentTimes},
		{name: "time-style-full-iso", args: []string{"ls", "-l", "--time-style=full-iso", "dir"}, files: tree, setup: old},
		{name: "time-style-format", args: []string{"ls", "-l", "--time-style=+%Y/%m/%d %H.%M", "dir"}, files: tree, setup: old},
		{name: "time-style-bad", args: []string{"ls", "-l", "--time-style=bogus", "dir"}, files: tree},
		{name: "group-dirs-first", args: []string{"ls", "--group-directories-first"}, files: tree},
		{name: "group-dirs-first-r", args: []string{"ls", "--group-directories-first", "-r"}, files: tree},
		{name: "missing", args: []string{"ls", "nope"}, files: tree},
		{name: "missing-and-ok", args: []string{"ls", "nope", "a.txt", "dir"}, files: tree},
		{name: "files-and-dirs", args: []string{"ls", "a.txt", "dir", "c", "empty"}, files: tree},
		{name: "l-files-and-dirs", args: []string{"ls", "-l", "a.txt", "dir", "big"}, files: tree, setup: old},
		{name: "symlink-dir-arg", args: []string{"ls", "dl"}, files: tree, setup: withLinks},
		{name: "symlink-dir-arg-l", args: []string{"ls", "-l", "dl"}, files: tree, setup: withLinks},
		{name: "symlink-dir-arg-slash", args: []string{"ls", "dl/"}, files: tree, setup: withLinks},
		{name: "loop-arg", args: []string{"ls", "-l", "loop"}, files: tree, setup: withLinks},
		{name: "fifo-l", args: []string{"ls", "-l", "fifo", "sock"}, files: tree, setup: withLinks},
		{name: "empty-dir", args: []string{"ls", "-l", "empty"}, files: tree, setup: old},
		{name: "bad-option", args: []string{"ls", "-j"}, files: tree},
		{name: "bad-long", args: []string{"ls", "--bogus"}, files: tree},
		{name: "u-sort", args: []string{"ls", "-ut", "v"}, files: tree, setup: fuSetup(old, fuMtime("v/file2", fuOld.Add(time.Hour)))},
		{name: "C", args: []string{"ls", "-C", "v", "dir"}, files: tree},
		{name: "x", args: []string{"ls", "-x"}, files: tree},
		{name: "sort-size", args: []string{"ls", "--sort=size"}, files: tree},
		{name: "sort-ext", args: []string{"ls", "--sort=extension", "v"}, files: tree},
		{name: "sort-version", args: []string{"ls", "--sort=version", "v"}, files: tree},
		{name: "sort-none-single", args: []string{"ls", "--sort=none", "dir/sub"}, files: tree},
		{name: "sort-time", args: []string{"ls", "--sort=time"}, files: tree, setup: fuSetup(old, fuMtime("c", fuOld.Add(time.Hour)))},
		{name: "time-style-bad-not-long", args: []string{"ls", "--time-style=bogus", "dir"}, files: tree},
		{name: "color-bad", args: []string{"ls", "--color=bogus"}, files: tree},
		{name: "classify-bad", args: []string{"ls", "--classify=bogus"}, files: tree},
		{name: "sort-bad", args: []string{"ls", "--sort=bogus"}, files: tree},
		{name: "time-bad", args: []string{"ls", "--time=bogus"}, files: tree},
		{name: "time-mtime-invalid", args: []string{"ls", "-lt", "--time=mtime"}, files: tree},
		{name: "time-style-two-formats", args: []string{"ls", "-l", "--time-style=+%Y old\n%m-%d new", "dir"}, files: tree, setup: old},
		{name: "s", args: []string{"ls", "-s", "dir"}, files: tree},
		{name: "ls-h-total", args: []string{"ls", "-sh"}, files: tree},
		{name: "ddot", args: []string{"ls", "-d", ".", ".."}, files: tree},
		{name: "dash-dash", args: []string{"ls", "--", "-x"}, files: map[string]string{"-x": ""}},
		{name: "utf8", args: []string{"ls", "-l"}, files: map[string]string{"héllo wörld": "1", "日本": "22"}, setup: old},
	}
	sizes := []int64{0, 1, 999, 1023, 1024, 1025, 1536, 10239, 10240, 10241, 102400, 1048575, 1048576, 1048577,
		10485759, 123456789, 1073741823, 1073741824, 5000000000, 1099511627776 + 1}
	sized := func(t *testing.T, dir string) {
		for i, n := range sizes {
			if err := os.Truncate(filepath.Join(dir, fmt.Sprintf("s%02d", i)), n); err != nil {
				t.Fatal(err)
			}
		}
		fuOldTimes(t, dir)
	}
	sizeFiles := map[string]string{}
	for i := range sizes {
		sizeFiles[fmt.Sprintf("s%02d", i)] = ""
	}
	fuRunDiff(t, cases)
	// Sparse files up to 1 TiB: runSame, which never reads file contents.
	runSame(t, []toolCase{
		{name: "lh-sizes", args: []string{"ls", "-lh"}, files: sizeFiles, setup: sized},
		{name: "l-sizes", args: []string{"ls", "-lS"}, files: sizeFiles, setup: sized},
		{name: "du-h-apparent", args: []string{"du", "-ah", "--apparent-size"}, files: sizeFiles, setup: sized},
		{name: "du-h-apparent-total", args: []string{"du", "-sh", "--apparent-size"}, files: sizeFiles, setup: sized},
	})
}

// TestLsSame runs ls over the very directory GNU lists, for output that
// depends on inode numbers and change times.
func TestLsSame(t *testing.T) {
	t.Parallel()
	tree := map[string]string{"a": "1", "b": "22", "dir/x": "", "dir/sub/y": "", ".h": ""}
	links := fuSetup(fuSymlink("a", "la"), fuMkfifo("p"))
	cases := []toolCase{
		{name: "i", args: []string{"ls", "-i"}, files: tree, setup: links},
		{name: "ia", args: []string{"ls", "-ia", "dir"}, files: tree, setup: links},
		{name: "li", args: []string{"ls", "-li"}, files: tree, setup: links},
		{name: "c-sort", args: []string{"ls", "-c"}, files: tree, setup: links},
		{name: "lc", args: []string{"ls", "-lc", "--full-time"}, files: tree, setup: links},
		{name: "lct", args: []string{"ls", "-lct"}, files: tree, setup: links},
		// Reading a symlink updates its atime, so no links here.
		{name: "time-atime", args: []string{"ls", "-l", "--time=atime", "--full-time"}, files: tree},
		{name: "time-ctime-sort", args: []string{"ls", "-t", "--time=ctime"}, files: tree, setup: links},
		{name: "lu", args: []string{"ls", "-lu", "--full-time"}, files: tree},
		{name: "U", args: []string{"ls", "-U", "dir"}, files: tree, setup: links},
		{name: "U1A", args: []string{"ls", "-U1A"}, files: tree, setup: links},
		{name: "iC", args: []string{"ls", "-iC"}, files: tree, setup: links},
		{name: "is", args: []string{"ls", "-is", "dir"}, files: tree, setup: links},
		{name: "R-i", args: []string{"ls", "-Ri"}, files: tree, setup: links},
	}
	runSame(t, cases)
}
