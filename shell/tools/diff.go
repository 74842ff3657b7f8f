package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"rung.dev/rung/shell"
)

var diffOpts = NewOptions(
	"i,ignore-case", "w,ignore-all-space", "b,ignore-space-change", "B,ignore-blank-lines",
	"Z,ignore-trailing-space", "E,ignore-tab-expansion", "a,text", "q,brief",
	"s,report-identical-files", "r,recursive", "N,new-file", "unidirectional-new-file",
	"u", "U=", "unified=?", "c", "C=", "context=?", "normal", "label=", "x,exclude=",
	"X,exclude-from=", "y,side-by-side", "e,ed", "n,rcs", "p,show-c-function",
	"F,show-function-line=", "t,expand-tabs", "T,initial-tab", "l,paginate", "d,minimal",
	"H,speed-large-files", "strip-trailing-cr", "color=?", "no-dereference", "horizon-lines=",
	"from-file=", "to-file=", "S,starting-file=", "tabsize=", "suppress-common-lines",
	"W,width=", "D,ifdef=", "help", "v,version", "ignore-file-name-case",
	"no-ignore-file-name-case", "suppress-blank-empty", "line-format=",
	"old-line-format=", "new-line-format=", "unchanged-line-format=",
	"old-group-format=", "new-group-format=", "changed-group-format=", "unchanged-group-format=",
	"I,ignore-matching-lines=", "f,forward-ed",
)

func diffUnsupported(o Opt) string {
	switch o.Key {
	case "i", "ignore-case", "ignore-all-space", "ignore-space-change", "ignore-blank-lines",
		"ignore-trailing-space", "text", "brief", "report-identical-files", "recursive",
		"new-file", "u", "U", "unified", "c", "C", "context", "normal", "label", "exclude",
		"minimal", "horizon-lines", "tabsize", "no-ignore-file-name-case":
		return ""
	case "color":
		if !o.HasArg || o.Value == "never" || o.Value == "auto" {
			return ""
		}
	}
	return "option " + o.Name
}

func checkDiff(args []string) error {
	opts, _, err := diffOpts.Parse(args)
	if err != nil {
		return fmt.Errorf("diff: %w: %w", err, shell.ErrUnsupported)
	}
	for _, o := range opts {
		if why := diffUnsupported(o); why != "" {
			return fmt.Errorf("diff: %s: %w", why, shell.ErrUnsupported)
		}
	}
	return nil
}

func addDiff(m map[string]shell.Tool) {
	m["diff"] = shell.Tool{Run: runDiffTool, Check: checkDiff}
	m["cmp"] = shell.Tool{Run: runCmp, Check: cmpOpts.Check}
}

// differ is one diff invocation.
type differ struct {
	c                       *shell.Call
	ctx                     context.Context
	out                     *bufio.Writer
	format                  byte // 'n' normal, 'u' unified, 'c' context
	context                 int
	icase, allSpace, change bool
	trailing, blank         bool
	text, brief, same       bool
	recursive, newFile      bool
	minimal                 bool
	horizon                 int // --horizon-lines
	labels                  []string
	excludes                []string
	switches                string
	status                  int
	loc                     *time.Location
}

func diffUsage(c *shell.Call, msg string) int {
	fmt.Fprintf(c.Stderr, "diff: %s\ndiff: Try 'diff --help' for more information.\n", msg)
	return 2
}

func runDiffTool(ctx context.Context, c *shell.Call) int {
	opts, operands, err := diffOpts.Parse(c.Args[1:])
	if err != nil {
		return diffUsage(c, err.Error())
	}
	d := &differ{c: c, ctx: ctx, format: 'n', context: 3, loc: time.UTC}
	if tz, ok := c.LookupEnv("TZ"); ok && tz != "" {
		if loc, err := time.LoadLocation(tz); err == nil {
			d.loc = loc
		}
	}
	var sw []string
	for _, o := range opts {
		if why := diffUnsupported(o); why != "" {
			return c.Fail(why)
		}
	}
	for _, o := range opts {
		if o.HasArg && !strings.HasPrefix(o.Name, "--") {
			sw = append(sw, o.Name+" "+o.Value)
		} else if o.HasArg {
			sw = append(sw, o.Name+"="+o.Value)
		} else {
			sw = append(sw, o.Name)
		}
		if st := d.apply(o); st >= 0 {
			return st
		}
	}
	d.switches = diffSwitchString(c.Args[1:], len(operands))
	_ = sw
	switch {
	case len(operands) == 0:
		return diffUsage(c, "missing operand after 'diff'")
	case len(operands) == 1:
		return diffUsage(c, fmt.Sprintf("missing operand after '%s'", operands[0]))
	case len(operands) > 2:
		return diffUsage(c, fmt.Sprintf("extra operand '%s'", operands[2]))
	}
	d.out = bufio.NewWriterSize(c.Stdout, 64<<10)
	d.top(operands[0], operands[1])
	d.out.Flush()
	if ctx.Err() != nil {
		return 130
	}
	return d.status
}

