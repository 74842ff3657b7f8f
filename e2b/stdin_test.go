package e2b

import (
	"errors"
	"io"
	"testing"

	"rung.dev/rung"
)

func TestStdinPipe(t *testing.T) {
	p := newStdinPipe()
	done := make(chan []byte)
	go func() { // ends at the pipe's EOF
		b, _ := io.ReadAll(p)
		done <- b
	}()
	if err := p.write([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	if err := p.write([]byte("two\n")); err != nil {
		t.Fatal(err)
	}
	p.close()
	p.close() // idempotent
	if got := string(<-done); got != "one\ntwo\n" {
		t.Errorf("read %q, want \"one\\ntwo\\n\"", got)
	}
	if err := p.write([]byte("late")); !errors.Is(err, errStdinClosed) {
		t.Errorf("write after close = %v, want errStdinClosed", err)
	}

	full := newStdinPipe()
	if err := full.write(make([]byte, maxStdinBuffer)); err != nil {
		t.Fatal(err)
	}
	if err := full.write([]byte{1}); !errors.Is(err, rung.ErrLimit) {
		t.Errorf("write past the buffer = %v, want ErrLimit", err)
	}
}
