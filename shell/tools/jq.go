package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"
	"rung.dev/rung/shell"
)

// jq is gojq behind jq 1.6's command line (Debian 12's jq): its flags,
// output format (2-space indent, input key order, jq 1.6's number
// format) and exit codes (2 usage and I/O, 3 compile, 5 runtime, 1 and 4
// for -e). gojq's maps have no key order, so objects keep their order
// only when they come from the input or from {...} with constant keys;
// an object of unknown order with two keys or more makes the tool refuse
// (exit 125) before writing anything, so the router runs the real jq.
func jqTool() shell.Tool { return shell.Tool{Run: runJQ, Check: checkJQ} }

type jqOpts struct {
	raw, join, compact, null, slurp, exit, sortKeys, rawIn, ascii, tab bool
	indent                                                             int
	filter                                                             string
	haveFilter                                                         bool
	files                                                              []string
	names                                                              []string
	values                                                             []any
	named                                                              map[string]any
	namedKeys                                                          []string // named's keys in command-line order
	positional                                                         []any
	unsupported                                                        string
	fromFile                                                           bool // -f: the first operand names the filter's file
}

type jqUsage struct{ msg string }

func (e *jqUsage) Error() string { return e.msg }

func checkJQ(args []string) error {
	o, err := parseJQArgs(nil, args, &jqOrder{})
	if err != nil {
		var u *jqUsage
		if errors.As(err, &u) {
			return nil // reported at run time, as jq does
		}
	}
	if o != nil && o.unsupported != "" {
		return fmt.Errorf("jq: option %s: %w", o.unsupported, shell.ErrUnsupported)
	}
	if o != nil && o.filter != "" && !strings.Contains(o.filter, shell.Unknown) {
		// gojq words syntax errors otherwise than jq 1.6.
		q, err := gojq.Parse(o.filter)
		if err != nil {
			return fmt.Errorf("jq: a filter with a syntax error: %w", shell.ErrUnsupported)
		}
		if jqIndexesByValue(reflect.ValueOf(q)) {
			return fmt.Errorf("jq: .[expr] (gojq indexes a string by number, jq 1.6 fails): %w", shell.ErrUnsupported)
		}
	}
	return nil
}

// parseJQArgs parses jq 1.6's command line. c is nil during Check: file
// reading options then only take their arguments.
func parseJQArgs(c *shell.Call, args []string, order *jqOrder) (*jqOpts, error) {
	o := &jqOpts{indent: 2, named: map[string]any{}}
	restMode := "" // "args" or "jsonargs" after --args / --jsonargs
	need := func(i, n int, name string) error {
		if i+n >= len(args) {
			return &jqUsage{fmt.Sprintf("%s takes %s", name, map[int]string{1: "one parameter", 2: "two parameters (e.g. --arg varname value)"}[n])}
		}
		return nil
	}
	onlyOps := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if onlyOps || !strings.HasPrefix(a, "-") || a == "-" || a == shell.Unknown {
			if !o.haveFilter {
				o.filter, o.haveFilter = a, true
				continue
			}
			switch restMode {
			case "args":
				o.positional = append(o.positional, a)
			case "jsonargs":
				var v any
				if c == nil && a != shell.Unknown {
					// jq 1.6 takes invalid JSON here and aborts on an
					// assertion when it prints it: only the real jq
					// answers that.
					if _, err := newJQDecoder(strings.NewReader(a), order).Next(); err != nil {
						o.unsupported = "--jsonargs with invalid JSON"
					}
				}
				if c != nil {
					d := newJQDecoder(strings.NewReader(a), order)
					x, err := d.Next()
					if err != nil {
						return o, &jqUsage{"Invalid JSON text passed to --jsonargs"}
					}
					v = x
				}
				o.positional = append(o.positional, v)
			default:
				o.files = append(o.files, a)
			}
			continue
		}
		if a == "--" {
			onlyOps = true
			continue
		}
		if strings.HasPrefix(a, "--") {
			switch a[2:] {
			case "raw-output":
				o.raw = true
			case "join-output":
				o.raw, o.join = true, true
			case "compact-output":
				o.compact = true
			case "null-input":
				o.null = true
			case "slurp":
				o.slurp = true
			case "exit-status":
				o.exit = true
			case "sort-keys":
				o.sortKeys = true
			case "raw-input":
				o.rawIn = true
			case "ascii-output":
				o.ascii = true
			case "monochrome-output", "unbuffered":
			case "tab":
				o.tab = true
			case "indent":
				if err := need(i, 1, "--indent"); err != nil {
					return o, err
				}
				i++
				n, err := strconv.Atoi(args[i])
				if err != nil && args[i] != shell.Unknown {
					return o, &jqUsage{"--indent takes a number"}
				}
				if n > 7 {
					return o, &jqUsage{"Cannot indent more than 7 characters"}
				}
				o.indent = n
			case "arg", "argjson", "slurpfile", "rawfile":
				if err := need(i, 2, "--"+a[2:]); err != nil {
					return o, err
				}
				name, val := args[i+1], args[i+2]
				i += 2
				if c == nil {
					continue
				}
				v, err := jqArgValue(c, a[2:], val, order)
				if err != nil {
					return o, err
				}
				if _, dup := o.named[name]; dup {
					continue // jq 1.6 keeps the first binding of a name
				}
				o.names = append(o.names, "$"+name)
				o.values = append(o.values, v)
				o.namedKeys = append(o.namedKeys, name)
				o.named[name] = v
			case "args":
				restMode = "args"
			case "jsonargs":
				restMode = "jsonargs"
			case "from-file":
				o.fromFile = true
			default:
				if o.unsupported == "" {
					o.unsupported = a
				}
			}
			continue
		}
		for _, f := range a[1:] {
			switch f {
			case 'r':
				o.raw = true
			case 'j':
				o.raw, o.join = true, true
			case 'c':
				o.compact = true
			case 'n':
				o.null = true
			case 's':
				o.slurp = true
			case 'e':
				o.exit = true
			case 'S':
				o.sortKeys = true
			case 'R':
				o.rawIn = true
			case 'a':
				o.ascii = true
			case 'M':
			case 'f':
				o.fromFile = true
			default:
				if strings.ContainsRune("CLh", f) {
					if o.unsupported == "" {
						o.unsupported = "-" + string(f)
					}
					continue
				}
				return o, &jqUsage{fmt.Sprintf("Unknown option %s", a)}
			}
		}
	}
	return o, nil
}

