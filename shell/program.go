package shell

import "fmt"

// program runs a checked program's statements, one line's statements at
// a time as script does for a source it parses itself. A checked program
// parsed whole, so the line-at-a-time rules for what a line defines
// (aliases, extglob) have nothing to do: the check admits neither.
func (r *runner) program(p *Program) {
	stmts := p.file.Stmts
	for i := 0; i < len(stmts); {
		j := i + 1
		for j < len(stmts) && stmts[j].Pos().Line() == stmts[j-1].End().Line() {
			j++
		}
		if r.exiting || r.ctx.Err() != nil {
			return
		}
		r.stmts(stmts[i:j])
		if r.breakN > 0 || r.contN > 0 {
			r.breakN, r.contN = 0, 0
		}
		i = j
	}
}

// verifyScript checks the text of a script file (or bash -c string) an
// exec of a checked program is about to run, as the check read it: the
// file may have changed since. It reports whether to go on; when not,
// the exec has met something it cannot run (Result.Unsupported) and the
// caller returns status.
func (r *runner) verifyScript(src, name string) (ok bool, status int) {
	p := r.sh.program
	if p == nil || r.sh.startup {
		// A startup file is checked a command at a time as it runs
		// (startupEval).
		return true, 0
	}
	c := &checker{sh: r.sh.sh, lookPath: p.lookPath, dir: r.dir, logicalDir: logicalDir(p.env, r.dir)}
	f, err := parseScript(src)
	if err == nil {
		c.file(f)
		err = c.err
	}
	if err == nil {
		return true, 0
	}
	r.sh.setUnsupported(fmt.Errorf("%s: %v: %w", name, err, ErrUnsupported))
	r.errorf("%s: not supported in the isolate tier", name)
	return false, ExitUnsupported
}
