package tools

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"rung.dev/rung/shell"
)

// gzipOpts is gzip 1.12's command line. Compressed bytes come from Go's
// compress/flate, so they differ from GNU gzip's (levels are tuned
// differently); every GNU gzip reads them and vice versa.
var gzipOpts = NewOptions("c,to-stdout,stdout", "d,uncompress,decompress", "k,keep", "f,force",
	"n,no-name", "N,name", "q,quiet", "v,verbose", "t,test", "1,fast", "2", "3", "4", "5", "6", "7", "8",
	"9,best", "S,suffix=", "l,list", "r,recursive", "L,license", "V,version", "h,help", "rsyncable", "synchronous")

func gzipTool(mode string) shell.Tool {
	return shell.Tool{
		Run:   func(ctx context.Context, c *shell.Call) int { return runGzip(ctx, c, mode) },
		Check: func(args []string) error { return gzipCheck(mode, args) },
	}
}

// gzipCheck admits mode's (gzip, gunzip, zcat) command line args when
// it decompresses or tests. Compressed bytes come from Go's deflate, not
// GNU gzip's, so a file this tier compressed would differ from the
// container's in size and bytes (ls -l, md5sum, wc -c): an auto exec
// that compresses goes to the container. (Run still compresses, for an
// exec forced into this tier: a valid gzip file every gunzip reads.)
// -N, which restores the stored name when decompressing, is not done
// here.
func gzipCheck(mode string, args []string) error {
	opts, _, err := gzipOpts.Parse(args)
	if err != nil {
		// An option this table lacks may be one GNU gzip has.
		return fmt.Errorf("gzip: %v: %w", err, shell.ErrUnsupported)
	}
	decompress := mode != "gzip"
	for _, o := range opts {
		switch o.Key {
		case "list", "recursive", "license", "version", "help", "rsyncable", "synchronous", "name":
			return fmt.Errorf("gzip: option %s: %w", o.Name, shell.ErrUnsupported)
		case "decompress", "test":
			decompress = true
		}
	}
	if !decompress {
		return fmt.Errorf("gzip: compressing (the bytes would differ from GNU gzip's): %w", shell.ErrUnsupported)
	}
	return nil
}

type gzipRun struct {
	ctx                                     context.Context
	c                                       *shell.Call
	stdout, decompress, keep, force, noName bool
	quiet, verbose, test                    bool
	level                                   int
	suffix                                  string
	status                                  int // 0, 1 error, 2 warning
}

func runGzip(ctx context.Context, c *shell.Call, mode string) int {
	opts, files, err := gzipOpts.Parse(c.Args[1:])
	if err != nil {
		return usage(c, err, 1)
	}
	g := &gzipRun{ctx: ctx, c: c, level: 6, suffix: ".gz", decompress: mode != "gzip", stdout: mode == "zcat"}
	for _, o := range opts {
		switch o.Key {
		case "stdout":
			g.stdout = true
		case "decompress":
			g.decompress = true
		case "keep":
			g.keep = true
		case "force":
			g.force = true
		case "no-name":
			g.noName = true
		case "name":
			g.noName = false
		case "quiet":
			g.quiet, g.verbose = true, false
		case "verbose":
			g.verbose, g.quiet = true, false
		case "test":
			g.test, g.decompress = true, true
		case "fast", "2", "3", "4", "5", "6", "7", "8", "best":
			g.level = int(strings.TrimSpace(o.Name)[len(o.Name)-1] - '0')
			if o.Key == "fast" {
				g.level = 1
			} else if o.Key == "best" {
				g.level = 9
			}
		case "suffix":
			g.suffix = o.Value
		default:
			return c.Fail("option " + o.Name)
		}
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return 130
		}
		if g.decompress {
			g.decompressFile(f)
		} else {
			g.compressFile(f)
		}
	}
	return g.status
}

func (g *gzipRun) errorf(format string, args ...any) {
	fmt.Fprintf(g.c.Stderr, "gzip: "+format+"\n", args...)
	g.status = 1
}

