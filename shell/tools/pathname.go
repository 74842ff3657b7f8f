package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"rung.dev/rung/shell"
)

// basename, dirname, readlink and realpath, like GNU's. Canonicalisation
// resolves inside the sandbox's file view, so paths outside /workspace and
// /tmp do not exist here (the shell's Check sends such commands to a
// container).

var (
	basenameSpec = fuNewSpec([]string{"a,multiple", "s,suffix=", "z,zero"}, "help", "version")
	dirnameSpec  = fuNewSpec([]string{"z,zero"}, "help", "version")
	readlinkSpec = fuNewSpec([]string{"f,canonicalize", "e,canonicalize-existing", "m,canonicalize-missing",
		"n,no-newline", "z,zero", "q,quiet", "s,silent", "v,verbose"}, "help", "version")
	realpathSpec = fuNewSpec([]string{"e,canonicalize-existing", "m,canonicalize-missing", "s,strip,no-symlinks",
		"relative-to=", "relative-base=", "z,zero", "q,quiet", "P,physical"}, "L,logical", "help", "version")
)

func runBasename(ctx context.Context, c *shell.Call) int {
	opts, args, status, ok := basenameSpec.parse(c, 1)
	if !ok {
		return status
	}
	multi, suffix, end := false, "", "\n"
	for _, o := range opts {
		switch o.Key {
		case "multiple":
			multi = true
		case "suffix":
			multi, suffix = true, o.Value
		case "zero":
			end = "\x00"
		}
	}
	if len(args) == 0 {
		return usage(c, errors.New("missing operand"), 1)
	}
	if !multi {
		if len(args) > 2 {
			return usage(c, fmt.Errorf("extra operand %s", locQuote(args[2])), 1)
		}
		if len(args) == 2 {
			suffix, args = args[1], args[:1]
		}
	}
	var sb strings.Builder
	for _, a := range args {
		b := fuBase(a)
		if suffix != "" && b != suffix && strings.HasSuffix(b, suffix) && b != "/" {
			b = strings.TrimSuffix(b, suffix)
		}
		sb.WriteString(b)
		sb.WriteString(end)
	}
	c.Stdout.Write([]byte(sb.String()))
	return 0
}

func runDirname(ctx context.Context, c *shell.Call) int {
	opts, args, status, ok := dirnameSpec.parse(c, 1)
	if !ok {
		return status
	}
	end := "\n"
	if len(opts) > 0 {
		end = "\x00"
	}
	if len(args) == 0 {
		return usage(c, errors.New("missing operand"), 1)
	}
	var sb strings.Builder
	for _, a := range args {
		sb.WriteString(fuDirname(a))
		sb.WriteString(end)
	}
	c.Stdout.Write([]byte(sb.String()))
	return 0
}

// fuDirname is dirname(1)'s rule.
func fuDirname(p string) string {
	t := strings.TrimRight(p, "/")
	if t == "" {
		if strings.HasPrefix(p, "/") {
			return "/"
		}
		return "."
	}
	i := strings.LastIndexByte(t, '/')
	if i < 0 {
		return "."
	}
	d := strings.TrimRight(t[:i], "/")
	if d == "" {
		return "/"
	}
	return d
}

// canonMode is canonicalize_filename_mode's mode: 'e' every component
// must exist, 'f' all but the last, 'm' none; 's' does not resolve
// symlinks (lexical, like realpath -s with 'm' existence rules).
type canonMode struct {
	exist   byte // 'e', 'f', 'm'
	noLinks bool
}

// fuCanon resolves name to an absolute sandbox path with symlinks
// followed (bounded to 40 links, as Linux's ELOOP).
func fuCanon(c *shell.Call, name string, mode canonMode) (string, error) {
	if name == "" {
		return "", &fs.PathError{Op: "canonicalize", Path: name, Err: syscall.ENOENT}
	}
	queue := strings.Split(c.Abs(name), "/")
	result := ""
	links := 0
	seen := map[string]bool{}
	missing := false // a component did not exist (mode m): stay lexical
	for len(queue) > 0 {
		comp := queue[0]
		queue = queue[1:]
		switch comp {
		case "", ".":
			continue
		case "..":
			if i := strings.LastIndexByte(result, '/'); i >= 0 {
				result = result[:i]
			}
			continue
		}
		cand := result + "/" + comp
		if missing || mode.noLinks {
			result = cand
			continue
		}
		st, err := fuLstat(c, cand)
		if err != nil {
			last := len(strings.Join(queue, "")) == 0
			if mode.exist == 'm' || (mode.exist == 'f' && last && errors.Is(err, fs.ErrNotExist)) {
				missing = true
				result = cand
				continue
			}
			return "", err
		}
		if st.isLink() && seen[cand] && mode.exist == 'm' {
			// A loop: GNU's missing mode keeps the name unresolved.
			result = cand
			continue
		}
		if st.isLink() {
			seen[cand] = true
			links++
			if links > 40 {
				return "", &fs.PathError{Op: "canonicalize", Path: name, Err: syscall.ELOOP}
			}
			t, err := c.FS.Readlink(c.Abs(cand))
			if err != nil {
				return "", err
			}
			if strings.HasPrefix(t, "/") {
				result = ""
			}
			queue = append(strings.Split(t, "/"), queue...)
			continue
		}
		result = cand
		if !st.isDir() && len(strings.Join(queue, "")) > 0 {
			if mode.exist == 'm' {
				missing = true
				continue
			}
			return "", &fs.PathError{Op: "canonicalize", Path: name, Err: syscall.ENOTDIR}
		}
	}
	if result == "" {
		result = "/"
	}
	if mode.noLinks && mode.exist != 'm' {
		// Lexical: only the final path is checked, and a missing file
		// is fine unless every component must exist.
		if _, err := c.FS.Stat(c.Abs(result)); err != nil && (mode.exist == 'e' || !errors.Is(err, fs.ErrNotExist)) {
			return "", &fs.PathError{Op: "canonicalize", Path: name, Err: fuErrnoOr(err)}
		}
	}
	return result, nil
}

