package tools

import "rung.dev/rung/shell"

func addData(m map[string]shell.Tool) {}
