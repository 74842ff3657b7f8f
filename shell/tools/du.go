package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
	"rung.dev/rung/shell"
)

// du estimates file space usage like GNU du: block counts come from
// stat's st_blocks, hard links are counted once, symlinks are not
// followed, and entries are visited in directory order (as GNU's fts
// does), so the output order matches GNU's on the same directory.

var duSpec = fuNewSpec([]string{
	"s,summarize", "h,human-readable", "a,all", "c,total", "b,bytes", "k", "m",
	"d,max-depth=", "x,one-file-system", "apparent-size", "0,null", "P,no-dereference",
}, "B,block-size=", "D,H,dereference-args", "L,dereference", "l,count-links", "S,separate-dirs",
	"si", "t,threshold=", "time=?", "time-style=", "X,exclude-from=", "exclude=", "inodes",
	"files0-from=", "help", "version")

type duer struct {
	c                           *shell.Call
	ctx                         context.Context
	w                           *bufio.Writer
	all, apparent, human, oneFS bool
	block                       uint64 // output unit in bytes (1 with -b)
	maxDepth                    int    // -1: unlimited
	end                         byte
	seen                        map[[2]uint64]bool
	status                      int
}

func runDu(ctx context.Context, c *shell.Call) int {
	opts, args, status, ok := duSpec.parse(c, 1)
	if !ok {
		return status
	}
	d := &duer{c: c, ctx: ctx, block: 1024, maxDepth: -1, end: '\n', seen: map[[2]uint64]bool{}}
	var total, summarize bool
	for _, o := range opts {
		switch o.Key {
		case "summarize":
			summarize = true
		case "human-readable":
			d.human = true
		case "all":
			d.all = true
		case "total":
			total = true
		case "bytes":
			d.apparent, d.block, d.human = true, 1, false
		case "k":
			d.block, d.human = 1024, false
		case "m":
			d.block, d.human = 1<<20, false
		case "max-depth":
			n, err := strconv.Atoi(o.Value)
			if err != nil || n < 0 {
				c.Errorf("invalid maximum depth %s", fuQuote(o.Value))
				return usage(c, errors.New("invalid maximum depth"), 1)
			}
			d.maxDepth = n
		case "one-file-system":
			d.oneFS = true
		case "apparent-size":
			d.apparent = true
		case "null":
			d.end = 0
		}
	}
	if summarize {
		if d.maxDepth > 0 {
			c.Errorf("warning: summarizing conflicts with --max-depth=%d", d.maxDepth)
			return usage(c, errors.New("cannot both summarize and show all entries"), 1)
		}
		if d.all {
			return usage(c, errors.New("cannot both summarize and show all entries"), 1)
		}
		d.maxDepth = 0
	}
	if len(args) == 0 {
		args = []string{"."}
	}
	d.w = bufio.NewWriterSize(c.Stdout, 32<<10)
	var sum uint64
	for _, a := range args {
		st, err := fuLstat(c, a)
		if err != nil {
			d.w.Flush()
			c.Errorf("cannot access %s: %s", fuQuote(a), fuErr(err))
			d.status = 1
			continue
		}
		n, err := d.walk(a, st, 0, st.Dev)
		if err != nil {
			d.w.Flush()
			return 130
		}
		sum += n
	}
	if total {
		d.print(sum, "total")
	}
	if err := d.w.Flush(); err != nil {
		return 1
	}
	return d.status
}

func (d *duer) size(st fuStat) uint64 {
	if d.apparent {
		if st.isReg() || st.isLink() || st.isDir() {
			return uint64(st.Size)
		}
		return 0
	}
	return uint64(st.Blocks) * 512
}

func (d *duer) print(n uint64, name string) {
	if d.human {
		d.w.WriteString(fuHuman(n, 1024))
	} else {
		d.w.WriteString(strconv.FormatUint(fuCeilDiv(n, d.block), 10))
	}
	d.w.WriteByte('\t')
	d.w.WriteString(name)
	d.w.WriteByte(d.end)
}

