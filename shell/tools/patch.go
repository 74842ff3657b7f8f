package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"rung.dev/rung/shell"
)

// patch applies unified diffs as GNU patch 2.7 does with no terminal:
// every question gets its default answer, printed after the question.

var patchOpts = NewOptions(
	"p,strip=", "i,input=", "R,reverse", "N,forward", "dry-run", "o,output=",
	"s,silent,quiet", "f,force", "t,batch", "b,backup", "F,fuzz=", "E,remove-empty-files",
	"d,directory=", "r,reject-file=", "l,ignore-whitespace", "u,unified", "no-backup-if-mismatch",
	"backup-if-mismatch", "z,suffix=", "B,prefix=", "V,version-control=", "posix", "verbose",
	"binary", "merge=?", "c,context", "e,ed", "n,normal", "Z,set-utc", "T,set-time", "g,get=",
	"x,debug=", "D,ifdef=", "Y,basename-prefix=", "reject-format=", "read-only=", "quoting-style=",
	"follow-symlinks", "help", "v,version",
)

func patchUnsupported(o Opt) string {
	switch o.Key {
	case "strip", "input", "reverse", "forward", "dry-run", "output", "quiet", "force",
		"backup", "fuzz", "remove-empty-files", "directory", "reject-file", "unified",
		"no-backup-if-mismatch", "backup-if-mismatch", "z", "suffix", "binary":
		return ""
	}
	return "option " + o.Name
}

func checkPatch(args []string) error {
	opts, _, err := patchOpts.Parse(args)
	if err != nil {
		return fmt.Errorf("patch: %w: %w", err, shell.ErrUnsupported)
	}
	for _, o := range opts {
		if why := patchUnsupported(o); why != "" {
			return fmt.Errorf("patch: %s: %w", why, shell.ErrUnsupported)
		}
	}
	return nil
}

func addPatch(m map[string]shell.Tool) {
	m["patch"] = shell.Tool{Run: runPatch, Check: checkPatch}
}

// patcher is one patch invocation.
type patcher struct {
	c           *shell.Call
	out         *bufio.Writer
	strip       int // -1: basename only
	reverse     bool
	forward     bool
	dryRun      bool
	output      string
	silent      bool
	force       bool
	backup      bool
	mismatchBak bool
	fuzz        int
	removeEmpty bool
	rejectFile  string
	suffix      string
	dir         string
	status      int
}

func runPatch(ctx context.Context, c *shell.Call) int {
	opts, operands, err := patchOpts.Parse(c.Args[1:])
	if err != nil {
		c.Errorf("%s", err)
		fmt.Fprintf(c.Stderr, "patch: Try 'patch --help' for more information.\n")
		return 2
	}
	p := &patcher{c: c, strip: -1, fuzz: 2, mismatchBak: true, suffix: ".orig", dir: c.Dir}
	input := ""
	for _, o := range opts {
		if why := patchUnsupported(o); why != "" {
			return c.Fail(why)
		}
	}
	for _, o := range opts {
		switch o.Key {
		case "strip":
			n, err := strconv.Atoi(o.Value)
			if err != nil || n < 0 {
				c.Errorf("**** strip count %s is not a number", o.Value)
				return 2
			}
			p.strip = n
		case "input":
			input = o.Value
		case "reverse":
			p.reverse = true
		case "forward":
			p.forward = true
		case "dry-run":
			p.dryRun = true
		case "output":
			p.output = o.Value
		case "quiet":
			p.silent = true
		case "force":
			p.force = true
		case "backup":
			p.backup = true
		case "no-backup-if-mismatch":
			p.mismatchBak = false
		case "backup-if-mismatch":
			p.mismatchBak = true
		case "fuzz":
			n, err := strconv.Atoi(o.Value)
			if err != nil || n < 0 {
				c.Errorf("**** fuzz factor %s is not a number", o.Value)
				return 2
			}
			p.fuzz = n
		case "remove-empty-files":
			p.removeEmpty = true
		case "reject-file":
			p.rejectFile = o.Value
		case "suffix", "z":
			p.suffix = o.Value
		case "directory":
			p.dir = c.Abs(o.Value)
		}
	}
	target := ""
	switch len(operands) {
	case 0:
	case 1:
		target = operands[0]
	case 2:
		target, input = operands[0], operands[1]
	default:
		c.Errorf("**** extra operand '%s'", operands[2])
		return 2
	}
	var r io.Reader = c.Stdin
	if input != "" && input != "-" {
		// -d applies before the patch file is opened, as in GNU patch.
		f, err := c.Open(p.abs(input))
		if err != nil {
			c.Errorf("**** Can't open patch file %s : %s", input, shell.ErrText(err))
			return 2
		}
		defer f.Close()
		r = f
	}
	files, other, err := patchParse(r)
	if err != nil {
		c.Errorf("**** read error : %s", shell.ErrText(err))
		return 2
	}
	if len(files) == 0 {
		if other {
			return c.Fail("context-format diffs")
		}
		c.Errorf("**** Only garbage was found in the patch input.")
		return 2
	}
	p.out = bufio.NewWriter(c.Stdout)
	defer p.out.Flush()
	for _, pf := range files {
		if ctx.Err() != nil {
			return 130
		}
		p.applyFile(pf, target)
	}
	return p.status
}

