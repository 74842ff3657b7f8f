package shell

import (
	"errors"
	"io/fs"
	"maps"
	"slices"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/syntax"
)

// This file keeps what a login shell's startup files left (variables,
// functions, shell options), per Shell, so that the next login exec of
// the sandbox starts from it instead of running them again, when nothing
// they started from or looked at has changed:
//   - the same Login (its Key names the image's files), working directory,
//     environment and $0;
//   - every lookup they made in the view (a stat of ~/.profile, a test of
//     ~/.local/bin), made again in the same order, finds the same file, by
//     everything stat says of it; a file's text comes from startupTexts,
//     keyed by that same identity, so the same identity is the same text.
// Startup files whose run did anything else (a command beyond the few
// that only set the shell's own state, output, a directory read, a file
// read whose text was not settled yet) are not kept.

// loginOutcome is what one run of the startup files left.
type loginOutcome struct {
	// What it started from.
	login     Login // Files compared by Key
	dir, arg0 string
	env       map[string]string
	obs       []fsObs
	vars      map[string]*variable // shared, read only
	frozen    *frozenVars
	funcs     map[string]*syntax.Stmt // read only
	funcSrc   map[*syntax.Stmt]string
	shopts    map[string]bool // read only
	status    int
	lastArg   string
	pipe      []int // $PIPESTATUS
	subst     int
	tainted   map[string]bool // read only
}

// fsObs is one lookup the startup files made in the view, and what it
// found.
type fsObs struct {
	lstat bool
	name  string
	fp    fileFP
}

// fileFP is what a lookup found: an errno, or what stat says.
type fileFP struct {
	errno        syscall.Errno
	dev, ino     uint64
	mode, nlink  uint64
	uid, gid     uint32
	size         int64
	mtime, ctime unix.Timespec
}

// loginRec records one run of the startup files. Safe for concurrent
// use (a pipeline's commands run in goroutines of their own).
type loginRec struct {
	mu  sync.Mutex
	obs []fsObs
	bad bool // something was done that the record cannot replay
}

func (rec *loginRec) spoil() {
	rec.mu.Lock()
	rec.bad = true
	rec.mu.Unlock()
}

// startupCmds are the commands whose whole effect is on the shell's own
// state (variables, functions, options), which the outcome keeps.
var startupCmds = map[string]bool{
	"[": true, "test": true, ".": true, "source": true, "export": true, "unset": true, "return": true,
	":": true, "true": true, "false": true, "local": true, "declare": true, "typeset": true,
	"readonly": true, "shopt": true, "id": true,
}

func fingerprint(fi fs.FileInfo, err error) (fileFP, bool) {
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			return fileFP{}, false
		}
		return fileFP{errno: errno}, true
	}
	st, ok := fi.Sys().(*unix.Stat_t)
	if !ok {
		return fileFP{}, false
	}
	return fileFP{dev: st.Dev, ino: st.Ino, mode: uint64(st.Mode), nlink: st.Nlink, uid: st.Uid, gid: st.Gid,
		size: st.Size, mtime: st.Mtim, ctime: st.Ctim}, true
}

// observe records a lookup of the startup files in the view.
func (t *trackFS) observe(lstat bool, name string, fi fs.FileInfo, err error) {
	rec := t.rec
	if rec == nil || !t.sh.startup {
		return
	}
	fp, ok := fingerprint(fi, err)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !ok {
		rec.bad = true
		return
	}
	ob := fsObs{lstat: lstat, name: name, fp: fp}
	if slices.Contains(rec.obs, ob) {
		return // the same lookup again (~/.profile: found, then read)
	}
	rec.obs = append(rec.obs, ob)
}

// unrecorded marks the run as one the record cannot replay (a read of a
// file or directory, not only a lookup).
func (t *trackFS) unrecorded() {
	if t.rec != nil && t.sh.startup {
		t.rec.spoil()
	}
}

