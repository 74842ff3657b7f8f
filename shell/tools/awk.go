package tools

import (
	"context"
	"fmt"
	"io"
	"io/fs"

	"rung.dev/rung/shell"
	"rung.dev/rung/shell/tools/awk"
)

// awkTool is POSIX awk with mawk 1.3.4's behaviour (Debian 12's awk),
// implemented in package awk. Commands run by system(), print | cmd and
// cmd | getline go through c.Exec: plain words directly, anything else
// as sh -c.
func awkTool() shell.Tool {
	return shell.Tool{Run: runAwk, Check: checkAwk}
}

func checkAwk(args []string) error {
	if opt := awk.Unsupported(args); opt != "" {
		return fmt.Errorf("awk: option %s: %w", opt, shell.ErrUnsupported)
	}
	if err := awk.ProgramError(args, shell.Unknown); err != nil {
		// The image's awk (gawk) words syntax errors its own way.
		return fmt.Errorf("awk: a program with a syntax error (%v): %w", err, shell.ErrUnsupported)
	}
	return nil
}

func runAwk(ctx context.Context, c *shell.Call) int {
	args := c.Args[1:]
	if opt := awk.Unsupported(args); opt != "" {
		return c.Fail("option " + opt)
	}
	env := &awk.Env{
		Name: c.Name(), Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr, Environ: c.Env,
		Open: c.Open, Reserve: c.Reserve,
		Create: func(name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
			return c.Create(name, flag, perm)
		},
	}
	if c.Exec != nil {
		env.Run = func(ctx context.Context, cmd string, stdin io.Reader, stdout io.Writer) int {
			sub := &shell.Call{
				Args: awk.CommandArgv(cmd), Stdin: stdin, Stdout: stdout, Stderr: c.Stderr,
				Dir: c.Dir, Env: c.Env, FS: c.FS, Exec: c.Exec, FDs: c.FDs,
			}
			st := c.Exec(ctx, sub)
			if sub.Unsupported != nil && c.Unsupported == nil {
				c.Unsupported = sub.Unsupported
			}
			return st
		}
	}
	return awk.Main(ctx, env, args)
}
