package awk

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"
)

// FuzzAwk runs arbitrary programs on a small input: the interpreter must
// report errors as statuses, never panic, and stop when ctx ends.
func FuzzAwk(f *testing.F) {
	for _, s := range []string{
		`{print $1}`, `BEGIN{x[1]=2; for (k in x) print k, x[k]}`, `{gsub(/a*/, "-"); print}`,
		`function f(a) {a[1]; return length(a)} {print f(z)}`, `BEGIN{printf "%*.*d|%c", 3, 2, 7, 65}`,
		`BEGIN{RS=""} {print NF}`, `{NF=3; $5="x"; print}`, `BEGIN{while (i++ < 3) print substr("abc", i)}`,
		`/a/,/b/{print NR}`, `BEGIN{getline x < "f"; print x}`, `{print > "/dev/null"}`, `BEGIN{split("a b", a); print a[1] a[2]}`,
	} {
		f.Add(s, "a b c\nd e\n\nf\n")
	}
	f.Fuzz(func(t *testing.T, prog, input string) {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		var out bytes.Buffer
		env := &Env{
			Name: "awk", Stdin: strings.NewReader(input), Stdout: &limitWriter{w: &out, n: 1 << 20}, Stderr: io.Discard,
			Open:   func(string) (io.ReadCloser, error) { return nil, io.ErrUnexpectedEOF },
			Create: nil,
		}
		env.Create = func(name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
			return nopCloser{io.Discard}, nil
		}
		Main(ctx, env, []string{prog})
	})
}

type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, io.ErrShortWrite
	}
	l.n -= len(p)
	return l.w.Write(p)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