func (p *patcher) say(format string, args ...any) {
	if !p.silent {
		fmt.Fprintf(p.out, format, args...)
	}
}

func (p *patcher) abs(name string) string {
	if strings.HasPrefix(name, "/") {
		return name
	}
	return strings.TrimSuffix(p.dir, "/") + "/" + name
}

// stripName removes -p components, or all directories without -p.
func (p *patcher) stripName(name string) string {
	if p.strip < 0 {
		return path.Base(name)
	}
	s := name
	for i := 0; i < p.strip; i++ {
		j := strings.IndexByte(s, '/')
		if j < 0 {
			return ""
		}
		s = strings.TrimLeft(s[j+1:], "/")
	}
	return s
}

func (p *patcher) exists(name string) bool {
	if name == "" {
		return false
	}
	_, err := p.c.FS.Stat(p.abs(name))
	return err == nil
}

// chooseName picks the file to patch the way GNU does: an existing name
// with the fewest components, then the shortest base name, then the
// shortest name; the old name wins ties.
func (p *patcher) chooseName(pf *patchFile) string {
	var cands []string
	if !pf.oldIsNull || pf.oldName != "/dev/null" {
		if pf.oldName != "/dev/null" {
			cands = append(cands, p.stripName(pf.oldName))
		}
	}
	if pf.newName != "/dev/null" {
		cands = append(cands, p.stripName(pf.newName))
	}
	best := ""
	better := func(a, b string) bool {
		ca, cb := strings.Count(a, "/"), strings.Count(b, "/")
		if ca != cb {
			return ca < cb
		}
		if la, lb := len(path.Base(a)), len(path.Base(b)); la != lb {
			return la < lb
		}
		return len(a) < len(b)
	}
	for _, cnd := range cands {
		if cnd != "" && p.exists(cnd) && (best == "" || better(cnd, best)) {
			best = cnd
		}
	}
	if best != "" {
		return best
	}
	if pf.oldIsNull && pf.newName != "/dev/null" {
		return p.stripName(pf.newName)
	}
	for _, cnd := range cands {
		if cnd != "" && (best == "" || better(cnd, best)) {
			best = cnd
		}
	}
	return best
}