func (g *gzipRun) warnf(format string, args ...any) {
	if g.quiet {
		return // -q silences warnings and their exit status
	}
	fmt.Fprintf(g.c.Stderr, "gzip: "+format+"\n", args...)
	if g.status == 0 {
		g.status = 2
	}
}

// source opens an input operand; ok is false after reporting why not.
func (g *gzipRun) source(name string) (io.ReadCloser, fs.FileInfo, bool) {
	if name == "-" {
		return io.NopCloser(g.c.Stdin), nil, true
	}
	fi, err := g.c.FS.Lstat(g.c.Abs(name))
	if err != nil {
		g.errorf("%s: %s", name, shell.ErrText(err))
		return nil, nil, false
	}
	if fi.IsDir() {
		g.warnf("%s is a directory -- ignored", name)
		return nil, nil, false
	}
	if fi.Mode()&fs.ModeSymlink != 0 && !g.force && !g.stdout {
		g.warnf("%s: Too many levels of symbolic links", name)
		return nil, nil, false
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if fi, err = g.c.FS.Stat(g.c.Abs(name)); err != nil {
			g.errorf("%s: %s", name, shell.ErrText(err))
			return nil, nil, false
		}
	}
	if !fi.Mode().IsRegular() && !g.force {
		g.warnf("%s is not a directory or a regular file - ignored", name)
		return nil, nil, false
	}
	f, err := g.c.Open(name)
	if err != nil {
		g.errorf("%s: %s", name, shell.ErrText(err))
		return nil, nil, false
	}
	return f, fi, true
}

// target creates the output file, refusing to overwrite without -f.
func (g *gzipRun) target(name string, mode fs.FileMode) (io.WriteCloser, bool) {
	if _, err := g.c.FS.Lstat(g.c.Abs(name)); err == nil {
		if !g.force {
			g.warnf("%s already exists;\tnot overwritten", name)
			return nil, false
		}
		g.c.FS.Remove(g.c.Abs(name))
	}
	w, err := g.c.Create(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode.Perm())
	if err != nil {
		g.errorf("%s: %s", name, shell.ErrText(err))
		return nil, false
	}
	return w, true
}

func (g *gzipRun) compressFile(name string) {
	toStdout := g.stdout || name == "-"
	if !toStdout && strings.HasSuffix(name, g.suffix) {
		// gzip 1.12 warns but does not change the exit status here
		if !g.quiet {
			fmt.Fprintf(g.c.Stderr, "gzip: %s already has %s suffix -- unchanged\n", name, g.suffix)
		}
		return
	}
	in, fi, ok := g.source(name)
	if !ok {
		return
	}
	defer in.Close()
	var out io.Writer = g.c.Stdout
	var closer io.Closer
	outName := name + g.suffix
	if !toStdout {
		w, ok := g.target(outName, fi.Mode())
		if !ok {
			return
		}
		out, closer = w, w
	}
	cw := &gzCountWriter{w: out}
	zw, _ := gzip.NewWriterLevel(cw, g.level)
	zw.OS = 3 // Unix, as GNU gzip writes
	if fi != nil && !g.noName {
		zw.Name = path.Base(name)
		zw.ModTime = fi.ModTime()
	}
	n, err := io.Copy(zw, gzipCtxReader{g.ctx, in})
	if err == nil {
		err = zw.Close()
	}
	if closer != nil {
		if cerr := closer.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		g.errorf("%s: %v", name, err)
		return
	}
	if toStdout {
		return
	}
	g.finishFile(name, outName, fi)
	if g.verbose {
		fmt.Fprintf(g.c.Stderr, "%s:\t%s -- replaced with %s\n", name, gzipRatio(n, cw.n), outName)
	}
}

// finishFile copies mode and times to the output and removes the input.
func (g *gzipRun) finishFile(in, out string, fi fs.FileInfo) {
	g.c.FS.Chmod(g.c.Abs(out), fi.Mode().Perm())
	g.c.FS.Chtimes(g.c.Abs(out), time.Now(), fi.ModTime())
	if !g.keep {
		if err := g.c.FS.Remove(g.c.Abs(in)); err != nil {
			g.errorf("%s: %s", in, shell.ErrText(err))
		}
	}
}

