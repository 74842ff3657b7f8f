package shell

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/syntax"
	"rung.dev/rung/storage"
)

// This file is the login shell (bash -l -c, what E2B's SDK runs every
// command as): before the command, bash reads /etc/profile, then the
// first of ~/.bash_profile, ~/.bash_login and ~/.profile; on the exit
// builtin it reads ~/.bash_logout and /etc/bash.bash_logout. The tier
// runs those files itself, through the same interpreter and a check of
// their text made as the run reaches each (see [Login]), and then checks
// the command again against what they left: the PATH they set decides
// where the command's names are found. What the tier cannot follow in
// them refuses the exec before it has any effect, and the container runs
// it with a real login shell.

// Login makes an exec a login shell's. The files of the container's root
// file system that the startup files read come with it, since the file
// view holds only /workspace and /tmp.
type Login struct {
	// Files are /etc/profile, the directory /etc/profile.d and its
	// entries, and /etc/bash.bash_logout, as the container sees them; a
	// path not listed does not exist there. Every file must be readable
	// by others: the tier's test -r answers true.
	Files []SystemFile
	// Home is the user's home directory (HOME in the container, E2B's
	// /home/user) and HomeView the view directory it is a symbolic link
	// to (/workspace): the startup files under it are read there. With
	// HomeView "", the home is not in the view and the exec is refused.
	Home, HomeView string
	// Path is PATH as the container's shell starts with it (the image's).
	Path string
	// UID and GID answer id -u and id -g (/etc/profile asks).
	UID, GID uint32
	// Key names Files: two Logins with the same Key have the same files
	// (the image's digest, when the container changed none of them). A
	// Shell keeps what its startup files left for the next login exec
	// with the same Key (and the same home files); "" keeps nothing.
	Key string
}

// SystemFile is a file or directory of the container's root file system
// outside the view, with what stat(2) says of it.
type SystemFile struct {
	Path     string      // absolute and clean
	Mode     fs.FileMode // type and permission bits
	UID, GID uint32
	ModTime  time.Time
	Data     []byte // a regular file's content
}

// loginFiles is a Login as an exec's file view serves it.
type loginFiles struct {
	*Login
	byPath map[string]*SystemFile
	dirs   map[string][]*SystemFile // a directory's entries, by name
}

func newLoginFiles(l *Login) *loginFiles {
	lf := &loginFiles{Login: l, byPath: make(map[string]*SystemFile, len(l.Files)), dirs: map[string][]*SystemFile{}}
	for i := range l.Files {
		f := &l.Files[i]
		lf.byPath[f.Path] = f
		if f.Mode.IsDir() {
			lf.dirs[f.Path] = lf.dirs[f.Path][:0:0]
		}
	}
	for i := range l.Files {
		f := &l.Files[i]
		if d := path.Dir(f.Path); lf.byPath[d] != nil {
			lf.dirs[d] = append(lf.dirs[d], f)
		}
	}
	for _, ents := range lf.dirs {
		slices.SortFunc(ents, func(a, b *SystemFile) int { return strings.Compare(a.Path, b.Path) })
	}
	return lf
}

// home maps a path under the home (through the symbolic link, not the
// link itself) to its view path.
func (lf *loginFiles) home(name string) (string, bool) {
	if lf == nil || lf.HomeView == "" {
		return "", false
	}
	rest, ok := strings.CutPrefix(name, lf.Home)
	if !ok || !strings.HasPrefix(rest, "/") || strings.Trim(rest, "/") == "" {
		return "", false
	}
	return lf.HomeView + rest, true
}

// file answers for a system file a login shell's startup files read:
// known is true when the login knows what name is (f, or nil when it
// does not exist): /etc/profile, /etc/bash.bash_logout, /etc/profile.d
// and any name in it (the login lists all its entries).
func (lf *loginFiles) file(name string) (f *SystemFile, known bool) {
	if lf == nil || !strings.HasPrefix(name, "/etc/") {
		return nil, false
	}
	p := path.Clean(name)
	if f, ok := lf.byPath[p]; ok {
		if strings.HasSuffix(name, "/") && !f.Mode.IsDir() {
			return nil, false // ENOTDIR: left to the container
		}
		return f, true
	}
	switch {
	case p == "/etc/profile", p == "/etc/profile.d", p == "/etc/bash.bash_logout", path.Dir(p) == "/etc/profile.d":
		return nil, true
	}
	return nil, false
}