func jqArgValue(c *shell.Call, kind, val string, order *jqOrder) (any, error) {
	switch kind {
	case "arg":
		return val, nil
	case "argjson":
		d := newJQDecoder(strings.NewReader(val), order)
		v, err := d.Next()
		if err != nil {
			return nil, &jqUsage{"invalid JSON text passed to --argjson"}
		}
		return v, nil
	}
	f, err := c.Open(val)
	if err != nil {
		return nil, &jqUsage{fmt.Sprintf("Bad JSON in --%s %s: Could not open %s: %s", kind, val, val, shell.ErrText(err))}
	}
	defer f.Close()
	data, err := c.ReadAll(f)
	if err != nil {
		return nil, &jqUsage{fmt.Sprintf("Bad JSON in --%s %s: %s", kind, val, shell.ErrText(err))}
	}
	if kind == "rawfile" {
		return string(data), nil
	}
	d := newJQDecoder(bytes.NewReader(data), order)
	var all []any
	for {
		v, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &jqUsage{fmt.Sprintf("Bad JSON in --slurpfile %s: %v", val, err)}
		}
		all = append(all, v)
	}
	if all == nil {
		all = []any{}
	}
	return all, nil
}

func runJQ(ctx context.Context, c *shell.Call) int {
	order := &jqOrder{}
	o, err := parseJQArgs(c, c.Args[1:], order)
	if o != nil && o.unsupported != "" {
		return c.Fail("option " + o.unsupported)
	}
	if err != nil {
		fmt.Fprintf(c.Stderr, "jq: %v\nUse jq --help for help with command-line options,\nor see the jq manpage, or online docs  at https://stedolan.github.io/jq\n", err)
		return 2
	}
	if !o.haveFilter {
		if !o.null {
			fmt.Fprintf(c.Stderr, "Usage:\tjq [OPTIONS] FILTER [FILES...]\n")
			return 2
		}
		o.filter = "." // jq 1.6 runs . when given -n and no filter
	}
	if o.fromFile {
		f, err := c.Open(o.filter)
		if err != nil {
			fmt.Fprintf(c.Stderr, "jq: error: Could not open %s: %s\n", o.filter, shell.ErrText(err))
			return 2
		}
		data, err := c.ReadAll(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(c.Stderr, "jq: error: Could not read %s: %s\n", o.filter, shell.ErrText(err))
			return 2
		}
		o.filter = string(data)
	}
	r := &jqRun{ctx: ctx, c: c, o: o, order: order}
	return r.run()
}

// jqIndexesByValue reports whether the query indexes with .[expr] where
// expr is not a string literal: on a string, gojq answers a number index
// with a character and jq 1.6 fails ("Cannot index string with number").
func jqIndexesByValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return false
		}
		if x, ok := v.Interface().(*gojq.Index); ok && x.Start != nil && !x.IsSlice {
			t := x.Start.Term
			if x.Start.Op != 0 || t == nil || t.Str == nil || len(t.SuffixList) > 0 || len(t.Str.Queries) > 0 {
				return true
			}
		}
		return jqIndexesByValue(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() && jqIndexesByValue(v.Field(i)) {
				return true
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if jqIndexesByValue(v.Index(i)) {
				return true
			}
		}
	}
	return false
}
