package tools

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"

	"rung.dev/rung/shell"
)

// tarOpts is the part of GNU tar 1.34's command line implemented here:
// create, extract and list GNU/ustar archives, optionally gzipped;
// extract and list bzip2, xz and zstd ones too (tarcomp.go).
// Archives written here differ from GNU tar's bytes (member order is
// sorted where GNU uses directory order) but GNU tar reads them.
var tarOpts = NewOptions("c,create", "x,get,extract", "t,list", "f,file=", "z,gunzip,ungzip,gzip",
	"v,verbose", "C,directory=", "O,to-stdout", "p,same-permissions,preserve-permissions",
	"h,dereference", "k,keep-old-files", "m,touch", "exclude=", "strip-components=",
	"no-same-owner", "same-owner", "numeric-owner", "overwrite", "no-same-permissions", "sort=",
	"j,bzip2", "J,xz", "zstd", "a,auto-compress", "r,append", "u,update", "A,catenate,concatenate",
	"d,diff,compare", "T,files-from=", "X,exclude-from=", "P,absolute-names", "delete", "W,verify",
	"b,blocking-factor=", "H,format=", "remove-files", "totals=?", "wildcards", "anchored")

// tarUnsupported are recognised but not implemented here.
var tarUnsupported = map[string]bool{"append": true,
	"update": true, "concatenate": true, "compare": true, "files-from": true, "exclude-from": true,
	"absolute-names": true, "delete": true, "verify": true, "blocking-factor": true, "format": true,
	"remove-files": true, "totals": true, "wildcards": true, "anchored": true}

func tarTool() shell.Tool { return shell.Tool{Run: runTar, Check: checkTar} }

// tarArgs expands GNU tar's old-style first argument ("czf a.tgz") into
// dashed options.
func tarArgs(args []string) []string {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || args[0] == shell.Unknown {
		return args
	}
	var out []string
	rest := args[1:]
	for _, l := range args[0] {
		out = append(out, "-"+string(l))
		if strings.ContainsRune("fCTXbH", l) && len(rest) > 0 {
			out = append(out, rest[0])
			rest = rest[1:]
		}
	}
	return append(out, rest...)
}

func checkTar(args []string) error {
	opts, _, err := tarOpts.Parse(tarArgs(args))
	if err != nil {
		// An option this table lacks may be one GNU tar has (--zstd):
		// only the container can tell.
		return fmt.Errorf("tar: %v: %w", err, shell.ErrUnsupported)
	}
	var create, auto bool
	comp, file := "", "-"
	for _, o := range opts {
		if tarUnsupported[o.Key] || (o.Key == "sort" && o.Value != "name" && o.Value != "none") {
			return fmt.Errorf("tar: option %s: %w", o.Name, shell.ErrUnsupported)
		}
		switch o.Key {
		case "create":
			create = true
		case "file":
			file = o.Value
		case "auto-compress":
			auto = true
		case compGzip, compBzip2, compXz, compZstd:
			if comp != "" && comp != o.Key {
				return fmt.Errorf("tar: conflicting compression options: %w", shell.ErrUnsupported)
			}
			comp = o.Key
		}
	}
	if !create {
		return nil
	}
	if why := tarCreateComp(comp, auto, file); why != "" {
		return fmt.Errorf("tar: %s: %w", why, shell.ErrUnsupported)
	}
	if auto && file != "-" {
		comp = tarAutoSuffix(file)
	}
	if comp == compGzip {
		// Served when forced into this tier (a valid archive), but its
		// bytes are compress/flate's, not GNU gzip's: its size and
		// checksum would differ from the container's.
		return fmt.Errorf("tar: creating a gzip archive (its compressed bytes would differ from the gzip program's): %w", shell.ErrUnsupported)
	}
	return nil
}

// tarCreateComp says why creating with these options is not served
// here, or "" when it is: only gzip is compressed here (see tarcomp.go).
func tarCreateComp(comp string, auto bool, file string) string {
	if auto && comp != "" {
		return "--auto-compress with a compression option"
	}
	if auto && file != "-" {
		if file == shell.Unknown {
			return "--auto-compress with an archive name known only at run time"
		}
		comp = tarAutoSuffix(file)
	}
	if comp != "" && comp != compGzip {
		return "creating a " + comp + " archive (its compressed bytes would differ from the " + comp + " program's)"
	}
	return ""
}

type tarRun struct {
	ctx                      context.Context
	c                        *shell.Call
	mode                     byte // c, x, t
	file                     string
	comp                     string // compression option: gzip, bzip2, xz, zstd or ""
	auto                     bool   // -a
	verbose, toStdout, deref bool
	keepOld, touch           bool
	dir                      string // -C, absolute
	excludes                 []string
	strip                    int
	failed                   bool
	removedSlash             bool
	archivePath              string // absolute path of the archive file, if any
	ugs                      int    // -tv user/group/size column width
	closers                  []func()
}