// info is a system file's fs.FileInfo, with the *unix.Stat_t the view's
// contract promises in Sys.
func (f *SystemFile) info() fs.FileInfo {
	st := &unix.Stat_t{Uid: f.UID, Gid: f.GID, Size: int64(len(f.Data)), Nlink: 1,
		Mtim: unix.NsecToTimespec(f.ModTime.UnixNano())}
	st.Mode = uint32(f.Mode.Perm())
	if f.Mode.IsDir() {
		st.Mode |= unix.S_IFDIR
		st.Nlink = 2
	} else {
		st.Mode |= unix.S_IFREG
	}
	return sysInfo{f: f, st: st}
}

type sysInfo struct {
	f  *SystemFile
	st *unix.Stat_t
}

func (i sysInfo) Name() string               { return path.Base(i.f.Path) }
func (i sysInfo) Size() int64                { return i.st.Size }
func (i sysInfo) Mode() fs.FileMode          { return i.f.Mode }
func (i sysInfo) ModTime() time.Time         { return i.f.ModTime }
func (i sysInfo) IsDir() bool                { return i.f.Mode.IsDir() }
func (i sysInfo) Sys() any                   { return i.st }
func (i sysInfo) Type() fs.FileMode          { return i.f.Mode.Type() }
func (i sysInfo) Info() (fs.FileInfo, error) { return i, nil }

// sysFile is an open system file: read only.
type sysFile struct {
	*bytes.Reader
	f    *SystemFile
	name string
	ents []*SystemFile // a directory's entries not read yet
	read bool
}

func (lf *loginFiles) open(f *SystemFile, name string) *sysFile {
	return &sysFile{Reader: bytes.NewReader(f.Data), f: f, name: name, ents: lf.dirs[f.Path]}
}

func (s *sysFile) Name() string               { return s.name }
func (s *sysFile) Stat() (fs.FileInfo, error) { return s.f.info(), nil }
func (s *sysFile) Close() error               { return nil }
func (s *sysFile) Sync() error                { return nil }
func (s *sysFile) Write([]byte) (int, error) {
	return 0, &fs.PathError{Op: "write", Path: s.name, Err: syscall.EBADF}
}
func (s *sysFile) Truncate(int64) error {
	return &fs.PathError{Op: "truncate", Path: s.name, Err: syscall.EINVAL}
}

func (s *sysFile) Read(p []byte) (int, error) {
	if s.f.Mode.IsDir() {
		return 0, &fs.PathError{Op: "read", Path: s.name, Err: syscall.EISDIR}
	}
	return s.Reader.Read(p)
}

func (s *sysFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if !s.f.Mode.IsDir() {
		return nil, &fs.PathError{Op: "readdirent", Path: s.name, Err: syscall.ENOTDIR}
	}
	take := len(s.ents)
	if n > 0 && n < take {
		take = n
	}
	out := make([]fs.DirEntry, 0, take)
	for _, e := range s.ents[:take] {
		out = append(out, e.info().(sysInfo))
	}
	s.ents = s.ents[take:]
	if n > 0 && len(out) == 0 {
		return nil, io.EOF
	}
	return out, nil
}

var _ storage.File = (*sysFile)(nil)