// walk returns the bytes used under name, printing as it goes.
func (d *duer) walk(name string, st fuStat, depth int, dev uint64) (uint64, error) {
	if err := d.ctx.Err(); err != nil {
		return 0, err
	}
	key := [2]uint64{st.Dev, st.Ino}
	if st.isDir() || st.Nlink > 1 {
		if d.seen[key] {
			return 0, nil
		}
		d.seen[key] = true
	}
	n := d.size(st)
	if !st.isDir() {
		if depth == 0 || (d.all && (d.maxDepth < 0 || depth <= d.maxDepth)) {
			d.print(n, name)
		}
		return n, nil
	}
	if !d.oneFS || st.Dev == dev {
		ents, err := fuReadDir(d.c, name, true)
		if err != nil {
			d.w.Flush()
			d.c.Errorf("cannot read directory %s: %s", fuQuote(name), fuErr(err))
			d.status = 1
		}
		tick := fuCtxEvery(d.ctx)
		for _, e := range ents {
			if err := tick(); err != nil {
				return 0, err
			}
			child := fuJoin(name, e.name)
			if !e.ok {
				d.w.Flush()
				d.c.Errorf("cannot access %s: %s", fuQuote(child), fuErr(e.err))
				d.status = 1
				continue
			}
			cst := e.st
			if d.oneFS && cst.Dev != dev {
				continue
			}
			cn, err := d.walk(child, cst, depth+1, dev)
			if err != nil {
				return 0, err
			}
			n += cn
		}
	}
	if d.maxDepth < 0 || depth <= d.maxDepth {
		d.print(n, name)
	}
	return n, nil
}

// statfser is an optional ability of a file view: file system statistics
// for df. The view in use may not offer it; then df is refused.
type statfser interface {
	Statfs(name string) (unix.Statfs_t, error)
}

var dfSpec = fuNewSpec([]string{"h,human-readable", "k", "T,print-type"},
	"a,all", "B,block-size=", "H,si", "i,inodes", "l,local", "no-sync", "output=?", "P,portability",
	"sync", "total", "t,type=", "x,exclude-type=", "help", "version")

// runDf reports the sandbox's one file system (holding /workspace and
// /tmp) when the file view can give its statistics.
func runDf(ctx context.Context, c *shell.Call) int {
	opts, args, status, ok := dfSpec.parse(c, 1)
	if !ok {
		return status
	}
	sf, ok := c.FS.(statfser)
	if !ok {
		return c.Fail("df (the file view has no file system statistics)")
	}
	human := false
	for _, o := range opts {
		switch o.Key {
		case "human-readable":
			human = true
		case "k":
			human = false
		case "print-type":
			return c.Fail("option -T")
		}
	}
	if len(args) == 0 {
		args = []string{"/workspace"}
	}
	fs, err := sf.Statfs("/workspace")
	if err != nil {
		c.Errorf("/workspace: %s", fuErr(err))
		return 1
	}
	bs := uint64(fs.Bsize)
	total, free, avail := fs.Blocks*bs, fs.Bfree*bs, fs.Bavail*bs
	used := total - free
	pct := "-"
	if used+avail > 0 {
		pct = strconv.FormatUint(fuCeilDiv(used*100, used+avail), 10) + "%"
	}
	num := func(n uint64) string {
		if human {
			return fuHuman(n, 1024)
		}
		return strconv.FormatUint(fuCeilDiv(n, 1024), 10)
	}
	head := "1K-blocks"
	if human {
		head = "Size"
	}
	w := bufio.NewWriter(c.Stdout)
	fmt.Fprintf(w, "%-14s %9s %7s %9s %4s %s\n", "Filesystem", head, "Used", "Available", "Use%", "Mounted on")
	for _, a := range args {
		if _, err := c.FS.Stat(c.Abs(a)); err != nil {
			w.Flush()
			c.Errorf("%s: %s", a, fuErr(err))
			status = 1
			continue
		}
		fmt.Fprintf(w, "%-14s %9s %7s %9s %4s %s\n", "workspace", num(total), num(used), num(avail), pct, "/workspace")
	}
	w.Flush()
	return status
}

// dfCheck refuses df statically: the file views in use ([storage.Root])
// offer no file system statistics.
func dfCheck(args []string) error {
	if err := dfSpec.check(args); err != nil {
		return err
	}
	return fmt.Errorf("df: file system statistics: %w", shell.ErrUnsupported)
}