func gzipRatio(in, out int64) string {
	if in == 0 {
		return "  0.0%"
	}
	return fmt.Sprintf("%5.1f%%", 100*float64(in-out)/float64(in))
}

// gunzipName strips a known compression suffix.
func (g *gzipRun) gunzipName(name string) (string, bool) {
	lower := strings.ToLower(name)
	for _, s := range []string{g.suffix, ".gz", "-gz", ".z", "-z", "_z"} {
		if s != "" && strings.HasSuffix(lower, strings.ToLower(s)) && len(name) > len(s) {
			return name[:len(name)-len(s)], true
		}
	}
	for _, s := range []string{".tgz", ".taz"} {
		if strings.HasSuffix(lower, s) && len(name) > len(s) {
			return name[:len(name)-len(s)] + ".tar", true
		}
	}
	return "", false
}

func (g *gzipRun) decompressFile(name string) {
	toStdout := g.stdout || name == "-" || g.test
	outName := ""
	if !toStdout {
		var ok bool
		if outName, ok = g.gunzipName(name); !ok {
			g.warnf("%s: unknown suffix -- ignored", name)
			return
		}
	}
	in, fi, ok := g.source(name)
	if !ok {
		return
	}
	defer in.Close()
	br := bufio.NewReader(gzipCtxReader{g.ctx, in})
	zr, err := gzip.NewReader(br)
	if err != nil {
		if errors.Is(err, io.EOF) && name == "-" {
			g.errorf("stdin: unexpected end of file")
		} else {
			io.WriteString(g.c.Stderr, "\n") // gzip starts this message on a new line
			g.errorf("%s: not in gzip format", name)
		}
		return
	}
	var out io.Writer = g.c.Stdout
	if g.test {
		out = io.Discard
	}
	var closer io.Closer
	if !toStdout {
		w, ok := g.target(outName, fi.Mode())
		if !ok {
			return
		}
		out, closer = w, w
	}
	n, garbage, err := gunzipMembers(out, zr, br)
	if closer != nil {
		closer.Close()
	}
	if garbage {
		// data after the last member: GNU gzip warns and keeps the output
		g.warnf("%s: decompression OK, trailing garbage ignored", name)
	}
	if err != nil {
		g.reportGunzipErr(name, err)
		if closer != nil {
			g.c.FS.Remove(g.c.Abs(outName))
		}
		return
	}
	if toStdout {
		return
	}
	g.finishFile(name, outName, fi)
	if g.verbose {
		fmt.Fprintf(g.c.Stderr, "%s:\t%s -- replaced with %s\n", name, gzipRatio(n, fi.Size()), outName)
	}
}

func (g *gzipRun) reportGunzipErr(name string, err error) {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		g.errorf("%s: unexpected end of file", name)
	case errors.Is(err, gzip.ErrChecksum):
		g.errorf("%s: invalid compressed data--crc error", name)
	default:
		g.errorf("%s: invalid compressed data--format violated", name)
	}
}

// gunzipMembers copies every gzip member of br to out; garbage reports
// bytes after the last member that do not start another one.
func gunzipMembers(out io.Writer, zr *gzip.Reader, br *bufio.Reader) (n int64, garbage bool, err error) {
	for {
		zr.Multistream(false)
		m, err := io.Copy(out, zr)
		n += m
		if err != nil {
			return n, false, err
		}
		magic, _ := br.Peek(2)
		switch {
		case len(magic) == 0:
			return n, false, nil
		case len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b:
			return n, true, nil
		}
		if err := zr.Reset(br); err != nil {
			return n, false, err
		}
	}
}

type gzCountWriter struct {
	w io.Writer
	n int64
}

func (cw *gzCountWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	return n, err
}

// gzipCtxReader stops a copy when ctx is done.
type gzipCtxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r gzipCtxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