// loginExec runs a login shell's startup files, then p: the command
// checked again with the PATH they left; or, without p (backend isolate
// asked for: not checked), script.
func (r *runner) loginExec(p *Program, script string, env map[string]string) {
	lf := r.sh.track.login
	if lf.HomeView == "" {
		r.sh.setUnsupported(fmt.Errorf("a login shell whose home %s is outside /workspace and /tmp: %w", lf.Home, ErrUnsupported))
		return
	}
	if o := r.sh.sh.login.Load(); o != nil && o.sameStart(r, lf.Login, env) && o.replay(r) {
		// Started from what the same startup files left last time.
	} else if r.ctx.Err() == nil {
		growStack(len(lf.Files))
		r.shoptsW()["login_shell"] = true
		for _, kv := range [...][2]string{{"HOME", lf.Home}, {"PATH", lf.Path}} {
			name := kv[0]
			if err := r.setVar(name, kv[1]); err != nil {
				r.sh.setUnsupported(fmt.Errorf("login shell: %s: %v: %w", name, err, ErrUnsupported))
				return
			}
			r.ensureVar(name).exported = true
		}
		rec, output, opts := &loginRec{}, r.sh.output.Load(), r.loginOpts()
		r.sh.track.rec = rec
		r.sh.startup = true
		r.startupFile("/etc/profile")
		for _, f := range []string{".bash_profile", ".bash_login", ".profile"} {
			if r.ctx.Err() != nil || r.startupFile(lf.Home+"/"+f) {
				break
			}
		}
		r.sh.startup = false
		r.sh.track.rec = nil
		if r.ctx.Err() == nil {
			r.keepOutcome(lf.Login, env, rec, output, opts)
		}
	}
	if r.ctx.Err() != nil || r.exiting {
		if r.exiting {
			r.sh.setUnsupported(fmt.Errorf("a startup file exited: %w", ErrUnsupported))
		}
		return
	}
	if p == nil {
		r.sh.mu.Lock()
		r.markTainted()
		r.sh.mu.Unlock()
		r.script(script)
		return
	}
	// The command again, against the PATH the startup files left, and the
	// functions they defined whose bodies the tier cannot run.
	pathVal := ""
	if v := r.lookupVar("PATH"); v != nil {
		pathVal, _ = v.scalar()
	}
	lp := r.loginLookPath(p.lookPath, pathVal)
	r.sh.mu.Lock()
	refuse := maps.Clone(r.sh.tainted)
	r.sh.mu.Unlock()
	c := &checker{sh: r.sh.sh, lookPath: lp, dir: r.dir, logicalDir: logicalDir(p.env, r.dir),
		login: true, refuseFuncs: refuse, funcs: make(map[string]bool, len(r.funcs))}
	for fn := range r.funcs {
		if !refuse[fn] {
			c.funcs[fn] = true // defined: type and calls find them
		}
	}
	c.logout = r.logoutFiles // asked only of a command with exit
	c.file(p.file)
	if c.err != nil {
		r.sh.setUnsupported(fmt.Errorf("after the login shell's startup files: %w", c.err))
		return
	}
	// Script files the command reads are checked with the same PATH.
	r.sh.program = &Program{src: p.src, file: p.file, lookPath: lp, env: p.env}
	// The bodies of the functions the startup files defined and the
	// check could not admit refuse the exec when called.
	r.sh.mu.Lock()
	r.markTainted()
	r.sh.mu.Unlock()
	r.program(p)
}

// markTainted records the bodies of the tainted functions the startup
// files left; r.sh.mu is held.
func (r *runner) markTainted() {
	for name := range r.sh.tainted {
		if body, ok := r.funcs[name]; ok {
			r.sh.taintedBodies[body] = name
		}
	}
}

// startupFile runs one startup file, as bash's login shell does: a file
// that does not exist is skipped (false); anything else it cannot read
// as bash would refuses the exec.
func (r *runner) startupFile(name string) bool {
	fi, err := r.sh.sh.cfg.FS.Stat(name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			r.sh.setUnsupported(fmt.Errorf("startup file %s: %v: %w", name, err, ErrUnsupported))
		}
		return false
	}
	if !fi.Mode().IsRegular() || !r.loginReadable(fi) {
		// bash reports what it cannot read; the tier runs only a file
		// the user may read (others may, or the user owns it).
		r.sh.setUnsupported(fmt.Errorf("startup file %s is not a regular file the user may read: %w", name, ErrUnsupported))
		return true
	}
	biSource(r, []string{".", name})
	return true
}

// loginReadable reports whether the login's user may read fi: others
// may, or the user owns it and may.
func (r *runner) loginReadable(fi fs.FileInfo) bool {
	perm := fi.Mode().Perm()
	if perm&0o004 != 0 {
		return true
	}
	st, ok := fi.Sys().(*unix.Stat_t)
	return ok && st.Uid == r.sh.track.login.UID && perm&0o400 != 0
}

