package tools

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"rung.dev/rung/shell"
)

// tree lists a directory tree like the tree 2.1 program (Debian 12) with
// UTF-8 line graphics. Counting follows tree's: a symlink to a directory
// counts as a directory (and is not descended), a root directory counts
// only when it lists something.

var treeSpec = fuNewSpec([]string{"a", "d", "L=", "I=", "f", "noreport", "dirsfirst", "r", "n",
	"i", "F", "P=", "l", "s", "J"},
	"C", "t", "U", "v", "c", "h", "p", "u", "g", "D", "X", "o=",
	"Q", "N", "q", "x", "A", "S", "charset=", "filelimit=", "prune", "matchdirs",
	"ignore-case", "info", "du", "si", "inodes", "device", "fromfile", "gitignore", "help", "version")

type treer struct {
	c                                       *shell.Call
	ctx                                     context.Context
	w                                       *bufio.Writer
	all, dirsOnly, full, dirsFirst, reverse bool
	// flat: -i, no indentation lines; classify: -F; follow: -l.
	flat, classify, follow bool
	level                  int // 0: unlimited
	ignore                 []string
	// only are -P's patterns: files not matching one are left out.
	only []string
	// seen are the directories listed so far (device, inode), for -l:
	// a symlink to one of them is not followed again.
	seen        map[[2]uint64]bool
	dirs, files int
	sizes       bool // -s
	json        bool // -J (treejson.go)
}

// treeCheck is tree's Check: -J with -l is refused (tree's JSON for a
// symlink loop is not reproduced).
func treeCheck(args []string) error {
	if err := treeSpec.check(args); err != nil {
		return err
	}
	opts, _, err := treeSpec.opts.Parse(args)
	if err != nil {
		return nil
	}
	var json, follow bool
	for _, o := range opts {
		json = json || o.Key == "J"
		follow = follow || o.Key == "l"
	}
	if json && follow {
		return fmt.Errorf("tree -J with -l: %w", shell.ErrUnsupported)
	}
	return nil
}

