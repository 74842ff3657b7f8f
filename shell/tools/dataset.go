package tools

import "rung.dev/rung/shell"

// addData registers the data tools: awk (package awk, mawk-compatible),
// jq (gojq with jq 1.6's CLI), yq, tar, gzip, gunzip and zcat.
func addData(m map[string]shell.Tool) {
	m["awk"] = awkTool()
	m["jq"] = jqTool()
	m["gzip"] = gzipTool("gzip")
	m["gunzip"] = gzipTool("gunzip")
	m["zcat"] = gzipTool("zcat")
	m["tar"] = tarTool()
}