// diffSwitchString is what GNU prints after "diff" in -r headers: the
// option words of the command line, in order.
func diffSwitchString(args []string, nOperands int) string {
	var opts []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		opts = append(opts, a)
		// Options taking a separate argument word.
		if len(a) == 2 && strings.IndexByte("UCxXFSWDI", a[1]) >= 0 && i+1 < len(args) {
			i++
			opts = append(opts, args[i])
		}
		if a == "--label" && i+1 < len(args) {
			i++
			opts = append(opts, args[i])
		}
	}
	for i, o := range opts {
		opts[i] = diffShellQuote(o)
	}
	return strings.Join(opts, " ")
}

// diffShellQuote quotes a word as GNU diff does in -r headers.
func diffShellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_,.=/+:@%-", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

func (d *differ) apply(o Opt) int {
	switch o.Key {
	case "i", "ignore-case":
		d.icase = true
	case "ignore-all-space":
		d.allSpace = true
	case "ignore-space-change":
		d.change = true
	case "ignore-trailing-space":
		d.trailing = true
	case "ignore-blank-lines":
		d.blank = true
	case "text":
		d.text = true
	case "brief":
		d.brief = true
	case "report-identical-files":
		d.same = true
	case "recursive":
		d.recursive = true
	case "new-file":
		d.newFile = true
	case "minimal":
		d.minimal = true
	case "normal":
		d.format = 'n'
	case "u", "c":
		d.format = o.Key[0]
	case "U", "C", "unified", "context":
		d.format = 'u'
		if o.Key == "C" || o.Key == "context" {
			d.format = 'c'
		}
		if o.HasArg {
			n := 0
			if _, err := fmt.Sscanf(o.Value, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != o.Value {
				return diffUsage(d.c, fmt.Sprintf("invalid context length '%s'", o.Value))
			}
			d.context = n
		}
	case "horizon-lines":
		fmt.Sscanf(o.Value, "%d", &d.horizon)
	case "label":
		d.labels = append(d.labels, o.Value)
	case "exclude":
		d.excludes = append(d.excludes, o.Value)
	}
	return -1
}

func (d *differ) trouble(name string, err error) {
	d.out.Flush()
	fmt.Fprintf(d.c.Stderr, "diff: %s: %s\n", name, shell.ErrText(err))
	d.status = 2
}

func (d *differ) setStatus(st int) {
	if st > d.status {
		d.status = st
	}
}

func (d *differ) stat(name string) (fs.FileInfo, error) {
	if name == "-" {
		return nil, nil
	}
	return d.c.Stat(name)
}

// top compares the two operands.
func (d *differ) top(a, b string) {
	fa, ea := d.stat(a)
	fb, eb := d.stat(b)
	aDir := ea == nil && fa != nil && fa.IsDir()
	bDir := eb == nil && fb != nil && fb.IsDir()
	switch {
	case aDir && !bDir && eb == nil:
		a = strings.TrimRight(a, "/") + "/" + diffBaseOf(b)
		fa, ea = d.stat(a)
	case bDir && !aDir && ea == nil:
		b = strings.TrimRight(b, "/") + "/" + diffBaseOf(a)
		fb, eb = d.stat(b)
	}
	if ea != nil && !(d.newFile && errors.Is(ea, fs.ErrNotExist) && eb == nil) {
		d.trouble(a, ea)
		return
	}
	if eb != nil && !(d.newFile && errors.Is(eb, fs.ErrNotExist) && ea == nil) {
		d.trouble(b, eb)
		return
	}
	if ea == nil && eb == nil && fa != nil && fb != nil && fa.IsDir() && fb.IsDir() {
		d.dirs(a, b, true, true)
		return
	}
	d.files(a, b, ea == nil, eb == nil, "")
}

func diffBaseOf(p string) string {
	p = strings.TrimRight(p, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// load reads one side.
func (d *differ) load(name string, exists bool) (*diffFile, []byte, error) {
	f := &diffFile{name: name, exists: exists, stamp: "1970-01-01 00:00:00.000000000 +0000"}
	if !exists {
		f.stamp = time.Unix(0, 0).In(d.loc).Format("2006-01-02 15:04:05.000000000 -0700")
		return f, nil, nil
	}
	r, err := d.c.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	if st, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok && name != "-" {
		if fi, err := st.Stat(); err == nil {
			f.stamp = fi.ModTime().In(d.loc).Format("2006-01-02 15:04:05.000000000 -0700")
		}
	} else {
		f.stamp = time.Now().In(d.loc).Format("2006-01-02 15:04:05.000000000 -0700")
	}
	data, err := d.c.ReadAll(r)
	if err != nil {
		return nil, nil, err
	}
	if len(data) > 0 {
		f.noEOL = data[len(data)-1] != '\n'
		body := data
		if !f.noEOL {
			body = data[:len(data)-1]
		}
		f.lines = bytes.Split(body, []byte{'\n'})
	}
	return f, data, nil
}

// files compares two files; header is the "diff -r ..." line for
// directory comparisons.
func (d *differ) files(a, b string, aExists, bExists bool, header string) {
	f0, data0, err := d.load(a, aExists)
	if err != nil {
		d.trouble(a, err)
		return
	}
	f1, data1, err := d.load(b, bExists)
	if err != nil {
		d.trouble(b, err)
		return
	}
	if len(d.labels) > 0 {
		f0.label = d.labels[0]
	}
	if len(d.labels) > 1 {
		f1.label = d.labels[1]
	}
	if bytes.Equal(data0, data1) {
		if d.same {
			fmt.Fprintf(d.out, "Files %s and %s are identical\n", a, b)
		}
		return
	}
	if !d.text && (bytes.IndexByte(data0, 0) >= 0 || bytes.IndexByte(data1, 0) >= 0) {
		if d.brief {
			fmt.Fprintf(d.out, "Files %s and %s differ\n", a, b)
		} else {
			fmt.Fprintf(d.out, "Binary files %s and %s differ\n", a, b)
		}
		d.setStatus(1)
		return
	}
	eq0, eq1, n := d.classes(f0, f1)
	horizon := d.horizon
	if d.format != 'n' {
		horizon = max(horizon, d.context)
	}
	ch0, ch1 := diffLines(d.ctx, eq0, eq1, n, d.minimal, horizon)
	changes := diffScript(ch0, ch1)
	if d.blank {
		changes = d.dropBlank(f0, f1, changes)
	}
	if len(changes) == 0 {
		if d.same {
			fmt.Fprintf(d.out, "Files %s and %s are identical\n", a, b)
		}
		return
	}
	d.setStatus(1)
	if d.brief {
		fmt.Fprintf(d.out, "Files %s and %s differ\n", a, b)
		return
	}
	if header != "" {
		d.out.WriteString(header)
	}
	w := &diffWriter{w: d.out, f0: f0, f1: f1, context: d.context}
	switch d.format {
	case 'u':
		w.unified(changes)
	case 'c':
		w.contextFmt(changes)
	default:
		w.normal(changes)
	}
}

// classes maps lines to equivalence classes under -i -w -b -Z.
func (d *differ) classes(f0, f1 *diffFile) ([]int, []int, int) {
	ids := map[string]int{}
	conv := func(f *diffFile) []int {
		out := make([]int, len(f.lines))
		for i, l := range f.lines {
			key := d.key(l)
			if f.noEOL && i == len(f.lines)-1 {
				key += "\x00noeol"
			}
			id, ok := ids[key]
			if !ok {
				id = len(ids) + 1
				ids[key] = id
			}
			out[i] = id
		}
		return out
	}
	e0 := conv(f0)
	e1 := conv(f1)
	return e0, e1, len(ids)
}

func isDiffSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\v' || b == '\f' || b == '\r' }

func (d *differ) key(l []byte) string {
	if d.icase {
		l = bytes.ToLower(l)
	}
	switch {
	case d.allSpace:
		var b []byte
		for _, c := range l {
			if !isDiffSpace(c) {
				b = append(b, c)
			}
		}
		return string(b)
	case d.change:
		var b []byte
		space := false
		for _, c := range l {
			if isDiffSpace(c) {
				space = true
				continue
			}
			if space && len(b) > 0 {
				b = append(b, ' ')
			}
			space = false
			b = append(b, c)
		}
		return string(b)
	case d.trailing:
		return string(bytes.TrimRight(l, " \t\v\f\r"))
	}
	return string(l)
}

// dropBlank removes changes that only add or remove blank lines (-B).
func (d *differ) dropBlank(f0, f1 *diffFile, changes []diffChange) []diffChange {
	blank := func(f *diffFile, from, n int) bool {
		for i := from; i < from+n; i++ {
			if len(bytes.TrimRight(f.lines[i], "")) != 0 {
				return false
			}
		}
		return true
	}
	out := changes[:0]
	for _, c := range changes {
		if blank(f0, c.l0, c.del) && blank(f1, c.l1, c.ins) {
			continue
		}
		out = append(out, c)
	}
	return out
}
