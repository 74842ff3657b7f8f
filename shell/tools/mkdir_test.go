package tools

import "testing"

func TestMkdir(t *testing.T) {
	t.Parallel()
	files := map[string]string{"f": "x", "d/": ""}
	ls := []string{"ls", "-lR", "--time-style=+"}
	cases := []fuSeqCase{
		{name: "one", files: files, cmds: [][]string{{"mkdir", "new"}, ls}},
		{name: "many", files: files, cmds: [][]string{{"mkdir", "a", "b"}, ls}},
		{name: "exists", files: files, cmds: [][]string{{"mkdir", "d"}}},
		{name: "exists-file", files: files, cmds: [][]string{{"mkdir", "f"}}},
		{name: "p-exists", files: files, cmds: [][]string{{"mkdir", "-p", "d"}}},
		{name: "p-file", files: files, cmds: [][]string{{"mkdir", "-p", "f"}}},
		{name: "p-under-file", files: files, cmds: [][]string{{"mkdir", "-p", "f/x"}}},
		{name: "p-deep", files: files, cmds: [][]string{{"mkdir", "-p", "a/b/c"}, ls}},
		{name: "pv", files: files, cmds: [][]string{{"mkdir", "-pv", "a/b/c", "d/e"}, ls}},
		{name: "v", files: files, cmds: [][]string{{"mkdir", "-v", "x", "y"}}},
		{name: "no-parent", files: files, cmds: [][]string{{"mkdir", "a/b"}}},
		{name: "m-octal", files: files, cmds: [][]string{{"mkdir", "-m", "700", "x"}, ls}},
		{name: "m-symbolic", files: files, cmds: [][]string{{"mkdir", "-m", "u=rwx,g=rx,o=", "x"}, ls}},
		{name: "m-plus", files: files, cmds: [][]string{{"mkdir", "--mode=+t", "x"}, ls}},
		{name: "m-sticky", files: files, cmds: [][]string{{"mkdir", "-m", "1777", "x"}, ls}},
		{name: "p-m", files: files, cmds: [][]string{{"mkdir", "-p", "-m", "700", "h/i"}, ls}},
		{name: "m-bad", files: files, cmds: [][]string{{"mkdir", "-m", "99", "x"}}},
		{name: "trailing-slash", files: files, cmds: [][]string{{"mkdir", "x/"}, ls}},
		{name: "p-dotdot", files: files, cmds: [][]string{{"mkdir", "-p", "a/../b/./c"}, ls}},
		{name: "no-operand", files: files, cmds: [][]string{{"mkdir"}}},
	}
	runDiffSeq(t, cases)
}
