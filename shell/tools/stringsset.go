package tools

import "rung.dev/rung/shell"

// addStrings registers strings (strings.go).
func addStrings(m map[string]shell.Tool) {
	m["strings"] = shell.Tool{Run: runStrings, Check: stringsCheck}
}
