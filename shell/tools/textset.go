package tools

import "rung.dev/rung/shell"

func addText(m map[string]shell.Tool) {}