// logoutFiles reports whether a logout file exists (then exit runs it).
func (r *runner) logoutFiles() bool {
	lf := r.sh.track.login
	if _, ok := lf.byPath["/etc/bash.bash_logout"]; ok {
		return true
	}
	_, err := r.sh.sh.cfg.FS.Lstat(lf.Home + "/.bash_logout")
	return !errors.Is(err, fs.ErrNotExist)
}

// loginLookPath is the check's LookPath for a PATH the startup files set:
// a name is found in the first directory of pathVal holding it, in the
// view (the home's directories, /workspace and /tmp) or in the image
// (through image, the check's own LookPath for a path). Anything in a
// view directory, executable or not, counts as found: a program there is
// the container's to run. A relative directory finds everything.
func (r *runner) loginLookPath(image func(string) string, pathVal string) func(string) string {
	lf := r.sh.track.login
	view := r.sh.track.FS
	found := map[string]string{}
	return func(name string) string {
		if strings.Contains(name, "/") {
			if image == nil {
				return name
			}
			return image(name)
		}
		if p, ok := found[name]; ok {
			return p
		}
		p := ""
		for dir := range strings.SplitSeq(pathVal, ":") {
			if !path.IsAbs(dir) {
				p = path.Join(dir, name) // the working directory's: not the tier's
				break
			}
			full := path.Join(dir, name)
			vp := full
			if m, ok := lf.home(full); ok {
				vp = m
			}
			if inside(vp) {
				if _, err := view.Lstat(vp); err == nil || !errors.Is(err, fs.ErrNotExist) {
					p = full
					break
				}
				continue
			}
			if image == nil {
				if full == toolPath(name) {
					p = full
					break
				}
				continue
			}
			if image(full) != "" {
				p = full
				break
			}
		}
		if len(found) < 1024 {
			found[name] = p
		}
		return p
	}
}

// loginID answers id -u and id -g in a startup file.
func (r *runner) loginID(args []string) int {
	lf := r.sh.track.login
	switch {
	case len(args) == 2 && args[1] == "-u":
		r.write(1, strconv.FormatUint(uint64(lf.UID), 10)+"\n")
	case len(args) == 2 && args[1] == "-g":
		r.write(1, strconv.FormatUint(uint64(lf.GID), 10)+"\n")
	default:
		r.sh.setUnsupported(fmt.Errorf("command %s: %w", strings.Join(args, " "), ErrUnsupported))
		return 127
	}
	return 0
}

// startupFunc checks a function a startup file defines: one whose body
// the check does not admit is tainted (calling it refuses the exec), not
// a reason to refuse the file.
func (c *checker) startupFunc(fd *syntax.FuncDecl) {
	sub := *c
	sub.err = nil
	sub.stack = slices.Clone(c.stack)
	sub.stack = append(sub.stack, fd)
	switch fd.Body.Cmd.(type) {
	case *syntax.Block, *syntax.Subshell, *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause,
		*syntax.CaseClause, *syntax.TestClause, *syntax.ArithmCmd:
		sub.walk(fd.Body)
	default:
		sub.fail("function body that is not a compound command")
	}
	// false: defined again with a body the check admits.
	c.tainted[fd.Name.Value] = sub.err != nil
}

// startupBuiltins are the builtins, beyond pure readers, a startup file
// may run: they change the shell, not files.
var startupBuiltins = map[string]bool{
	".": true, "source": true, "export": true, "unset": true, "local": true, "declare": true,
	"typeset": true, "readonly": true, "umask": true, "shopt": true, "set": true, "return": true,
}

