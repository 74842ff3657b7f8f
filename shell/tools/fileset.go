package tools

import "rung.dev/rung/shell"

// addFiles registers the file tools: ls, cat, tee, touch, mkdir, rmdir, rm,
// cp, mv, ln, readlink, realpath, basename, dirname, stat, du, df, chmod,
// tree, file and mktemp.
func addFiles(m map[string]shell.Tool) {
	m["ls"] = shell.Tool{Run: runLs, Check: lsSpec.check}
}
