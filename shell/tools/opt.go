package tools

import (
	"fmt"
	"strings"
	"sync"

	"rung.dev/rung/shell"
)

// Options declares a tool's command-line options, parsed the way GNU
// getopt_long does: clustered short options (-la), short option arguments
// attached or separate (-n5, -n 5), long options with unique-prefix
// abbreviation (--ignore-c), --name=value, "--" ending options, and
// options after operands (permutation) unless Posix is set.
//
// A spec is a list of strings, one per option: "a,all" (flag),
// "n,lines=" (required argument), "color=?" (long only, optional argument
// given as --color=x), "E" (short only). A short option with "=?" takes
// the rest of its word as the argument (sed -i.bak); "F,classify=*" gives
// only the long form an optional argument, as GNU's getopt strings do
// for ls -F, cp -u, tail -f. The option's key is its long
// name, or its short letter when it has none.
type Options struct {
	Posix bool // stop at the first operand (env, xargs, find, timeout)
	// The tables are built on first use: every tool declares its options
	// at package level, and building them all at start-up would cost
	// each process of the rung binary (the container's agent too) half a
	// millisecond.
	specs []string
	once  sync.Once
	short map[byte]*optSpec
	long  map[string]*optSpec
}

type optSpec struct {
	key string
	arg int // 0 none, 1 required, 2 optional
	// longOnlyArg: the short form takes no argument ("=*").
	longOnlyArg bool
	short       byte
	long        string
}

// Opt is one parsed option, in command-line order.
type Opt struct {
	Key    string // long name, or short letter
	Value  string
	HasArg bool
	Name   string // as written: "-n" or "--lines"
}

// NewOptions builds an option table from specs (see [Options]).
func NewOptions(specs ...string) *Options {
	return &Options{specs: specs}
}

// index builds the option tables from the specs, once.
func (o *Options) index() {
	o.once.Do(func() {
		o.short, o.long = map[byte]*optSpec{}, map[string]*optSpec{}
		for _, s := range o.specs {
			sp := &optSpec{}
			switch {
			case strings.HasSuffix(s, "=?"):
				sp.arg, s = 2, strings.TrimSuffix(s, "=?")
			case strings.HasSuffix(s, "=*"):
				sp.arg, sp.longOnlyArg, s = 2, true, strings.TrimSuffix(s, "=*")
			case strings.HasSuffix(s, "="):
				sp.arg, s = 1, strings.TrimSuffix(s, "=")
			}
			for _, name := range strings.Split(s, ",") {
				if len(name) == 1 {
					sp.short = name[0]
					o.short[name[0]] = sp
				} else {
					sp.long = name
					o.long[name] = sp
				}
			}
			if sp.long != "" {
				sp.key = sp.long
			} else {
				sp.key = string(sp.short)
			}
		}
	})
}

// UsageError is a command-line error, worded as GNU getopt words it.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Parse splits args (without argv[0]) into options and operands. Words
// equal to [shell.Unknown] are treated as operands.
func (o *Options) Parse(args []string) ([]Opt, []string, error) {
	o.index()
	var opts []Opt
	var operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return opts, append(operands, args[i+1:]...), nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			sp, err := o.lookupLong(name)
			if err != nil {
				return nil, nil, err
			}
			op := Opt{Key: sp.key, Name: "--" + sp.long}
			switch {
			case sp.arg == 0 && hasVal:
				return nil, nil, &UsageError{fmt.Sprintf("option '--%s' doesn't allow an argument", sp.long)}
			case sp.arg == 1 && !hasVal:
				if i+1 >= len(args) {
					return nil, nil, &UsageError{fmt.Sprintf("option '--%s' requires an argument", sp.long)}
				}
				i++
				op.Value, op.HasArg = args[i], true
			case hasVal:
				op.Value, op.HasArg = val, true
			}
			opts = append(opts, op)
		case len(a) > 1 && a[0] == '-' && a != shell.Unknown:
			for j := 1; j < len(a); j++ {
				sp := o.short[a[j]]
				if sp == nil {
					return nil, nil, &UsageError{fmt.Sprintf("invalid option -- '%c'", a[j])}
				}
				op := Opt{Key: sp.key, Name: "-" + string(a[j])}
				if sp.arg != 0 && !sp.longOnlyArg {
					if j+1 < len(a) {
						op.Value, op.HasArg = a[j+1:], true
					} else if sp.arg == 1 {
						if i+1 >= len(args) {
							return nil, nil, &UsageError{fmt.Sprintf("option requires an argument -- '%c'", a[j])}
						}
						i++
						op.Value, op.HasArg = args[i], true
					}
					opts = append(opts, op)
					break
				}
				opts = append(opts, op)
			}
		default:
			if o.Posix {
				return opts, append(operands, args[i:]...), nil
			}
			operands = append(operands, a)
		}
	}
	return opts, operands, nil
}

// lookupLong is for Parse, which has built the tables.
func (o *Options) lookupLong(name string) (*optSpec, error) {
	if sp, ok := o.long[name]; ok {
		return sp, nil
	}
	var found *optSpec
	var ambiguous bool
	for l, sp := range o.long {
		if strings.HasPrefix(l, name) && name != "" {
			if found != nil && found != sp {
				ambiguous = true
			}
			found = sp
		}
	}
	switch {
	case ambiguous:
		return nil, &UsageError{fmt.Sprintf("option '--%s' is ambiguous", name)}
	case found == nil:
		return nil, &UsageError{fmt.Sprintf("unrecognized option '--%s'", name)}
	}
	return found, nil
}

// Check is a [shell.Tool] Check function for tools whose only static
// requirement is that every flag is known.
func (o *Options) Check(args []string) error {
	if _, _, err := o.Parse(args); err != nil {
		return fmt.Errorf("%s: %w", err, shell.ErrUnsupported)
	}
	return nil
}

// usage writes a GNU-style usage error and returns exit status 2... GNU
// coreutils mostly exit 1 on usage errors; the caller passes the status.
func usage(c *shell.Call, err error, status int) int {
	c.Errorf("%s", err)
	fmt.Fprintf(c.Stderr, "Try '%s --help' for more information.\n", c.Name())
	return status
}
