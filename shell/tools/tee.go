package tools

import (
	"context"
	"io"
	"os"

	"rung.dev/rung/shell"
)

// tee copies standard input to standard output and to files, like GNU tee.
// -i (ignore SIGINT) is accepted and has nothing to do here: the isolate
// tier delivers no signals to tools.

var teeSpec = fuNewSpec([]string{"a,append", "i,ignore-interrupts"},
	"p", "output-error=?", "help", "version")

func runTee(ctx context.Context, c *shell.Call) int {
	opts, files, status, ok := teeSpec.parse(c, 1)
	if !ok {
		return status
	}
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	for _, o := range opts {
		if o.Key == "append" {
			flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
	}
	type out struct {
		name string
		w    io.Writer
		c    io.Closer
	}
	outs := []*out{{name: "standard output", w: c.Stdout}}
	for _, f := range files {
		if f == "-" {
			// GNU tee writes "-" to standard output again.
			outs = append(outs, &out{name: "-", w: c.Stdout})
			continue
		}
		if fi, err := c.FS.Stat(c.Abs(f)); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			return c.Fail("writing a FIFO, socket or device (" + f + ")")
		}
		w, err := c.Create(f, flag, 0o666)
		if err != nil {
			c.Errorf("%s: %s", f, fuErr(err))
			status = 1
			continue
		}
		outs = append(outs, &out{name: f, w: w, c: w})
	}
	buf := make([]byte, 32<<10)
	for {
		if err := ctx.Err(); err != nil {
			status = 130
			break
		}
		n, rerr := c.Stdin.Read(buf)
		if n > 0 {
			for i, o := range outs {
				if o == nil {
					continue
				}
				if _, err := o.w.Write(buf[:n]); err != nil {
					c.Errorf("%s: %s", o.name, fuErr(err))
					status = 1
					outs[i] = nil
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			c.Errorf("-: %s", fuErr(rerr))
			status = 1
			break
		}
	}
	for _, o := range outs {
		if o != nil && o.c != nil {
			if err := o.c.Close(); err != nil {
				c.Errorf("%s: %s", o.name, fuErr(err))
				status = 1
			}
		}
	}
	return status
}
