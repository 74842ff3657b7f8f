package tools

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"rung.dev/rung/shell"
)

// sleep: GNU sleep (NUMBER[smhd]..., summed; fractions allowed), bounded
// by the exec's context.

func sleepCheck(args []string) error { return trueCheck(args) }

// txDuration parses GNU's "1.5", "2m", "1d", "inf" duration words.
func txDuration(s string) (float64, bool) {
	mult := 1.0
	if s != "" {
		switch s[len(s)-1] {
		case 's':
			s = s[:len(s)-1]
		case 'm':
			mult, s = 60, s[:len(s)-1]
		case 'h':
			mult, s = 3600, s[:len(s)-1]
		case 'd':
			mult, s = 86400, s[:len(s)-1]
		}
	}
	if s == "" || strings.ContainsAny(s, " \t\n") {
		return 0, false
	}
	v, n, ok := txStrtod([]byte(s))
	if !ok || n != len(s) || v < 0 || math.IsNaN(v) {
		return 0, false
	}
	return v * mult, true
}

func runSleep(ctx context.Context, c *shell.Call) int {
	args := c.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return txUsageMsg(c, "missing operand")
	}
	total := 0.0
	bad := false
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && !isDigit(a[1]) && a[1] != '.' {
			return usage(c, &UsageError{"invalid option -- '" + a[1:2] + "'"}, 1)
		}
		d, ok := txDuration(a)
		if !ok {
			c.Errorf("invalid time interval %s", txQuote(a))
			bad = true
			continue
		}
		total += d
	}
	if bad {
		fmt.Fprintf(c.Stderr, "Try '%s --help' for more information.\n", c.Name())
		return 1
	}
	if total <= 0 {
		return 0
	}
	dur := time.Duration(math.MaxInt64)
	if total < float64(math.MaxInt64)/1e9 {
		dur = time.Duration(total * 1e9)
	}
	t := time.NewTimer(dur)
	defer t.Stop()
	// Sleeping is not CPU: the run slot goes to others meanwhile.
	defer c.Block(ctx)()
	select {
	case <-t.C:
		return 0
	case <-ctx.Done():
		return txCtxStatus
	}
}