// startupCommand admits a command of a startup file beyond what any
// script may run (id -u, id -g), or refuses what a startup file may not
// do here; done reports that the command needs no more checking.
func (c *checker) startupCommand(args []string) (done bool) {
	switch name := args[0]; {
	case name == "id":
		if len(args) != 2 || args[1] != "-u" && args[1] != "-g" {
			c.fail("id in a startup file, but for id -u and id -g")
		}
		return true
	case name == "cd" || name == "pushd" || name == "popd":
		c.fail("%s in a startup file", name)
		return true
	case name == "exit" || name == "logout" || name == "exec":
		c.fail("%s in a startup file", name)
		return true
	case name == Unknown:
		return false
	case !pureReader(args) && !startupBuiltins[name]:
		c.fail("%s in a startup file (it may change files)", name)
		return true
	}
	return false
}

// startupVars are the variables the check lets a startup file read: the
// tier gives them the container's values (HOME and PATH from the Login;
// $-, $BASH and an unset PS1 as bash -c has them).
var startupVars = map[string]bool{"HOME": true, "PATH": true, "-": true, "BASH": true, "PS1": true}

// taintedFunc refuses the exec at a call of a startup file's function
// the check did not admit.
func (r *runner) taintedFunc(name string, body *syntax.Stmt) bool {
	r.sh.mu.Lock()
	_, bad := r.sh.taintedBodies[body]
	if r.sh.startup {
		bad = r.sh.tainted[name]
	}
	r.sh.mu.Unlock()
	if bad {
		r.sh.setUnsupported(fmt.Errorf("function %s of a startup file: %w", name, ErrUnsupported))
	}
	return bad
}

// startupEval runs a startup file's text as source does, checking each
// complete command just before it runs: a startup file has had no effect
// when one is refused, and the commands after a return (~/.bashrc's, in a
// shell that is not interactive) are never checked, as they never run.
func (r *runner) startupEval(src, name string) int {
	f, err := parseStartup(src)
	if err != nil {
		r.sh.setUnsupported(fmt.Errorf("startup file %s: %v: %w", name, err, ErrUnsupported))
		return ExitUnsupported
	}
	line, savedSrc := r.lineno, r.src
	r.src = src
	defer func() { r.lineno, r.src = line, savedSrc }()
	for _, st := range f.Stmts {
		if r.returning || r.exiting || r.breakN > 0 || r.contN > 0 || r.ctx.Err() != nil {
			break
		}
		pathVal := ""
		if v := r.lookupVar("PATH"); v != nil {
			pathVal, _ = v.scalar()
		}
		tainted, err := r.checkStartup(st, pathVal)
		if err != nil {
			r.sh.setUnsupported(fmt.Errorf("%s: %w", name, err))
			return ExitUnsupported
		}
		r.sh.mu.Lock()
		for fn, bad := range tainted {
			if bad {
				r.sh.tainted[fn] = true
			} else {
				delete(r.sh.tainted, fn)
			}
		}
		r.sh.mu.Unlock()
		r.stmt(st)
	}
	return r.status
}

// startupTrees caches parsed startup files by their text: every sandbox
// of an image reads the same /etc/profile and profile.d scripts, and its
// home's from /etc/skel, before each command. A tree is only read.
var startupTrees struct {
	sync.Mutex
	m map[string]*syntax.File
}

// maxStartupTrees bounds the cache, and maxStartupTree the text it keeps.
const (
	maxStartupTrees = 256
	maxStartupTree  = 64 << 10
)

func parseStartup(src string) (*syntax.File, error) {
	startupTrees.Lock()
	f, ok := startupTrees.m[src]
	startupTrees.Unlock()
	if ok {
		return f, nil
	}
	f, err := parseScript(src)
	if err != nil || len(src) > maxStartupTree {
		return f, err
	}
	startupTrees.Lock()
	if startupTrees.m == nil || len(startupTrees.m) >= maxStartupTrees {
		startupTrees.m = map[string]*syntax.File{}
	}
	startupTrees.m[src] = f
	startupTrees.Unlock()
	return f, nil
}