func patchPlural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func (p *patcher) applyFile(pf *patchFile, target string) {
	name := target
	if name == "" {
		name = p.chooseName(pf)
	}
	creating := pf.oldIsNull
	deleting := pf.newIsNull
	hunks := pf.hunks
	if p.reverse {
		creating, deleting = deleting, creating
		rev := make([]*patchHunk, len(hunks))
		for i, h := range hunks {
			rev[i] = h.swap()
		}
		hunks = rev
	}
	n := len(hunks)
	exists := p.exists(name)
	if !exists && !creating {
		p.cantFind(pf, n)
		return
	}
	var orig []byte
	if exists {
		f, err := p.c.FS.OpenFile(p.abs(name), os.O_RDONLY, 0)
		if err == nil {
			orig, err = p.c.ReadAll(f)
			f.Close()
		}
		if err != nil {
			p.c.Errorf("**** Can't open file %s : %s", name, shell.ErrText(err))
			p.status = 2
			return
		}
	}
	if creating && exists && len(orig) > 0 && !p.force {
		p.say("The next patch would create the file %s,\nwhich already exists!  ", name)
		p.skipAll(name, pf, hunks, n, "Assume -R? [n] \nApply anyway? [n] \nSkipping patch.\n", false)
		return
	}
	verb := "patching"
	if p.dryRun {
		verb = "checking"
	}
	if p.output != "" {
		p.say("%s file %s (read from %s)\n", verb, p.output, name)
	} else {
		p.say("%s file %s\n", verb, name)
	}
	lines, noEOL := splitPatchLines(orig)
	app := &patchApply{p: p, file: lines, noEOL: noEOL}
	var failed []*patchHunk
	mismatch := false
	for i, h := range hunks {
		fuzz, where := 0, 0
		maxFuzz := min(p.fuzz, max(h.prefix, h.suffix))
		for {
			where = app.locate(h, fuzz)
			if where == 0 || fuzz > 0 || app.inOffset != 0 {
				mismatch = true
			}
			if i == 0 && where == 0 && !p.force && fuzz == 0 {
				if sw := h.swap(); app.locate(sw, 0) != 0 {
					if p.reversedDetected(name, pf, hunks, n) {
						return
					}
				}
			}
			if where != 0 || fuzz >= maxFuzz {
				break
			}
			fuzz++
		}
		if where == 0 {
			p.say("Hunk #%d FAILED at %d.\n", i+1, h.first()+app.inOffset)
			failed = append(failed, pf.hunks[i])
			continue
		}
		app.apply(h, where, fuzz)
		if fuzz > 0 || app.inOffset != 0 {
			p.say("Hunk #%d succeeded at %d", i+1, h.newFirst()+app.inOffset)
			if fuzz > 0 {
				p.say(" with fuzz %d", fuzz)
			}
			if app.inOffset != 0 {
				p.say(" (offset %d %s)", app.inOffset, patchPlural(patchAbsInt(app.inOffset), "line"))
			}
			p.say(".\n")
		}
	}
	result := app.finish()
	if len(failed) > 0 {
		p.status = max(p.status, 1)
		if p.dryRun {
			p.say("%d out of %d %s FAILED\n", len(failed), n, patchPlural(n, "hunk"))
		} else {
			rej := p.rejName(name)
			p.say("%d out of %d %s FAILED -- saving rejects to file %s\n", len(failed), n, patchPlural(n, "hunk"), rej)
			p.writeRej(rej, name, pf, failed)
		}
	}
	if p.dryRun {
		return
	}
	if p.backup || mismatch && p.mismatchBak && exists {
		p.writeFile(name+p.suffix, orig, 0o644)
	}
	out := name
	if p.output != "" {
		out = p.output
	}
	if (deleting || p.removeEmpty) && len(result) == 0 && p.output == "" {
		p.c.FS.Remove(p.abs(name))
		p.removeEmptyParents(name)
		return
	}
	mode := fs.FileMode(0o644)
	if fi, err := p.c.FS.Stat(p.abs(name)); err == nil {
		mode = fi.Mode().Perm()
	}
	if p.output != "" {
		mode = 0o600 // GNU writes -o output through a private temporary file
	}
	p.writeFile(out, result, mode)
}

// reversedHunkText renders h as it reads reversed (-R rejects): "-" and
// "+" swap, and in each change the new deletions come first.
func reversedHunkText(h *patchHunk) []string {
	rng := func(start, n int) string {
		if n == 1 {
			return strconv.Itoa(start)
		}
		return strconv.Itoa(start) + "," + strconv.Itoa(n)
	}
	out := []string{fmt.Sprintf("@@ -%s +%s @@\n", rng(h.newStart, len(h.new)), rng(h.oldStart, len(h.old)))}
	var minus, plus []string
	flush := func() {
		out = append(out, minus...)
		out = append(out, plus...)
		minus, plus = nil, nil
	}
	for _, l := range h.text[1:] {
		switch {
		case strings.HasPrefix(l, "+"):
			minus = append(minus, "-"+l[1:])
		case strings.HasPrefix(l, "-"):
			plus = append(plus, "+"+l[1:])
		case strings.HasPrefix(l, "\\"):
			if len(plus) > 0 {
				plus = append(plus, l)
			} else if len(minus) > 0 {
				minus = append(minus, l)
			} else {
				out = append(out, l)
			}
		default:
			flush()
			out = append(out, l)
		}
	}
	flush()
	return out
}