func runTar(ctx context.Context, c *shell.Call) int {
	opts, operands, err := tarOpts.Parse(tarArgs(c.Args[1:]))
	if err != nil {
		c.Errorf("%s", err)
		fmt.Fprintf(c.Stderr, "Try '%s --help' or '%s --usage' for more information.\n", c.Name(), c.Name())
		return 64
	}
	r := &tarRun{ctx: ctx, c: c, file: "-", dir: c.Dir}
	for _, o := range opts {
		switch o.Key {
		case "create", "extract", "list":
			m := map[string]byte{"create": 'c', "extract": 'x', "list": 't'}[o.Key]
			if r.mode != 0 && r.mode != m {
				c.Errorf("You may not specify more than one '-Acdtrux', '--delete' or  '--test-label' option")
				fmt.Fprintf(c.Stderr, "Try '%s --help' or '%s --usage' for more information.\n", c.Name(), c.Name())
				return 2
			}
			r.mode = m
		case "file":
			r.file = o.Value
		case compGzip, compBzip2, compXz, compZstd:
			if r.comp != "" && r.comp != o.Key {
				return c.Fail("conflicting compression options")
			}
			r.comp = o.Key
		case "auto-compress":
			r.auto = true
		case "verbose":
			r.verbose = true
		case "directory":
			r.dir = tarJoin(r.dir, o.Value)
		case "to-stdout":
			r.toStdout = true
		case "dereference":
			r.deref = true
		case "keep-old-files":
			r.keepOld = true
		case "touch":
			r.touch = true
		case "exclude":
			r.excludes = append(r.excludes, o.Value)
		case "strip-components":
			n, err := strconv.Atoi(o.Value)
			if err != nil || n < 0 {
				c.Errorf("Invalid number of elements: %s", o.Value)
				return 2
			}
			r.strip = n
		case "preserve-permissions", "no-same-owner", "same-owner", "numeric-owner", "overwrite", "no-same-permissions":
			// as root GNU tar already keeps modes; owners cannot be set here
		case "sort":
			if o.Value != "name" && o.Value != "none" {
				return c.Fail("option --sort=" + o.Value)
			}
		default:
			return c.Fail("option " + o.Name)
		}
	}
	if r.file != "-" {
		r.archivePath = c.Abs(r.file)
	}
	defer func() {
		for _, f := range r.closers {
			f()
		}
	}()
	switch r.mode {
	case 'c':
		if why := tarCreateComp(r.comp, r.auto, r.file); why != "" {
			return c.Fail(why)
		}
		if r.auto && r.comp == "" && r.file != "-" {
			r.comp = tarAutoSuffix(r.file)
		}
		return r.create(operands)
	case 'x', 't':
		return r.read(operands)
	}
	c.Errorf("You must specify one of the '-Acdtrux', '--delete' or '--test-label' options")
	fmt.Fprintf(c.Stderr, "Try '%s --help' or '%s --usage' for more information.\n", c.Name(), c.Name())
	return 2
}

func tarJoin(dir, p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	if dir == "/" {
		return "/" + p
	}
	return dir + "/" + p
}

func (r *tarRun) errorf(format string, args ...any) {
	r.c.Errorf(format, args...)
	r.failed = true
}

func (r *tarRun) status() int {
	if r.failed {
		r.c.Errorf("Exiting with failure status due to previous errors")
		return 2
	}
	return 0
}

// verboseOut is where -v names go: stderr when the archive is stdout.
func (r *tarRun) verboseOut() io.Writer {
	if r.mode == 'c' && r.file == "-" {
		return r.c.Stderr
	}
	return r.c.Stdout
}

// excluded matches --exclude patterns as GNU tar does by default
// (unanchored, * matching /, a match of leading directories counting):
// against every run of whole components of name.
func (r *tarRun) excluded(name string) bool {
	name = strings.TrimSuffix(name, "/")
	for _, pat := range r.excludes {
		pat = strings.TrimSuffix(pat, "/")
		for s := name; ; {
			for p := s; ; {
				if tarGlob(pat, p) {
					return true
				}
				i := strings.LastIndexByte(p, '/')
				if i < 0 {
					break
				}
				p = p[:i]
			}
			i := strings.IndexByte(s, '/')
			if i < 0 {
				break
			}
			s = s[i+1:]
		}
	}
	return false
}

