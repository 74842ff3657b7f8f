package tools

import "testing"

func TestLn(t *testing.T) {
	t.Parallel()
	files := map[string]string{"f": "x", "g": "y", "d/sub/": "", "e/": ""}
	ls := []string{"ls", "-lR", "--time-style=+"}
	links := fuSetup(fuSymlink("d", "ld"), fuSymlink("f", "lf"))
	cases := []fuSeqCase{
		{name: "s", files: files, cmds: [][]string{{"ln", "-s", "f", "s"}, ls}},
		{name: "s-dangling", files: files, cmds: [][]string{{"ln", "-s", "nowhere", "s"}, ls}},
		{name: "s-one-operand", files: files, cmds: [][]string{{"ln", "-s", "d/sub"}, ls}},
		{name: "hard", files: files, cmds: [][]string{{"ln", "f", "h"}, {"stat", "-c", "%h %n", "f", "h"}}},
		{name: "hard-dir", files: files, cmds: [][]string{{"ln", "d", "h"}}},
		{name: "hard-missing", files: files, cmds: [][]string{{"ln", "nope", "h"}}},
		{name: "exists", files: files, cmds: [][]string{{"ln", "-s", "f", "g"}}},
		{name: "exists-hard", files: files, cmds: [][]string{{"ln", "f", "g"}}},
		{name: "force", files: files, cmds: [][]string{{"ln", "-sf", "f", "g"}, ls}},
		{name: "force-hard", files: files, cmds: [][]string{{"ln", "-f", "f", "g"}, {"stat", "-c", "%h %n", "f", "g"}}},
		{name: "force-same", files: files, cmds: [][]string{{"ln", "-f", "f", "f"}}},
		{name: "into-dir", files: files, cmds: [][]string{{"ln", "-s", "../f", "e"}, ls}},
		{name: "many-into-dir", files: files, cmds: [][]string{{"ln", "-s", "/workspace/f", "/workspace/g", "e"}, {"ls", "e"}}},
		{name: "v", files: files, cmds: [][]string{{"ln", "-sv", "f", "s"}}},
		{name: "v-hard", files: files, cmds: [][]string{{"ln", "-v", "f", "h"}}},
		{name: "r", files: files, cmds: [][]string{{"ln", "-sr", "f", "d/sub/rel"}, ls}},
		{name: "r-through-link", files: files, setup: links, cmds: [][]string{{"ln", "-sr", "lf", "d/sub/rel"}, ls}},
		{name: "r-no-s", files: files, cmds: [][]string{{"ln", "-r", "f", "x"}}},
		{name: "n-link-to-dir", files: files, setup: links, cmds: [][]string{{"ln", "-sfn", "e", "ld"}, ls}},
		{name: "no-n-link-to-dir", files: files, setup: links, cmds: [][]string{{"ln", "-sf", "e", "ld"}, ls}},
		{name: "T", files: files, cmds: [][]string{{"ln", "-sT", "f", "e"}}},
		{name: "t", files: files, cmds: [][]string{{"ln", "-s", "-t", "e", "../f", "../g"}, ls}},
		{name: "not-dir", files: files, cmds: [][]string{{"ln", "-s", "f", "g", "x"}}},
		{name: "no-args", files: files, cmds: [][]string{{"ln"}}},
		{name: "hard-symlink", files: files, setup: links, cmds: [][]string{{"ln", "lf", "h"}, ls}},
	}
	runDiffSeq(t, cases)
}
