package tools

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"rung.dev/rung/shell"
)

// mktemp creates a temporary file or directory like GNU mktemp, with the
// random part drawn from crypto/rand. The default directory is $TMPDIR or
// /tmp inside the sandbox.

var mktempSpec = fuNewSpec([]string{"d,directory", "u,dry-run", "q,quiet", "suffix=", "p=", "tmpdir=?", "t"},
	"help", "version")

const mktempChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func runMktemp(ctx context.Context, c *shell.Call) int {
	opts, args, status, ok := mktempSpec.parse(c, 1)
	if !ok {
		return status
	}
	var dir, dryRun, quiet, useDir, tOpt bool
	suffix, destDir := "", ""
	hasSuffix := false
	for _, o := range opts {
		switch o.Key {
		case "directory":
			dir = true
		case "dry-run":
			dryRun = true
		case "quiet":
			quiet = true
		case "suffix":
			suffix, hasSuffix = o.Value, true
		case "p", "tmpdir":
			useDir, destDir = true, o.Value
		case "t":
			useDir, tOpt = true, true
		}
	}
	if len(args) > 1 {
		return usage(c, fmt.Errorf("too many templates"), 1)
	}
	template := "tmp.XXXXXXXXXX"
	if len(args) == 1 {
		template = args[0]
	} else {
		useDir = true
	}
	if useDir && destDir == "" {
		destDir = c.Getenv("TMPDIR")
		if destDir == "" {
			destDir = "/tmp"
		}
	}
	if !hasSuffix {
		// A template's text after its last X is its suffix.
		if i := strings.LastIndexByte(template, 'X'); i >= 0 {
			suffix, template = template[i+1:], template[:i+1]
		}
	} else if !strings.HasSuffix(template, "X") {
		c.Errorf("with --suffix, template %s must end in X", fuQuote(template))
		return 1
	}
	if strings.Contains(suffix, "/") {
		c.Errorf("invalid suffix %s, contains directory separator", fuQuote(suffix))
		return 1
	}
	if useDir {
		switch {
		case tOpt && strings.Contains(template, "/"):
			c.Errorf("invalid template, %s, contains directory separator", fuQuote(template+suffix))
			return 1
		case strings.HasPrefix(template, "/"):
			c.Errorf("invalid template, %s; with --tmpdir, it may not be absolute", fuQuote(template+suffix))
			return 1
		}
		template = fuJoin(destDir, template)
	}
	nx := len(template) - len(strings.TrimRight(template, "X"))
	if nx < 3 {
		c.Errorf("too few X's in template %s", fuQuote(template+suffix))
		return 1
	}
	base := template[:len(template)-nx]
	for try := 0; try < 100; try++ {
		if ctx.Err() != nil {
			return 130
		}
		name := base + mktempRandom(nx) + suffix
		if dryRun {
			if _, err := c.FS.Lstat(c.Abs(name)); err == nil {
				continue
			}
			fmt.Fprintln(c.Stdout, name)
			return 0
		}
		var err error
		if dir {
			if err = c.FS.Mkdir(c.Abs(name), 0o700); err == nil {
				err = c.FS.Chmod(c.Abs(name), 0o700)
			}
		} else {
			var f interface{ Close() error }
			f, err = c.FS.OpenFile(c.Abs(name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
			if err == nil {
				f.Close()
				err = c.FS.Chmod(c.Abs(name), 0o600)
			}
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			if !quiet {
				kind := "file"
				if dir {
					kind = "directory"
				}
				c.Errorf("failed to create %s via template %s: %s", kind, fuQuote(template+suffix), fuErr(err))
			}
			return 1
		}
		fmt.Fprintln(c.Stdout, name)
		return 0
	}
	if !quiet {
		c.Errorf("failed to create file via template %s: %s", fuQuote(template+suffix), "File exists")
	}
	return 1
}

func mktempRandom(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		// 256 is not a multiple of 62; the slight bias does not matter
		// for unpredictable names, but avoid it anyway.
		for b[i] >= 248 {
			var one [1]byte
			rand.Read(one[:])
			b[i] = one[0]
		}
		b[i] = mktempChars[int(b[i])%len(mktempChars)]
	}
	return string(b)
}
