package tools

import (
	"io"

	"rung.dev/rung/shell"
)

// fuAsk asks as GNU's -i does: prompt on standard error, then one line
// of standard input, read a byte at a time so the rest stays for the
// commands after; the answer is yes when it starts with y or Y (the C
// locale's rpmatch). End of input is no.
func fuAsk(c *shell.Call, prompt string) bool {
	io.WriteString(c.Stderr, prompt)
	var b [1]byte
	first, yes := true, false
	for {
		n, err := c.Stdin.Read(b[:])
		if n == 1 {
			if b[0] == '\n' {
				return yes
			}
			if first {
				yes = b[0] == 'y' || b[0] == 'Y'
			}
			first = false
		}
		if err != nil {
			return yes
		}
	}
}
