package tools

import (
	"context"
	"errors"
	"testing"
	"time"

	"rung.dev/rung/shell"
)

// TestTextCheck pins what the text tools' Check functions accept and
// refuse before anything runs.
func TestTextCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		argv []string
		ok   bool
	}{
		{[]string{"head", "-5", "f"}, true},
		{[]string{"head", "--bogus"}, false},
		{[]string{"tail", "+3", "f"}, true},
		{[]string{"tail", "-f", "f"}, false},
		{[]string{"tail", "-F", "f"}, false},
		{[]string{"sort", "-R"}, false},
		{[]string{"sort", "-k2,2R"}, false},
		{[]string{"sort", "--debug"}, false},
		{[]string{"sort", "-k2,2n", "-t,", "-u"}, true},
		{[]string{"seq", "-1", "1"}, true},
		{[]string{"seq", "-s", ",", "-w", "-5", "5"}, true},
		{[]string{"seq", "-f", "%a", "3"}, false},
		{[]string{"printf", "%a\n", "1"}, false},
		{[]string{"printf", "%%a %s\n", "1"}, true},
		{[]string{"date", "+%s"}, true},
		{[]string{"date", "010203042024"}, false},
		{[]string{"date", "-s", "now"}, false},
		{[]string{"wc", "--files0-from=x"}, true},
		{[]string{"wc", "--files0-from=-"}, false},
		{[]string{"wc", "--files0-from", shell.Unknown}, false},
		{[]string{"column", "-J"}, false},
		{[]string{"column", "-t", "-s,"}, true},
		{[]string{"od", "--endian=big"}, false},
		{[]string{"od", "-An", "-tx1z"}, true},
		{[]string{"xxd", "-ps", "-c", "4"}, true},
		{[]string{"xxd", "-a"}, false},
		{[]string{"hexdump", "-e", "x"}, false},
		{[]string{"split", "--filter=x"}, false},
		{[]string{"csplit", "-b", "%d", "f", "1"}, false},
		{[]string{"tac", "-r"}, false},
		{[]string{"fold", "-80"}, true},
		{[]string{"expand", "-4"}, true},
		{[]string{"env", "-S", "a b"}, false},
		{[]string{"env", "-i", "A=1", "sort", "-R"}, true},
		{[]string{"echo", "--help"}, false},
		{[]string{"test", "-f", "x"}, true},
		{[]string{"md5sum", "-c", "--strict"}, true},
		{[]string{"base64", "-d", "-w0"}, true},
	}
	all := All()
	for _, tc := range cases {
		tool, ok := all[tc.argv[0]]
		if !ok {
			t.Errorf("%s not registered", tc.argv[0])
			continue
		}
		var err error
		if tool.Check != nil {
			err = tool.Check(tc.argv[1:])
		}
		if (err == nil) != tc.ok {
			t.Errorf("Check(%q) = %v, want ok=%v", tc.argv, err, tc.ok)
		}
		if err != nil && !errors.Is(err, shell.ErrUnsupported) {
			t.Errorf("Check(%q) = %v, want an ErrUnsupported error", tc.argv, err)
		}
	}
}

// endless is an input that never ends (like a pipe from `yes`).
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = "ab\n"[i%3]
	}
	return len(p), nil
}

// TestTextCtx checks that tools reading an endless input stop once their
// context ends, with a non-zero status.
func TestTextCtx(t *testing.T) {
	t.Parallel()
	argvs := [][]string{{"wc"}, {"tr", "a", "b"}, {"cut", "-c1"}, {"sort"}, {"uniq", "-c"}, {"od", "-c"},
		{"base64"}, {"md5sum"}, {"tail", "-n", "1"}, {"head", "-n", "-1"}, {"tac"}, {"nl"}, {"fold"},
		{"paste", "-"}, {"expand"}, {"rev"}, {"xxd"}, {"hexdump", "-C"}}
	all := All()
	for _, argv := range argvs {
		tool, ok := all[argv[0]]
		if !ok {
			continue
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		done := make(chan int, 1)
		c := &shell.Call{Args: argv, Stdin: endless{}, Stdout: discardCounter{}, Stderr: discardCounter{}, Dir: "/"}
		go func() { done <- tool.Run(ctx, c) }()
		select {
		case st := <-done:
			if st == 0 {
				t.Errorf("%q on endless input after ctx end: status 0", argv)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("%q did not stop after its context ended", argv)
		}
		cancel()
	}
}