func patchAbsInt(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func (h *patchHunk) first() int {
	if len(h.old) == 0 {
		return h.oldStart + 1
	}
	return h.oldStart
}

func (h *patchHunk) newFirst() int {
	if len(h.new) == 0 {
		return h.newStart + 1
	}
	return h.newStart
}

// reversedDetected handles a first hunk that applies only reversed; it
// reports whether the file is skipped.
func (p *patcher) reversedDetected(name string, pf *patchFile, hunks []*patchHunk, n int) bool {
	what := "Reversed (or previously applied)"
	q := "Assume -R? [n] "
	if p.reverse {
		what, q = "Unreversed", "Ignore -R? [n] "
	}
	switch {
	case p.forward:
		p.say("%s patch detected!  Skipping patch.\n", what)
	default:
		p.say("%s patch detected!  %s\nApply anyway? [n] \nSkipping patch.\n", what, q)
	}
	rej := p.rejName(name)
	if p.dryRun {
		p.say("%d out of %d %s ignored\n", n, n, patchPlural(n, "hunk"))
	} else {
		p.say("%d out of %d %s ignored -- saving rejects to file %s\n", n, n, patchPlural(n, "hunk"), rej)
		p.writeRej(rej, name, pf, pf.hunks)
	}
	p.status = max(p.status, 1)
	return true
}

func (p *patcher) skipAll(name string, pf *patchFile, hunks []*patchHunk, n int, msg string, rej bool) {
	p.say("%s", msg)
	p.say("%d out of %d %s ignored\n", n, n, patchPlural(n, "hunk"))
	p.status = max(p.status, 1)
}

func (p *patcher) cantFind(pf *patchFile, n int) {
	if p.strip < 0 {
		p.say("can't find file to patch at input line %d\nPerhaps you should have used the -p or --strip option?\n", pf.startLine+2)
	} else {
		p.say("can't find file to patch at input line %d\nPerhaps you used the wrong -p or --strip option?\n", pf.startLine+2)
	}
	p.say("The text leading up to this was:\n--------------------------\n")
	for _, l := range pf.header {
		p.say("|%s", l)
	}
	p.say("|--- %s%s\n|+++ %s%s\n", pf.oldName, pf.oldStamp, pf.newName, pf.newStamp)
	p.say("--------------------------\nFile to patch: \nSkip this patch? [y] \nSkipping patch.\n")
	p.say("%d out of %d %s ignored\n", n, n, patchPlural(n, "hunk"))
	p.status = max(p.status, 1)
}

func (p *patcher) rejName(name string) string {
	if p.rejectFile != "" {
		return p.rejectFile
	}
	if p.output != "" {
		return p.output + ".rej"
	}
	return name + ".rej"
}

func (p *patcher) writeRej(rej, name string, pf *patchFile, hunks []*patchHunk) {
	if rej == "-" {
		return
	}
	var b bytes.Buffer
	oldStamp, newStamp := pf.oldStamp, pf.newStamp
	if p.reverse {
		oldStamp, newStamp = newStamp, oldStamp
	}
	fmt.Fprintf(&b, "--- %s%s\n+++ %s%s\n", name, oldStamp, name, newStamp)
	for _, h := range hunks {
		text := h.text
		if p.reverse {
			text = reversedHunkText(h)
		}
		for _, l := range text {
			b.WriteString(l)
			if !strings.HasSuffix(l, "\n") {
				b.WriteByte('\n')
			}
		}
	}
	p.writeFile(rej, b.Bytes(), 0o644)
}

func (p *patcher) writeFile(name string, data []byte, mode fs.FileMode) {
	full := p.abs(name)
	if i := strings.LastIndexByte(full, '/'); i > 0 {
		p.mkdirAll(full[:i])
	}
	f, err := p.c.FS.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		p.out.Flush()
		p.c.Errorf("**** Can't create file %s : %s", name, shell.ErrText(err))
		p.status = 2
		return
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		p.c.Errorf("**** write error on %s : %s", name, shell.ErrText(err))
		p.status = 2
	}
}

// removeEmptyParents removes the directories above a deleted file that
// it left empty, up to the working directory, as GNU patch does.
func (p *patcher) removeEmptyParents(name string) {
	dir := path.Dir(p.abs(name))
	top := strings.TrimSuffix(p.dir, "/")
	for dir != top && strings.HasPrefix(dir, top+"/") {
		if err := p.c.FS.Remove(dir); err != nil {
			return
		}
		dir = path.Dir(dir)
	}
}

func (p *patcher) mkdirAll(dir string) {
	if _, err := p.c.FS.Stat(dir); err == nil || dir == "" || dir == "/" {
		return
	}
	if i := strings.LastIndexByte(dir, '/'); i > 0 {
		p.mkdirAll(dir[:i])
	}
	if err := p.c.FS.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		p.status = 2
	}
}

func splitPatchLines(b []byte) ([]string, bool) {
	if len(b) == 0 {
		return nil, false
	}
	noEOL := b[len(b)-1] != '\n'
	s := string(b)
	if !noEOL {
		s = s[:len(s)-1]
	}
	return strings.Split(s, "\n"), noEOL
}