// sameStart reports whether o started from what r starts from now.
func (o *loginOutcome) sameStart(r *runner, l *Login, env map[string]string) bool {
	a, b := &o.login, l
	return a.Key != "" && a.Key == b.Key && a.Home == b.Home && a.HomeView == b.HomeView && a.Path == b.Path &&
		a.UID == b.UID && a.GID == b.GID && o.dir == r.dir && o.arg0 == r.arg0 && maps.Equal(o.env, env)
}

// replay starts r from o when every lookup o made finds the same thing
// again, in order (a lookup that now refuses the exec refuses it as the
// run would have: it would have made it too). It reports whether r
// starts from o.
func (o *loginOutcome) replay(r *runner) bool {
	t := r.sh.track
	for _, ob := range o.obs {
		var fi fs.FileInfo
		var err error
		if ob.lstat {
			fi, err = t.Lstat(ob.name)
		} else {
			fi, err = t.Stat(ob.name)
		}
		if r.ctx.Err() != nil {
			return false
		}
		if fp, ok := fingerprint(fi, err); !ok || fp != ob.fp {
			return false
		}
	}
	r.scopes[0].release()
	o.frozen.refs.Add(1)
	r.scopes[0] = &scope{vars: o.vars, frozen: o.frozen}
	r.funcs, r.shopts = o.funcs, o.shopts
	r.sharedMaps |= shareFuncs | shareShopts
	for body, name := range o.funcSrc {
		r.sh.funcSrc.Store(body, name)
	}
	r.status, r.lastArg, r.substStatus = o.status, o.lastArg, o.subst
	r.pipestatus = slices.Clone(o.pipe)
	r.sh.mu.Lock()
	maps.Copy(r.sh.tainted, o.tainted)
	r.sh.mu.Unlock()
	return true
}

// loginOpts are the set -o options, to tell whether the startup files
// changed one (shopt -o can), which the outcome does not keep.
type loginOpts struct {
	errexit, nounset, xtrace, pipefail, noglob, noclobber, allexport, verbose, noexec, hashall bool
	umask                                                                                      int
}

func (r *runner) loginOpts() loginOpts {
	return loginOpts{r.errexit, r.nounset, r.xtrace, r.pipefail, r.noglob, r.noclobber, r.allexport, r.verbose,
		r.noexec, r.hashall, r.umask}
}

// keepOutcome keeps what the startup files left in r for the Shell's next
// login exec, when rec could replay it and they left the options as
// before (opts).
func (r *runner) keepOutcome(l *Login, env map[string]string, rec *loginRec, output int64, opts loginOpts) {
	rec.mu.Lock()
	bad := rec.bad
	rec.mu.Unlock()
	r.sh.mu.Lock()
	refused := r.sh.unsupported != nil
	r.sh.mu.Unlock()
	if bad || refused || l.Key == "" || r.exiting || len(r.scopes) != 1 || len(r.traps) != 0 || len(r.alias) != 0 ||
		r.sh.output.Load() != output || len(r.params) != 0 || r.loginOpts() != opts || len(r.dirstack) != 0 {
		return
	}
	first := r.scopes[0]
	first.share()
	first.frozen.refs.Add(1) // the outcome's share, never given back
	o := &loginOutcome{login: *l, dir: r.dir, arg0: r.arg0, env: maps.Clone(env), obs: rec.obs,
		vars: first.vars, frozen: first.frozen, funcs: r.funcs, shopts: r.shopts,
		funcSrc: make(map[*syntax.Stmt]string, len(r.funcs)), status: r.status, lastArg: r.lastArg,
		pipe: slices.Clone(r.pipestatus), subst: r.substStatus}
	r.sharedMaps |= shareFuncs | shareShopts
	for _, body := range r.funcs {
		if name, ok := r.sh.funcSrc.Load(body); ok {
			o.funcSrc[body], _ = name.(string)
		}
	}
	r.sh.mu.Lock()
	o.tainted = maps.Clone(r.sh.tainted)
	r.sh.mu.Unlock()
	o.login.Files = nil // compared by Key
	r.sh.sh.login.Store(o)
}