func runReadlink(ctx context.Context, c *shell.Call) int {
	opts, args, status, ok := readlinkSpec.parse(c, 1)
	if !ok {
		return status
	}
	var mode byte
	noNL, verbose, end := false, false, "\n"
	for _, o := range opts {
		switch o.Key {
		case "canonicalize":
			mode = 'f'
		case "canonicalize-existing":
			mode = 'e'
		case "canonicalize-missing":
			mode = 'm'
		case "no-newline":
			noNL = true
		case "zero":
			end = "\x00"
		case "quiet", "silent":
			verbose = false
		case "verbose":
			verbose = true
		}
	}
	if len(args) == 0 {
		return usage(c, errors.New("missing operand"), 1)
	}
	if noNL && len(args) > 1 {
		c.Errorf("ignoring --no-newline with multiple arguments")
		noNL = false
	}
	var sb strings.Builder
	for _, a := range args {
		var out string
		var err error
		if mode == 0 {
			out, err = c.FS.Readlink(c.Abs(a))
		} else {
			out, err = fuCanon(c, a, canonMode{exist: mode})
		}
		if err != nil {
			if verbose {
				c.Errorf("%s: %s", a, fuErr(err))
			}
			status = 1
			continue
		}
		sb.WriteString(out)
		if !noNL {
			sb.WriteString(end)
		}
	}
	c.Stdout.Write([]byte(sb.String()))
	return status
}

func runRealpath(ctx context.Context, c *shell.Call) int {
	opts, args, status, ok := realpathSpec.parse(c, 1)
	if !ok {
		return status
	}
	mode := canonMode{exist: 'f'}
	quiet, end := false, "\n"
	relTo, relBase := "", ""
	for _, o := range opts {
		switch o.Key {
		case "canonicalize-existing":
			mode.exist = 'e'
		case "canonicalize-missing":
			mode.exist = 'm'
		case "no-symlinks":
			mode.noLinks = true
		case "physical":
			mode.noLinks = false
		case "relative-to":
			relTo = o.Value
		case "relative-base":
			relBase = o.Value
		case "zero":
			end = "\x00"
		case "quiet":
			quiet = true
		}
	}
	if len(args) == 0 {
		return usage(c, errors.New("missing operand"), 1)
	}
	var err error
	if relTo != "" {
		if relTo, err = fuCanon(c, relTo, mode); err != nil {
			c.Errorf("%s: %s", relTo, fuErr(err))
			return 1
		}
	}
	if relBase != "" {
		if relBase, err = fuCanon(c, relBase, mode); err != nil {
			c.Errorf("%s: %s", relBase, fuErr(err))
			return 1
		}
	}
	if relBase != "" && relTo == "" {
		relTo = relBase
	}
	if relBase != "" && !fuUnder(relTo, relBase) {
		relTo, relBase = "", ""
	}
	var sb strings.Builder
	for _, a := range args {
		p, err := fuCanon(c, a, mode)
		if err != nil {
			if !quiet {
				c.Errorf("%s: %s", a, fuErr(err))
			}
			status = 1
			continue
		}
		if relTo != "" && (relBase == "" || fuUnder(p, relBase)) {
			p = fuRel(relTo, p)
		}
		sb.WriteString(p)
		sb.WriteString(end)
	}
	c.Stdout.Write([]byte(sb.String()))
	return status
}

// fuUnder reports whether p is base or below it (both canonical).
func fuUnder(p, base string) bool {
	return base == "/" || p == base || strings.HasPrefix(p, base+"/")
}

// fuRel returns target relative to dir (both canonical absolute paths).
func fuRel(dir, target string) string {
	split := func(p string) []string {
		if p == "/" {
			return nil
		}
		return strings.Split(strings.TrimPrefix(p, "/"), "/")
	}
	d, t := split(dir), split(target)
	i := 0
	for i < len(d) && i < len(t) && d[i] == t[i] {
		i++
	}
	var parts []string
	for range d[i:] {
		parts = append(parts, "..")
	}
	parts = append(parts, t[i:]...)
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}
