package tools

import (
	"context"
	"strings"

	"rung.dev/rung/shell"
)

// yes: repeats its operands (or "y") until the reader goes away or the
// exec's context ends.

func runYes(ctx context.Context, c *shell.Call) int {
	args := c.Args[1:]
	if err := trueCheck(args); err != nil {
		return c.Fail("option " + args[0])
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	} else if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' {
		// GNU yes parses options (only --help and --version exist).
		if strings.HasPrefix(args[0], "--") {
			return usage(c, &UsageError{"unrecognized option '" + args[0] + "'"}, 1)
		}
		return usage(c, &UsageError{"invalid option -- '" + args[0][1:2] + "'"}, 1)
	}
	line := "y\n"
	if len(args) > 0 {
		line = strings.Join(args, " ") + "\n"
	}
	// One write carries many copies, as GNU yes fills a buffer.
	buf := []byte(strings.Repeat(line, max(1, (16<<10)/len(line))))
	for {
		if ctx.Err() != nil {
			return txCtxStatus
		}
		if _, err := c.Stdout.Write(buf); err != nil {
			return 1
		}
	}
}
