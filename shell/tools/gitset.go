package tools

import "rung.dev/rung/shell"

func addGit(m map[string]shell.Tool) {}
