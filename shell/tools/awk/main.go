// Package awk is a POSIX awk interpreter that behaves like mawk 1.3.4
// (Debian 12's awk): lexer, recursive-descent parser and a tree-walking
// interpreter over [Env], which supplies streams, files and commands.
//
// Known differences from mawk: for (k in a) visits keys in insertion
// order (mawk's order comes from its hash tables); rand() draws a
// different sequence. Like mawk, strings and regular expressions work on
// bytes.
package awk

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Main parses an awk command line (args without argv[0]: -F fs, -v
// var=value, -f progfile, --, program text, operands) and runs it.
// Unsupported mawk -W options return ok=false before anything runs, so
// the caller can refuse them.
func Main(ctx context.Context, env *Env, args []string) int {
	cfg, status, err := parseArgs(env, args)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %v\n", env.Name, err)
		return status
	}
	return Exec(ctx, env, cfg)
}

// Unsupported returns the first option of args that this package does
// not implement (mawk's -W options), or "".
func Unsupported(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			return ""
		}
		switch {
		case strings.HasPrefix(a, "-W"):
			return a
		case a == "-F" || a == "-v" || a == "-f":
			i++
		case strings.HasPrefix(a, "-F"), strings.HasPrefix(a, "-v"), strings.HasPrefix(a, "-f"):
		default:
			return ""
		}
	}
	return ""
}

type usageErr struct{ msg string }

func (e usageErr) Error() string { return e.msg }

func parseArgs(env *Env, args []string) (Config, int, error) {
	var cfg Config
	var progFiles []string
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		opt := a[1]
		if opt != 'F' && opt != 'v' && opt != 'f' {
			if opt == 'W' {
				return cfg, 2, fmt.Errorf("option %s is not supported", a)
			}
			return cfg, 2, fmt.Errorf("not an option: %s", a)
		}
		val := a[2:]
		if val == "" {
			if i+1 >= len(args) {
				return cfg, 2, fmt.Errorf("option -%c lacks argument", opt)
			}
			i++
			val = args[i]
		}
		switch opt {
		case 'F':
			v := val
			cfg.FS = &v
		case 'v':
			name, v, ok := cmdAssign(val)
			if !ok {
				return cfg, 2, fmt.Errorf("improper assignment: -v %s", val)
			}
			cfg.Assign = append(cfg.Assign, [2]string{name, v})
		case 'f':
			progFiles = append(progFiles, val)
		}
	}
	if len(progFiles) > 0 {
		var b strings.Builder
		for _, f := range progFiles {
			r, err := env.Open(f)
			if err != nil {
				return cfg, 2, fmt.Errorf("couldn't open file %s (%s)", f, errText(err))
			}
			data, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				return cfg, 2, fmt.Errorf("read %s: %v", f, err)
			}
			b.Write(data)
			b.WriteByte('\n')
		}
		cfg.Src = b.String()
	} else {
		if i >= len(args) {
			return cfg, 2, fmt.Errorf("usage: %s [-F value] [-v var=value] [--] 'program text' [file ...]", env.Name)
		}
		cfg.Src = args[i]
		i++
	}
	cfg.Args = args[i:]
	return cfg, 0, nil
}

// ProgramError returns the syntax error of the program text in args (a
// command line as Main takes it), or nil when it parses, comes from -f,
// or is a word unknown stands for (only known at run time).
func ProgramError(args []string, unknown string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == unknown:
			return nil
		case a == "--":
			if i+1 < len(args) && args[i+1] != unknown {
				_, err := parse(args[i+1])
				return err
			}
			return nil
		case a == "-F" || a == "-v":
			i++
		case strings.HasPrefix(a, "-F") || strings.HasPrefix(a, "-v"):
		case len(a) >= 2 && a[0] == '-':
			// -f, or an option Main reports itself.
			return nil
		default:
			_, err := parse(a)
			return err
		}
	}
	return nil
}
