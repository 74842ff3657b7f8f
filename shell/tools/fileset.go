package tools

import "rung.dev/rung/shell"

func addFiles(m map[string]shell.Tool) {}
