package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"syscall"

	"rung.dev/rung/shell"
)

// strings as GNU binutils 2.40 prints it for the default 7-bit encoding:
// runs of at least N (default 4) printable ASCII bytes or tabs, each
// followed by a newline (or -s SEP). -a is accepted (whole-file scanning is
// the default), -t d|o|x / -o print the offset, -f the file name, -w keeps
// newlines and other whitespace inside a string. -e, -d, -T, -U and the
// other object-file options are refused.

var stringsOpts = NewOptions("a,all", "f,print-file-name", "n,bytes=", "t,radix=", "o",
	"w,include-all-whitespace", "s,output-separator=", "e,encoding=", "d,data", "T,target=", "U,unicode=")

var stringsUnimpl = []string{"encoding", "data", "target", "unicode"}

// stringsArgs rewrites GNU's -NUM shorthand for -n NUM.
func stringsArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			out = append(out, "-n", a[1:])
			continue
		}
		out = append(out, a)
	}
	return out
}

func stringsCheck(args []string) error {
	return txCheck(stringsOpts, stringsUnimpl...)(stringsArgs(args))
}

type stringsConf struct {
	min       int
	radix     byte // 0, 'd', 'o' or 'x'
	printName bool
	allSpace  bool
	sep       string
}

func runStrings(ctx context.Context, c *shell.Call) int {
	opts, files, st, ok := txParse(c, stringsOpts, stringsArgs(c.Args[1:]), 1)
	if !ok {
		return st
	}
	if o, bad := txRefused(opts, stringsUnimpl...); bad {
		return txFail(c, o)
	}
	cf := stringsConf{min: 4, sep: "\n"}
	for _, o := range opts {
		switch o.Key {
		case "bytes":
			n, err := strconv.ParseInt(o.Value, 0, 64)
			if err != nil || n < 1 || n > 1<<30 {
				c.Errorf("invalid minimum string length %s", o.Value)
				return 1
			}
			cf.min = int(n)
		case "radix":
			if len(o.Value) != 1 || (o.Value[0] != 'd' && o.Value[0] != 'o' && o.Value[0] != 'x') {
				c.Errorf("invalid argument to -t/--radix")
				return 1
			}
			cf.radix = o.Value[0]
		case "o":
			cf.radix = 'o'
		case "print-file-name":
			cf.printName = true
		case "include-all-whitespace":
			cf.allSpace = true
		case "output-separator":
			cf.sep = o.Value
		}
	}
	out := newTxOut(c.Stdout)
	defer out.Flush()
	if len(files) == 0 {
		if err := stringsScan(ctx, out, c.Stdin, "{standard input}", cf); err != nil {
			return stringsReadErr(c, "{standard input}", err)
		}
		if out.Flush() != nil {
			return 1
		}
		return 0
	}
	status := 0
	for _, name := range files {
		r, err := txOpen(ctx, c, name)
		if err != nil {
			if errors.Is(err, syscall.ENOENT) {
				c.Errorf("'%s': No such file", name)
			} else {
				c.Errorf("%s: %s", name, txErr(err))
			}
			status = 1
			continue
		}
		err = stringsScan(ctx, out, r, name, cf)
		r.Close()
		if err != nil {
			if txIsCtx(err) {
				return txCtxStatus
			}
			if errors.Is(err, syscall.EISDIR) {
				c.Errorf("Warning: '%s' is a directory", name)
			} else {
				c.Errorf("%s: %s", name, txErr(err))
			}
			status = 1
		}
	}
	if out.Flush() != nil {
		return 1
	}
	return status
}

func stringsReadErr(c *shell.Call, name string, err error) int {
	if txIsCtx(err) {
		return txCtxStatus
	}
	c.Errorf("%s: %s", name, txErr(err))
	return 1
}

// stringsPrintable is binutils' STRING_ISGRAPHIC for the 's' encoding:
// printable ASCII or tab, plus all whitespace with -w.
func stringsPrintable(b byte, allSpace bool) bool {
	if b >= 0x20 && b < 0x7f || b == '\t' {
		return true
	}
	return allSpace && (b == '\n' || b == '\r' || b == '\v' || b == '\f')
}

// stringsScan prints r's printable runs of at least cf.min bytes.
func stringsScan(ctx context.Context, out *txOut, r io.Reader, name string, cf stringsConf) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var run []byte
	var off, start int64
	flush := func() {
		if len(run) >= cf.min {
			if cf.printName {
				out.WriteString(name)
				out.WriteString(": ")
			}
			switch cf.radix {
			case 'd':
				fmt.Fprintf(out, "%7d ", start)
			case 'o':
				fmt.Fprintf(out, "%7o ", start)
			case 'x':
				fmt.Fprintf(out, "%7x ", start)
			}
			out.Write(run)
			out.WriteString(cf.sep)
		}
		run = run[:0]
	}
	for {
		if off&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		b, err := br.ReadByte()
		if err != nil {
			flush()
			if err == io.EOF {
				return nil
			}
			return err
		}
		if stringsPrintable(b, cf.allSpace) {
			if len(run) == 0 {
				start = off
			}
			run = append(run, b)
		} else {
			flush()
		}
		off++
	}
}
