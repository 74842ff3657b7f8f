package tools

import (
	"context"
	"errors"
	"strings"
	"time"

	"rung.dev/rung/shell"
)

// timeout: runs its command through c.Exec under a derived context. The
// command is in-process, so "killing" it is cancelling that context; the
// status is 124 on timeout (or, with --preserve-status, 128+signal).

var timeoutOpts = NewOptions("k,kill-after=", "s,signal=", "preserve-status", "foreground", "v,verbose")

func init() { timeoutOpts.Posix = true }

var timeoutSignals = map[string]int{"HUP": 1, "INT": 2, "QUIT": 3, "KILL": 9, "USR1": 10, "USR2": 12,
	"ALRM": 14, "TERM": 15, "CONT": 18, "STOP": 19}

func timeoutSignal(s string) (int, bool) {
	if n, ok := txParseSize(s); ok && n < 65 && !strings.ContainsAny(s, "bkKMGTPEZY") {
		return int(n), true
	}
	n, ok := timeoutSignals[strings.TrimPrefix(strings.ToUpper(s), "SIG")]
	return n, ok
}

func runTimeout(ctx context.Context, c *shell.Call) int {
	opts, rest, st, ok := txParse(c, timeoutOpts, c.Args[1:], 125)
	if !ok {
		return st
	}
	sig, preserve, verbose := 15, false, false
	for _, o := range opts {
		switch o.Key {
		case "kill-after":
			if _, ok := txDuration(o.Value); !ok {
				c.Errorf("invalid time interval %s", txQuote(o.Value))
				return 125
			}
		case "signal":
			n, ok := timeoutSignal(o.Value)
			if !ok {
				c.Errorf("%s: invalid signal", o.Value)
				return 125
			}
			sig = n
		case "preserve-status":
			preserve = true
		case "verbose":
			verbose = true
		}
	}
	if len(rest) < 2 {
		if len(rest) == 0 {
			return txUsageStatus(c, "missing operand", 125)
		}
		return txUsageStatus(c, "missing operand after "+txQuote(rest[0]), 125)
	}
	secs, ok := txDuration(rest[0])
	if !ok {
		return txUsageStatus(c, "invalid time interval "+txQuote(rest[0]), 125)
	}
	sub := *c
	sub.Args, sub.Unsupported = rest[1:], nil
	if secs == 0 {
		st := c.Exec(ctx, &sub)
		c.Unsupported = sub.Unsupported
		return st
	}
	d := time.Duration(secs * float64(time.Second))
	if secs*1e9 > float64(1<<62) {
		d = 1 << 62
	}
	tctx, cancel := context.WithTimeoutCause(ctx, d, errTimeoutFired)
	defer cancel()
	status := c.Exec(tctx, &sub)
	c.Unsupported = sub.Unsupported
	if ctx.Err() == nil && errors.Is(context.Cause(tctx), errTimeoutFired) {
		if verbose {
			c.Errorf("sending signal %s to command %s", timeoutSigName(sig), txQuote(rest[1]))
		}
		// KILL also kills GNU timeout itself (it signals its process
		// group), which a shell reports as 128+9.
		if preserve || sig == 9 {
			return 128 + sig
		}
		return 124
	}
	return status
}

var errTimeoutFired = errors.New("timeout fired")

func timeoutSigName(n int) string {
	for k, v := range timeoutSignals {
		if v == n {
			return k
		}
	}
	return "TERM"
}
