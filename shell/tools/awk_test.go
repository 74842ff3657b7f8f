package tools

import "testing"

// TestAwkTool runs awk through the tool adapter (files through the
// sandbox view, commands through c.Exec); the language itself is tested
// against mawk in package awk.
func TestAwkTool(t *testing.T) {
	files := map[string]string{"in.txt": "b 2\na 1\nc 3\n", "prog.awk": "{ s += $2 } END { print s }\n", "dir/": ""}
	ac := func(name string, args ...string) toolCase {
		return toolCase{name: name, args: append([]string{"awk"}, args...), files: files}
	}
	runDiffParallel(t, []toolCase{
		ac("file operand", "{print $1}", "in.txt"),
		ac("progfile", "-f", "prog.awk", "in.txt"),
		ac("missing file", "{print}", "nope.txt"),
		ac("directory operand", "{print}", "dir"),
		ac("write file", "{print $1 > \"out.txt\"}", "in.txt"),
		ac("append file", "{print >> \"in.txt\"}", "in.txt"),
		ac("getline file", "BEGIN{while ((getline l < \"in.txt\") > 0) n++; print n}"),
		ac("close reread", "BEGIN{print \"x\" > \"t.txt\"; close(\"t.txt\"); getline y < \"t.txt\"; print y}"),
		ac("dev stdout", "BEGIN{print \"o\" > \"/dev/stdout\"}"),
		ac("ENVIRON", "BEGIN{print ENVIRON[\"TZ\"]}"),
		ac("-v", "-v", "x=3", "BEGIN{print x * 2}"),
		ac("-F", "-F", " ", "{print $2}", "in.txt"),
		ac("syntax error", "{"),
		ac("pipe to awk", "{print | \"awk '{print NR}'\"}", "in.txt"),
		ac("system awk", "BEGIN{system(\"awk 'BEGIN{print 7}'\")}"),
		ac("cmd getline", "BEGIN{\"awk 'BEGIN{print 5}'\" | getline v; print v + 1}"),
	}, 4)
}
