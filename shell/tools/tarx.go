package tools

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"rung.dev/rung/shell"
)

// read lists or extracts an archive (the compression of a named archive
// is detected by its magic, as GNU tar does).
func (r *tarRun) read(members []string) int {
	var in io.Reader = r.c.Stdin
	if r.file != "-" {
		f, err := r.c.Open(r.file)
		if err != nil {
			r.c.Errorf("%s: Cannot open: %s", r.file, shell.ErrText(err))
			r.c.Errorf("Error is not recoverable: exiting now")
			return 2
		}
		defer f.Close()
		in = f
	}
	if r.mode == 'x' && !r.toStdout {
		if fi, err := r.c.FS.Stat(r.dir); err != nil || !fi.IsDir() {
			msg := "Not a directory"
			if err != nil {
				msg = shell.ErrText(err)
			}
			r.c.Errorf("%s: Cannot open: %s", strings.TrimPrefix(r.dir, r.c.Dir+"/"), msg)
			r.c.Errorf("Error is not recoverable: exiting now")
			return 2
		}
	}
	br := bufio.NewReaderSize(gzipCtxReader{r.ctx, in}, 64<<10)
	in, status, ok := r.decompressor(br, r.comp)
	if !ok {
		return status
	}
	tr := tar.NewReader(in)
	found := make([]bool, len(members))
	var dirs []dirTime
	n := 0
	for {
		hdr, err := tr.Next()
		if err == io.EOF && in != io.Reader(br) {
			// GNU tar's decompressor reads to the end of its stream
			// and fails on a damaged end: read it too.
			if _, derr := io.Copy(io.Discard, in); derr != nil {
				err = derr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			if isCompErr(err) {
				// GNU tar reports the program's own words, not reproduced here
				return r.c.Fail("a damaged " + r.comp + " archive")
			}
			if n == 0 {
				r.c.Errorf("This does not look like a tar archive")
			} else {
				r.c.Errorf("Unexpected EOF in archive")
				r.c.Errorf("Error is not recoverable: exiting now")
				return 2
			}
			r.c.Errorf("Exiting with failure status due to previous errors")
			return 2
		}
		n++
		if !r.wanted(hdr.Name, members, found) || r.excluded(hdr.Name) {
			continue
		}
		if r.mode == 't' {
			r.list(hdr)
			continue
		}
		if d, ok := r.extract(tr, hdr); ok {
			dirs = append(dirs, d)
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		r.c.FS.Chtimes(dirs[i].path, time.Now(), dirs[i].mtime)
	}
	for i, m := range members {
		if !found[i] {
			r.errorf("%s: Not found in archive", m)
		}
	}
	return r.status()
}

type dirTime struct {
	path  string
	mtime time.Time
}

// wanted reports whether name is selected by the member operands: equal
// to one, or inside one that is a directory.
func (r *tarRun) wanted(name string, members []string, found []bool) bool {
	if len(members) == 0 {
		return true
	}
	clean := strings.TrimSuffix(name, "/")
	for i, m := range members {
		m = strings.TrimSuffix(m, "/")
		if clean == m || strings.HasPrefix(clean, m+"/") {
			found[i] = true
			return true
		}
	}
	return false
}

func (r *tarRun) list(hdr *tar.Header) {
	w := r.c.Stdout
	if !r.verbose {
		fmt.Fprintln(w, hdr.Name)
		return
	}
	user, group := hdr.Uname, hdr.Gname
	if user == "" {
		user = fmt.Sprint(hdr.Uid)
	}
	if group == "" {
		group = fmt.Sprint(hdr.Gid)
	}
	size := fmt.Sprint(hdr.Size)
	if hdr.Typeflag == tar.TypeChar || hdr.Typeflag == tar.TypeBlock {
		size = fmt.Sprintf("%d,%d", hdr.Devmajor, hdr.Devminor)
	}
	if hdr.Typeflag == tar.TypeSymlink || hdr.Typeflag == tar.TypeLink || hdr.Typeflag == tar.TypeDir {
		size = "0"
	}
	// GNU tar widens the user/group/size column as it goes, from 19.
	if pad := len(user) + 1 + len(group) + len(size); pad > r.ugsWidth() {
		r.ugs = pad
	}
	width := r.ugsWidth() - len(user) - 1 - len(group)
	line := fmt.Sprintf("%s %s/%s%*s %s %s", tarModeString(hdr), user, group, width, size,
		hdr.ModTime.In(tarLocation(r.c)).Format("2006-01-02 15:04"), hdr.Name)
	switch hdr.Typeflag {
	case tar.TypeSymlink:
		line += " -> " + hdr.Linkname
	case tar.TypeLink:
		line += " link to " + hdr.Linkname
	}
	fmt.Fprintln(w, line)
}

func (r *tarRun) ugsWidth() int {
	if r.ugs == 0 {
		r.ugs = 19
	}
	return r.ugs
}

// tarLocation is the time zone named by TZ in the call's environment.
func tarLocation(c *shell.Call) *time.Location {
	tz, ok := c.LookupEnv("TZ")
	if !ok || tz == "" {
		return time.UTC
	}
	if loc, err := time.LoadLocation(strings.TrimPrefix(tz, ":")); err == nil {
		return loc
	}
	return time.UTC
}

func tarModeString(hdr *tar.Header) string {
	t := byte('-')
	switch hdr.Typeflag {
	case tar.TypeDir:
		t = 'd'
	case tar.TypeSymlink:
		t = 'l'
	case tar.TypeLink:
		t = 'h'
	case tar.TypeChar:
		t = 'c'
	case tar.TypeBlock:
		t = 'b'
	case tar.TypeFifo:
		t = 'p'
	}
	m := hdr.Mode
	b := []byte{t}
	for i, c := range "rwxrwxrwx" {
		if m&(1<<(8-i)) != 0 {
			b = append(b, byte(c))
		} else {
			b = append(b, '-')
		}
	}
	special := func(bit int64, pos int, lower, upper byte) {
		if m&bit != 0 {
			if b[pos] == 'x' {
				b[pos] = lower
			} else {
				b[pos] = upper
			}
		}
	}
	special(0o4000, 3, 's', 'S')
	special(0o2000, 6, 's', 'S')
	special(0o1000, 9, 't', 'T')
	return string(b)
}

// safeName applies --strip-components and refuses names that would
// leave the destination.
func (r *tarRun) safeName(name string) (string, bool) {
	for strings.HasPrefix(name, "/") {
		if !r.removedSlash {
			r.c.Errorf("Removing leading `/' from member names")
			r.removedSlash = true
		}
		name = strings.TrimPrefix(name, "/")
	}
	parts := strings.Split(strings.TrimSuffix(name, "/"), "/")
	if r.strip > 0 {
		if len(parts) <= r.strip {
			return "", false
		}
		parts = parts[r.strip:]
	}
	for _, p := range parts {
		if p == ".." {
			r.errorf("%s: Member name contains '..'", name)
			return "", false
		}
	}
	out := strings.Join(parts, "/")
	if out == "" || out == "." {
		return "", false
	}
	return out, true
}

// extract writes one member; for a directory it returns its mtime to
// set once its contents are in place.
func (r *tarRun) extract(tr *tar.Reader, hdr *tar.Header) (dirTime, bool) {
	name, ok := r.safeName(hdr.Name)
	if !ok {
		return dirTime{}, false
	}
	if r.toStdout {
		if hdr.Typeflag == tar.TypeReg || hdr.Typeflag == tar.TypeRegA {
			if r.verbose {
				fmt.Fprintln(r.c.Stdout, hdr.Name)
			}
			io.Copy(r.c.Stdout, tr)
		}
		return dirTime{}, false
	}
	if r.verbose {
		fmt.Fprintln(r.c.Stdout, hdr.Name)
	}
	abs := r.dir + "/" + name
	r.mkParents(name)
	fsys := r.c.FS
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := fsys.Mkdir(abs, fs.FileMode(hdr.Mode).Perm()); err != nil && !errors.Is(err, fs.ErrExist) {
			r.errorf("%s: Cannot mkdir: %s", name, shell.ErrText(err))
			return dirTime{}, false
		}
		fsys.Chmod(abs, tarFileMode(hdr.Mode))
		if r.touch {
			return dirTime{}, false
		}
		return dirTime{abs, hdr.ModTime}, true
	case tar.TypeReg, tar.TypeRegA:
		if !r.replace(abs, name) {
			return dirTime{}, false
		}
		f, err := fsys.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fs.FileMode(hdr.Mode).Perm())
		if err != nil {
			r.errorf("%s: Cannot open: %s", name, shell.ErrText(err))
			return dirTime{}, false
		}
		_, err = io.Copy(f, tr)
		f.Close()
		if err != nil && !isCompErr(err) { // the next header reports those
			r.errorf("%s: %v", name, err)
		}
		fsys.Chmod(abs, tarFileMode(hdr.Mode))
	case tar.TypeSymlink:
		if !r.replace(abs, name) {
			return dirTime{}, false
		}
		if err := fsys.Symlink(hdr.Linkname, abs); err != nil {
			r.errorf("%s: Cannot create symlink to '%s': %s", name, hdr.Linkname, shell.ErrText(err))
		}
		return dirTime{}, false
	case tar.TypeLink:
		target, ok := r.safeName(hdr.Linkname)
		if !ok || !r.replace(abs, name) {
			return dirTime{}, false
		}
		if err := fsys.Link(r.dir+"/"+target, abs); err != nil {
			r.errorf("%s: Cannot hard link to '%s': %s", name, target, shell.ErrText(err))
		}
		return dirTime{}, false
	default:
		// devices and FIFOs cannot be made in a sandbox's workspace
		r.errorf("%s: Cannot mknod: Operation not permitted", name)
		return dirTime{}, false
	}
	if !r.touch {
		fsys.Chtimes(abs, time.Now(), hdr.ModTime)
	}
	return dirTime{}, false
}

// replace removes an existing non-directory at abs (GNU tar's default
// --overwrite behaviour for extraction), or refuses with -k.
func (r *tarRun) replace(abs, name string) bool {
	fi, err := r.c.FS.Lstat(abs)
	if err != nil {
		return true
	}
	if r.keepOld {
		r.errorf("%s: Cannot open: File exists", name)
		return false
	}
	if fi.IsDir() {
		if err := r.c.FS.Remove(abs); err != nil {
			r.errorf("%s: Cannot open: %s", name, "Is a directory")
			return false
		}
		return true
	}
	r.c.FS.Remove(abs)
	return true
}

// mkParents creates missing parent directories of name under r.dir.
func (r *tarRun) mkParents(name string) {
	parts := strings.Split(name, "/")
	p := r.dir
	for _, part := range parts[:len(parts)-1] {
		p += "/" + part
		if err := r.c.FS.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return
		}
	}
}

func tarFileMode(mode int64) fs.FileMode {
	m := fs.FileMode(mode).Perm()
	if mode&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if mode&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}
