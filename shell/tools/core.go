package tools

import "rung.dev/rung/shell"

func addCore(m map[string]shell.Tool) {}
