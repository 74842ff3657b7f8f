package tools

import (
	"bufio"
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

var sedOpts = NewOptions(
	"n,silent,quiet", "e,expression=", "f,file=", "E,r,regexp-extended",
	"i,in-place=?", "l,line-length=", "s,separate", "z,null-data",
	"u,unbuffered", "posix", "debug", "sandbox", "follow-symlinks",
	"b,binary", "help", "version",
)

func sedUnsupportedOpt(o Opt) string {
	switch o.Key {
	case "posix", "debug", "follow-symlinks", "help", "version":
		return "option " + o.Name
	}
	return ""
}

func checkSed(args []string) error {
	opts, _, err := sedOpts.Parse(args)
	if err != nil {
		return fmt.Errorf("sed: %w: %w", err, shell.ErrUnsupported)
	}
	for _, o := range opts {
		if why := sedUnsupportedOpt(o); why != "" {
			return fmt.Errorf("sed: %s: %w", why, shell.ErrUnsupported)
		}
	}
	return nil
}

func addSed(m map[string]shell.Tool) {
	m["sed"] = shell.Tool{Run: runSed, Check: checkSed}
}

// sedUsage is GNU sed 4.9's usage text, written on a usage error.
const sedUsage = "Usage: sed [OPTION]... {script-only-if-no-other-script} [input-file]...\n" +
	"\n" +
	"  -n, --quiet, --silent\n" +
	"                 suppress automatic printing of pattern space\n" +
	"      --debug\n" +
	"                 annotate program execution\n" +
	"  -e script, --expression=script\n" +
	"                 add the script to the commands to be executed\n" +
	"  -f script-file, --file=script-file\n" +
	"                 add the contents of script-file to the commands to be executed\n" +
	"  --follow-symlinks\n" +
	"                 follow symlinks when processing in place\n" +
	"  -i[SUFFIX], --in-place[=SUFFIX]\n" +
	"                 edit files in place (makes backup if SUFFIX supplied)\n" +
	"  -l N, --line-length=N\n" +
	"                 specify the desired line-wrap length for the `l' command\n" +
	"  --posix\n" +
	"                 disable all GNU extensions.\n" +
	"  -E, -r, --regexp-extended\n" +
	"                 use extended regular expressions in the script\n" +
	"                 (for portability use POSIX -E).\n" +
	"  -s, --separate\n" +
	"                 consider files as separate rather than as a single,\n" +
	"                 continuous long stream.\n" +
	"      --sandbox\n" +
	"                 operate in sandbox mode (disable e/r/w commands).\n" +
	"  -u, --unbuffered\n" +
	"                 load minimal amounts of data from the input files and flush\n" +
	"                 the output buffers more often\n" +
	"  -z, --null-data\n" +
	"                 separate lines by NUL characters\n" +
	"      --help     display this help and exit\n" +
	"      --version  output version information and exit\n" +
	"\n" +
	"If no -e, --expression, -f, or --file option is given, then the first\n" +
	"non-option argument is taken as the sed script to interpret.  All\n" +
	"remaining arguments are names of input files; if no input files are\n" +
	"specified, then the standard input is read.\n" +
	"\n" +
	"GNU sed home page: <https://www.gnu.org/software/sed/>.\n" +
	"General help using GNU software: <https://www.gnu.org/gethelp/>.\n"

func runSed(ctx context.Context, c *shell.Call) int {
	opts, operands, err := sedOpts.Parse(c.Args[1:])
	if err != nil {
		c.Errorf("%s", err)
		fmt.Fprint(c.Stderr, sedUsage)
		return 1
	}
	var (
		scripts  []string
		fromFile bool // a script came from -f
		haveScr  bool
		quiet    bool
		ere      bool
		inPlace  bool
		suffix   string
		separate bool
		eol      byte = '\n'
		lineLen       = 70
		sandbox  bool
	)
	for _, o := range opts {
		if why := sedUnsupportedOpt(o); why != "" {
			return c.Fail(why)
		}
		switch o.Key {
		case "quiet":
			quiet = true
		case "expression":
			scripts = append(scripts, o.Value)
			haveScr = true
		case "file":
			r, err := c.Open(o.Value)
			if err != nil {
				c.Errorf("couldn't open file %s: %s", o.Value, shell.ErrText(err))
				return 4
			}
			b, err := c.ReadAll(r)
			r.Close()
			if err != nil {
				c.Errorf("read error on %s: %s", o.Value, shell.ErrText(err))
				return 4
			}
			scripts = append(scripts, strings.TrimSuffix(string(b), "\n"))
			haveScr, fromFile = true, true
		case "regexp-extended":
			ere = true
		case "in-place":
			inPlace, separate, suffix = true, true, o.Value
		case "line-length":
			n, err := strconv.Atoi(o.Value)
			if err != nil || n < 0 {
				c.Errorf("invalid line length: %s", o.Value)
				return 1
			}
			lineLen = n
		case "separate":
			separate = true
		case "null-data":
			eol = 0
		case "sandbox":
			sandbox = true
		}
	}
	if !haveScr {
		if len(operands) == 0 {
			fmt.Fprint(c.Stderr, sedUsage)
			return 1
		}
		scripts = []string{operands[0]}
		operands = operands[1:]
	}
	script := strings.Join(scripts, "\n")
	if strings.HasPrefix(script, "#n") && (len(script) == 2 || script[2] == '\n') {
		quiet = true
	}
	var starts []int // where each -e expression starts (not with -f)
	for i, off := 0, 0; i < len(scripts) && !fromFile; i++ {
		starts = append(starts, off)
		off += len(scripts[i]) + 1
	}
	cmds, err := parseSedExprs(script, starts, ere, sandbox)
	if err != nil {
		var un *sedUnsupported
		if errors.As(err, &un) {
			return c.Fail(un.what)
		}
		c.Errorf("%s", err)
		var se *sedError
		if errors.As(err, &se) {
			return se.status
		}
		return 1
	}
	for _, cmd := range cmds {
		if cmd.a1 != nil && cmd.a1.kind == sedAddrZero {
			cmd.inRange = true
		}
	}
	stdout := &sedOut{w: bufio.NewWriterSize(c.Stdout, 64<<10)}
	r := &sedRun{c: c, cmds: cmds, quiet: quiet, eol: eol, lineLen: lineLen, stdout: stdout, out: stdout,
		wfiles: map[string]*sedOut{}, rfiles: map[string]*bufio.Reader{}, hsNL: true}
	defer r.closeFiles()
	if st := r.openWFiles(); st != 0 {
		return st
	}
	if len(operands) == 0 {
		operands = []string{"-"}
	}
	var runErr error
	switch {
	case inPlace:
		for _, name := range operands {
			if r.quit || runErr != nil {
				break
			}
			runErr = r.editInPlace(ctx, name, suffix)
		}
	case separate:
		for _, name := range operands {
			if r.quit || runErr != nil {
				break
			}
			r.lineno = 0
			runErr = r.runStream(ctx, []string{name})
		}
	default:
		runErr = r.runStream(ctx, operands)
	}
	stdout.w.Flush()
	if runErr != nil {
		if errors.Is(runErr, errSedNoRE) {
			c.Errorf("-e expression #1, char 0: %s", runErr)
			return 1
		}
		if ctx.Err() != nil {
			return 130
		}
		if !errors.Is(runErr, errSedFatal) {
			c.Errorf("%s", runErr)
		}
		return 4
	}
	return r.status
}

func (r *sedRun) runStream(ctx context.Context, names []string) error {
	st := 0
	r.in = &sedStream{c: r.c, names: names, eol: r.eol, status: &st}
	r.in.fetch()
	err := r.cycle(ctx)
	r.in.close()
	if st > 0 && r.status == 0 {
		r.status = st
	}
	return err
}

func (r *sedRun) openWFiles() int {
	names := map[string]bool{}
	for _, cmd := range r.cmds {
		if cmd.name == 'w' || cmd.name == 'W' {
			names[cmd.text] = true
		}
		if cmd.name == 's' && cmd.wfile != "" {
			names[cmd.wfile] = true
		}
	}
	for name := range names {
		switch name {
		case "/dev/stdout":
			r.wfiles[name] = r.stdout
			continue
		}
		f, err := r.c.Create(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		if err != nil {
			r.c.Errorf("couldn't open file %s: %s", name, shell.ErrText(err))
			return 4
		}
		r.wfiles[name] = &sedOut{w: bufio.NewWriter(f), closer: f}
	}
	return 0
}

func (r *sedRun) closeFiles() {
	for _, o := range r.wfiles {
		if o.closer != nil {
			o.w.Flush()
			o.closer.Close()
			o.closer = nil
		}
	}
}

// editInPlace runs the script over one file and replaces it with the
// output (sed -i), keeping a backup when suffix is set.
func (r *sedRun) editInPlace(ctx context.Context, name, suffix string) error {
	c := r.c
	abs := c.Abs(name)
	fi, err := c.FS.Stat(abs)
	if err != nil {
		fmt.Fprintf(c.Stderr, "sed: can't read %s: %s\n", name, shell.ErrText(err))
		r.status = 2
		return nil
	}
	if !fi.Mode().IsRegular() {
		fmt.Fprintf(c.Stderr, "sed: couldn't edit %s: not a regular file\n", name)
		r.status = 4
		return nil
	}
	dir := path.Dir(abs)
	var tmp string
	var f io.WriteCloser
	for i := 0; ; i++ {
		tmp = fmt.Sprintf("%s/sed%06d", dir, i)
		f, err = c.FS.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > 1000 {
			fmt.Fprintf(c.Stderr, "sed: couldn't open temporary file %s: %s\n", tmp, shell.ErrText(err))
			return errSedFatal
		}
	}
	out := &sedOut{w: bufio.NewWriterSize(f, 64<<10)}
	r.out = out
	r.lineno = 0
	err = r.runStream(ctx, []string{name})
	r.out = r.stdout
	if ferr := out.w.Flush(); ferr != nil && err == nil {
		err = ferr
	}
	f.Close()
	if err != nil {
		c.FS.Remove(tmp)
		return err
	}
	c.FS.Chmod(tmp, fi.Mode().Perm())
	if suffix != "" {
		bak := name + suffix
		if strings.Contains(suffix, "*") {
			base := path.Base(name)
			bak = strings.ReplaceAll(suffix, "*", base)
			if !strings.Contains(bak, "/") {
				bak = path.Join(path.Dir(name), bak)
			}
		}
		if err := c.FS.Rename(abs, c.Abs(bak)); err != nil {
			c.FS.Remove(tmp)
			fmt.Fprintf(c.Stderr, "sed: cannot rename %s: %s\n", name, shell.ErrText(err))
			return errSedFatal
		}
	}
	if err := c.FS.Rename(tmp, abs); err != nil {
		fmt.Fprintf(c.Stderr, "sed: cannot rename %s: %s\n", tmp, shell.ErrText(err))
		return errSedFatal
	}
	return nil
}

var errSedFatal = errors.New("fatal error")
