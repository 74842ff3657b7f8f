package tools

import (
	"context"
	"strings"

	"rung.dev/rung/shell"
)

// env, printenv and timeout: they run their command through c.Exec, the
// interpreter's own lookup, so `env FOO=1 cmd` never leaves the sandbox.

var envOpts = NewOptions("i,ignore-environment", "u,unset=", "0,null", "C,chdir=", "S,split-string=",
	"block-signal=?", "default-signal=?", "ignore-signal=?", "list-signal-handling", "v,debug")

var envUnimpl = []string{"split-string", "block-signal", "default-signal", "ignore-signal", "list-signal-handling", "debug"}

func init() { envOpts.Posix = true }

func envCheck(args []string) error {
	// A leading "-" alone means -i.
	if len(args) > 0 && args[0] == "-" {
		args = args[1:]
	}
	return txCheck(envOpts, envUnimpl...)(args)
}

func runEnv(ctx context.Context, c *shell.Call) int {
	args := c.Args[1:]
	ignore := false
	if len(args) > 0 && args[0] == "-" {
		ignore, args = true, args[1:]
	}
	opts, rest, st, ok := txParse(c, envOpts, args, 125)
	if !ok {
		return st
	}
	if o, bad := txRefused(opts, envUnimpl...); bad {
		return txFail(c, o)
	}
	env := append([]string(nil), c.Env...)
	nul := false
	dir := c.Dir
	for _, o := range opts {
		switch o.Key {
		case "ignore-environment":
			ignore = true
		case "unset":
			if o.Value == "" || strings.Contains(o.Value, "=") {
				c.Errorf("cannot unset %s: Invalid argument", txQuote(o.Value))
				return 125
			}
			env = envUnset(env, o.Value)
		case "null":
			nul = true
		case "chdir":
			dir = c.Abs(o.Value)
		}
	}
	if ignore {
		env = nil
	}
	for len(rest) > 0 && strings.Contains(rest[0], "=") && rest[0][0] != '=' {
		name, _, _ := strings.Cut(rest[0], "=")
		env = append(envUnset(env, name), rest[0])
		rest = rest[1:]
	}
	if len(rest) == 0 {
		if dir != c.Dir {
			return txUsageMsg(c, "must specify command with --chdir (-C)")
		}
		out := newTxOut(c.Stdout)
		for _, kv := range env {
			out.WriteString(kv)
			if nul {
				out.WriteByte(0)
			} else {
				out.WriteByte('\n')
			}
		}
		if out.Flush() != nil {
			return 1
		}
		return 0
	}
	if nul {
		return txUsageMsg(c, "cannot specify --null (-0) with command")
	}
	if dir != c.Dir {
		fi, err := c.FS.Stat(dir)
		if err != nil || !fi.IsDir() {
			msg := "Not a directory"
			if err != nil {
				msg = txErr(err)
			}
			c.Errorf("cannot change directory to %s: %s", txQuote(dir), msg)
			return 125
		}
	}
	sub := *c
	sub.Args, sub.Env, sub.Dir, sub.Unsupported = rest, env, dir, nil
	status := c.Exec(ctx, &sub)
	if sub.Unsupported != nil {
		c.Unsupported = sub.Unsupported
	}
	return status
}

func envUnset(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != name {
			out = append(out, kv)
		}
	}
	return out
}

var printenvOpts = NewOptions("0,null")

func runPrintenv(ctx context.Context, c *shell.Call) int {
	opts, names, st, ok := txParse(c, printenvOpts, c.Args[1:], 2)
	if !ok {
		return st
	}
	eol := byte('\n')
	if len(opts) > 0 {
		eol = 0
	}
	out := newTxOut(c.Stdout)
	defer out.Flush()
	if len(names) == 0 {
		for _, kv := range c.Env {
			out.WriteString(kv)
			out.WriteByte(eol)
		}
		return 0
	}
	status := 0
	for _, n := range names {
		v, ok := c.LookupEnv(n)
		if !ok || strings.Contains(n, "=") {
			status = 1
			continue
		}
		out.WriteString(v)
		out.WriteByte(eol)
	}
	return status
}