// checkStartup checks one command of a startup file with the PATH it
// runs under, returning the functions it defines and whether each is
// tainted. A result that consulted neither the PATH lookup nor the
// functions defined so far depends on the command's text and PATH alone,
// and is kept (startupChecks): the startup files run before every
// command of a login shell.
func (r *runner) checkStartup(st *syntax.Stmt, pathVal string) (map[string]bool, error) {
	key := startupKey{st, pathVal}
	startupChecks.Lock()
	res, ok := startupChecks.m[key]
	startupChecks.Unlock()
	if ok {
		return res.tainted, res.err
	}
	var image func(string) string
	if p := r.sh.program; p != nil {
		image = p.lookPath
	}
	probe := &checkProbe{}
	lp := r.loginLookPath(image, pathVal)
	c := &checker{sh: r.sh.sh, dir: r.dir, startup: true, tainted: map[string]bool{}, probe: probe,
		funcs: make(map[string]bool, len(r.funcs)),
		lookPath: func(name string) string {
			probe.lookPath = true
			return lp(name)
		}}
	for fn := range r.funcs {
		c.funcs[fn] = true
	}
	c.file(&syntax.File{Stmts: []*syntax.Stmt{st}})
	if !probe.lookPath && !probe.funcHit {
		startupChecks.Lock()
		if startupChecks.m == nil || len(startupChecks.m) >= maxStartupChecks {
			startupChecks.m = map[startupKey]startupCheck{}
		}
		startupChecks.m[key] = startupCheck{c.tainted, c.err}
		startupChecks.Unlock()
	}
	return c.tainted, c.err
}

// startupChecks caches checkStartup's results for the trees startupTrees
// keeps (a tree's commands are only read, so their pointers name them).
var startupChecks struct {
	sync.Mutex
	m map[startupKey]startupCheck
}

const maxStartupChecks = 4096

type startupKey struct {
	st   *syntax.Stmt
	path string
}

type startupCheck struct {
	tainted map[string]bool // read only
	err     error
}

// growStack grows the calling goroutine's stack at once to what running
// startup files takes, rather than by doublings (each a copy of the
// stack) as the interpreter's recursion deepens: an exec's goroutine is
// new, so every login exec paid them.
//
//go:noinline
func growStack(n int) byte {
	var b [32 << 10]byte
	b[n&(len(b)-1)] = byte(n)
	return b[(n*7)&(len(b)-1)]
}

// readStartup reads a file a startup file sources, or a startup file:
// the system files from the login, a file of the view from
// startupTexts when the file is the one read before, unchanged.
func (r *runner) readStartup(name string) ([]byte, error) {
	t := r.sh.track
	if _, ok := t.login.file(name); ok || name == "" || name[0] != '/' {
		return r.readFile(name)
	}
	fi, err := t.Stat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return r.readFile(name)
	}
	st, ok := fi.Sys().(*unix.Stat_t)
	if !ok || fi.Size() > maxStartupTree {
		return r.readFile(name)
	}
	key := textKey{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
	startupTexts.Lock()
	b, hit := startupTexts.m[key]
	startupTexts.Unlock()
	if hit {
		return b, nil
	}
	b, err = r.readFile(name)
	// Kept only when its change time is settled: a write after now gets
	// a later one even from the kernel's coarse clock (a tick, 4 ms at
	// HZ=250, behind real time), so the key changes with the file.
	if err != nil || int64(len(b)) != st.Size || !settled(st.Ctim, time.Now()) {
		return b, err
	}
	startupTexts.Lock()
	if startupTexts.m == nil || len(startupTexts.m) >= maxStartupTexts {
		startupTexts.m = map[textKey][]byte{}
	}
	startupTexts.m[key] = b
	startupTexts.Unlock()
	return b, nil
}

// startupTexts caches the home's startup files (~/.profile, ~/.bashrc)
// by what stat says of them: a login exec reads them before every
// command, and the read (open, reopen, read, close) costs more than
// running them.
var startupTexts struct {
	sync.Mutex
	m map[textKey][]byte // read only
}

const maxStartupTexts = 1024

// settledAfter is how old a file's change time must be for its text to be
// kept (a variable for tests).
var settledAfter = 50 * time.Millisecond

// settled reports whether a change time is old enough, at now, that any
// later write gets another.
func settled(ctime unix.Timespec, now time.Time) bool {
	return now.Sub(time.Unix(ctime.Unix())) >= settledAfter
}

// textKey is a file's identity and change times: a write, in place or
// by rename, changes one.
type textKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime unix.Timespec
}