func runTree(ctx context.Context, c *shell.Call) int {
	opts, args, status, ok := treeSpec.parse(c, 1)
	if !ok {
		return status
	}
	t := &treer{c: c, ctx: ctx}
	report := true
	for _, o := range opts {
		switch o.Key {
		case "a":
			t.all = true
		case "d":
			t.dirsOnly = true
		case "f":
			t.full = true
		case "L":
			n, err := strconv.Atoi(o.Value)
			if err != nil || n < 1 {
				c.Errorf("Invalid level, must be greater than 0.")
				return 1
			}
			t.level = n
		case "I":
			t.ignore = append(t.ignore, strings.Split(o.Value, "|")...)
		case "noreport":
			report = false
		case "dirsfirst":
			t.dirsFirst = true
		case "r":
			t.reverse = true
		case "i":
			t.flat = true
		case "F":
			t.classify = true
		case "P":
			t.only = append(t.only, strings.Split(o.Value, "|")...)
		case "l":
			t.follow = true
		case "s":
			t.sizes = true
		case "J":
			t.json = true
		}
	}
	if len(args) == 0 {
		args = []string{"."}
	}
	t.w = bufio.NewWriterSize(c.Stdout, 32<<10)
	if t.json {
		return t.runJSON(args, report)
	}
	for _, a := range args {
		st, err := fuStatPath(c, a)
		if t.sizes && err == nil {
			t.w.WriteString(treeSize(st.Size))
		}
		if err != nil || !st.isDir() {
			t.w.WriteString(a + "  [error opening dir]\n")
			if err != nil {
				status = 2
			} else {
				t.files++
			}
			continue
		}
		t.w.WriteString(a)
		if t.classify {
			t.w.WriteByte('/')
		}
		t.w.WriteByte('\n')
		if t.follow {
			t.seen = map[[2]uint64]bool{{st.Dev, st.Ino}: true}
		}
		n, err := t.list(a, "", 1)
		if err != nil {
			t.w.Flush()
			return 130
		}
		if n > 0 {
			t.dirs++
		}
	}
	if report {
		if t.dirsOnly {
			fmt.Fprintf(t.w, "\n%d %s\n", t.dirs, plural(t.dirs, "directory", "directories"))
		} else {
			fmt.Fprintf(t.w, "\n%d %s, %d %s\n", t.dirs, plural(t.dirs, "directory", "directories"),
				t.files, plural(t.files, "file", "files"))
		}
	}
	t.w.Flush()
	return status
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

type treeEnt struct {
	name, target string
	dir, link    bool
	mode         uint32 // the entry's own mode (lstat), with -F, -s or -J
	size         int64  // the entry's own size (lstat), with -s or -J
}

// treeSize is -s's column before a name.
func treeSize(n int64) string { return fmt.Sprintf("[%11d]  ", n) }

// matchesOnly reports whether a file's name matches one of -P's patterns.
func (t *treer) matchesOnly(name string) bool {
	for _, p := range t.only {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// indicator is -F's suffix: / for a directory (a symlink's target
// decides), * for an executable file, = a socket, | a FIFO; a symlink
// gets its target's.
func (t *treer) indicator(e treeEnt) string {
	switch {
	case e.dir:
		return "/"
	case e.link:
		return ""
	}
	switch e.mode & 0o170000 {
	case 0o010000:
		return "|"
	case 0o140000:
		return "="
	case 0o100000:
		if e.mode&0o111 != 0 {
			return "*"
		}
	}
	return ""
}

func (t *treer) ignored(name string) bool {
	for _, p := range t.ignore {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// entries reads dir's entries that are listed, in the order listed;
// nil when dir cannot be read.
func (t *treer) entries(dir string) []treeEnt {
	des, err := t.c.FS.ReadDir(t.c.Abs(dir))
	if err != nil {
		return nil
	}
	var ents []treeEnt
	for _, de := range des {
		n := de.Name()
		if (!t.all && n[0] == '.') || t.ignored(n) {
			continue
		}
		e := treeEnt{name: n, dir: de.IsDir()}
		p := fuJoin(dir, n)
		if t.classify || t.sizes || t.json {
			if st, err := fuLstat(t.c, p); err == nil {
				e.mode, e.size = st.Mode, st.Size
			}
		}
		if de.Type()&fs.ModeSymlink != 0 {
			e.link = true
			e.target, _ = t.c.FS.Readlink(t.c.Abs(p))
			if st, err := fuStatPath(t.c, p); err == nil && st.isDir() {
				e.dir = true
			}
		}
		descends := e.dir && (!e.link || t.follow)
		if t.dirsOnly && !e.dir || len(t.only) > 0 && !descends && !t.matchesOnly(n) {
			continue
		}
		ents = append(ents, e)
	}
	slices.SortStableFunc(ents, func(a, b treeEnt) int {
		if t.dirsFirst && a.dir != b.dir {
			if a.dir {
				return -1
			}
			return 1
		}
		if t.reverse {
			return strings.Compare(b.name, a.name)
		}
		return strings.Compare(a.name, b.name)
	})
	return ents
}

// list prints dir's entries below prefix; it returns how many it printed.
func (t *treer) list(dir, prefix string, depth int) (int, error) {
	if err := t.ctx.Err(); err != nil {
		return 0, err
	}
	ents := t.entries(dir)
	for i, e := range ents {
		last := i == len(ents)-1
		branch, next := "├── ", "│\u00a0\u00a0 "
		if last {
			branch, next = "└── ", "    "
		}
		if t.flat {
			branch, next = "", ""
		}
		p := fuJoin(dir, e.name)
		shown := e.name
		if t.full {
			shown = p
		}
		t.w.WriteString(prefix + branch)
		if t.sizes {
			t.w.WriteString(treeSize(e.size))
		}
		t.w.WriteString(shown)
		if e.link {
			t.w.WriteString(" -> " + e.target)
		}
		if t.classify {
			t.w.WriteString(t.indicator(e))
		}
		loop := false
		if e.dir && t.follow {
			if st, err := fuStatPath(t.c, p); err == nil {
				key := [2]uint64{st.Dev, st.Ino}
				loop = t.seen[key]
				t.seen[key] = true
			}
			if loop && e.link {
				t.w.WriteString("  [recursive, not followed]")
			}
		}
		t.w.WriteByte('\n')
		if !e.dir {
			t.files++
			continue
		}
		t.dirs++
		if e.link && (!t.follow || loop) || (t.level > 0 && depth >= t.level) {
			continue
		}
		if _, err := t.list(p, prefix+next, depth+1); err != nil {
			return 0, err
		}
	}
	return len(ents), nil
}
