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