// tarGlob is fnmatch without FNM_PATHNAME: * and ? match any byte.
func tarGlob(pat, s string) bool {
	for len(pat) > 0 {
		switch pat[0] {
		case '*':
			for i := len(s); i >= 0; i-- {
				if tarGlob(pat[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
			pat, s = pat[1:], s[1:]
		case '[':
			end := strings.IndexByte(pat[1:], ']')
			if end < 0 || s == "" {
				return pat == s
			}
			if ok, _ := path.Match(pat[:end+2], s[:1]); !ok {
				return false
			}
			pat, s = pat[end+2:], s[1:]
		case '\\':
			if len(pat) > 1 {
				pat = pat[1:]
			}
			fallthrough
		default:
			if s == "" || s[0] != pat[0] {
				return false
			}
			pat, s = pat[1:], s[1:]
		}
	}
	return s == ""
}

func (r *tarRun) create(operands []string) int {
	if len(operands) == 0 {
		r.c.Errorf("Cowardly refusing to create an empty archive")
		fmt.Fprintf(r.c.Stderr, "Try '%s --help' or '%s --usage' for more information.\n", r.c.Name(), r.c.Name())
		return 2
	}
	var out io.Writer = r.c.Stdout
	if r.file != "-" {
		f, err := r.c.Create(r.file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		if err != nil {
			r.c.Errorf("%s: Cannot open: %s", r.file, shell.ErrText(err))
			r.c.Errorf("Error is not recoverable: exiting now")
			return 2
		}
		defer f.Close()
		out = f
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	var zw *gzip.Writer
	var dst io.Writer = bw
	if r.comp == compGzip {
		zw = gzip.NewWriter(bw)
		zw.OS = 3
		dst = zw
	}
	cw := &gzCountWriter{w: dst}
	tw := tar.NewWriter(cw)
	for _, op := range operands {
		if err := r.ctx.Err(); err != nil {
			return 130
		}
		name := op
		for strings.HasPrefix(name, "/") {
			if !r.removedSlash {
				r.c.Errorf("Removing leading `/' from member names")
				r.removedSlash = true
			}
			name = strings.TrimPrefix(name, "/")
		}
		r.add(tw, tarJoin(r.dir, op), name, true)
	}
	tw.Close()
	// GNU tar pads the archive to a whole record of 20 blocks.
	if pad := cw.n % 10240; pad != 0 {
		cw.Write(make([]byte, 10240-pad))
	}
	if zw != nil {
		zw.Close()
	}
	bw.Flush()
	return r.status()
}

// add writes the entry at abs (and, for a directory, everything under
// it in name order) as member name.
func (r *tarRun) add(tw *tar.Writer, abs, name string, top bool) {
	if r.excluded(name) {
		return
	}
	var fi fs.FileInfo
	var err error
	if r.deref {
		fi, err = r.c.FS.Stat(abs)
	} else {
		fi, err = r.c.FS.Lstat(abs)
	}
	if err != nil {
		r.errorf("%s: Cannot stat: %s", name, shell.ErrText(err))
		return
	}
	if abs == r.archivePath {
		r.c.Errorf("%s: file is the archive; not dumped", name)
		return
	}
	hdr := &tar.Header{Name: name, Mode: int64(tarModeBits(fi.Mode())), ModTime: fi.ModTime().Truncate(1e9), Format: tar.FormatGNU}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
	}
	if hdr.Uid == 0 {
		hdr.Uname = "root"
	}
	if hdr.Gid == 0 {
		hdr.Gname = "root"
	}
	switch {
	case fi.IsDir():
		hdr.Typeflag = tar.TypeDir
		if !strings.HasSuffix(hdr.Name, "/") {
			hdr.Name += "/"
		}
	case fi.Mode()&fs.ModeSymlink != 0:
		hdr.Typeflag = tar.TypeSymlink
		if hdr.Linkname, err = r.c.FS.Readlink(abs); err != nil {
			r.errorf("%s: Cannot readlink: %s", name, shell.ErrText(err))
			return
		}
	case fi.Mode().IsRegular():
		hdr.Typeflag = tar.TypeReg
		hdr.Size = fi.Size()
	case fi.Mode()&fs.ModeSocket != 0:
		r.c.Errorf("%s: socket ignored", name)
		return
	default:
		r.errorf("%s: special file not archived here", name)
		return
	}
	if r.verbose {
		fmt.Fprintln(r.verboseOut(), hdr.Name)
	}
	if err := tw.WriteHeader(hdr); err != nil {
		r.errorf("%s: %v", name, err)
		return
	}
	switch hdr.Typeflag {
	case tar.TypeReg:
		r.copyFile(tw, abs, name, hdr.Size)
	case tar.TypeDir:
		ents, err := r.c.FS.ReadDir(abs)
		if err != nil {
			r.errorf("%s: Cannot open: %s", name, shell.ErrText(err))
			return
		}
		for _, e := range ents {
			if r.ctx.Err() != nil {
				return
			}
			r.add(tw, abs+"/"+e.Name(), strings.TrimSuffix(hdr.Name, "/")+"/"+e.Name(), false)
		}
	}
}

func (r *tarRun) copyFile(tw *tar.Writer, abs, name string, size int64) {
	f, err := r.c.FS.OpenFile(abs, os.O_RDONLY, 0)
	if err != nil {
		r.errorf("%s: Cannot open: %s", name, shell.ErrText(err))
		tw.Write(make([]byte, size)) // keep the archive well formed
		return
	}
	defer f.Close()
	n, err := io.Copy(tw, io.LimitReader(gzipCtxReader{r.ctx, f}, size))
	if err != nil || n < size {
		r.errorf("%s: File shrank by %d bytes; padding with zeros", name, size-n)
		tw.Write(make([]byte, size-n))
	}
}

// tarModeBits converts to the mode stored in a header: permissions and
// setuid, setgid, sticky.
func tarModeBits(m fs.FileMode) int {
	bits := int(m.Perm())
	if m&fs.ModeSetuid != 0 {
		bits |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		bits |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		bits |= 0o1000
	}
	return bits
}
