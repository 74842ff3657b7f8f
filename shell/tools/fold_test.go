package tools

import "testing"

func TestTacRevNl(t *testing.T) {
	t.Parallel()
	f := map[string]string{"f": "a\nb\nc\n", "nonl": "a\nb\nc", "utf": "abc\nhé日本\n\n", "bad": "ok\n\xffx\nlater\n",
		"sep": "a:b:c:", "sep2": "a:b:c", "body": "x\n\n\ny\nfoo\n\n", "pages": "h\n\\:\\:\\:\nhead\n\\:\\:\nbody\n\n\\:\nfoot\n\\:\\:\\:\nh2\n\\:\\:\nb2\n"}
	c := func(name string, args ...string) toolCase { return toolCase{name: name, args: args, files: f} }
	runDiff(t, []toolCase{
		c("tac", "tac", "f"),
		c("tac-nonl", "tac", "nonl"),
		c("tac-multi", "tac", "f", "nonl"),
		c("tac-s", "tac", "-s:", "sep"),
		c("tac-s-nonl", "tac", "-s", ":", "sep2"),
		c("tac-b", "tac", "-b", "-s:", "sep2"),
		c("tac-b-newline", "tac", "-b", "f"),
		c("tac-multichar", "tac", "-s", "b:", "sep"),
		c("tac-missing", "tac", "nope"),
		c("tac-stdin", "tac"),
		c("rev", "rev", "f"),
		c("rev-utf", "rev", "utf"),
		c("rev-nonl", "rev", "nonl"),
		c("rev-bad", "rev", "bad"),
		c("rev-missing", "rev", "nope", "f"),
		c("nl", "nl", "body"),
		c("nl-ba", "nl", "-ba", "body"),
		c("nl-bn", "nl", "-bn", "body"),
		c("nl-bp", "nl", "-bp^f", "body"),
		c("nl-format", "nl", "-nln", "-w3", "-s|", "body"),
		c("nl-rz", "nl", "-nrz", "-w4", "body"),
		c("nl-v-i", "nl", "-v5", "-i2", "body"),
		c("nl-l", "nl", "-ba", "-l2", "body"),
		c("nl-pages", "nl", "pages"),
		c("nl-pages-styles", "nl", "-ha", "-fa", "pages"),
		c("nl-pages-p", "nl", "-p", "pages"),
		c("nl-d", "nl", "-d", "x", "body"),
		c("nl-sep-empty", "nl", "-s", "", "f"),
		c("nl-nonl", "nl", "nonl"),
		c("nl-bad-style", "nl", "-bq", "f"),
		c("nl-bad-format", "nl", "-n", "xx", "f"),
		c("nl-multi", "nl", "f", "nonl"),
	})
}

func TestPasteFoldExpand(t *testing.T) {
	t.Parallel()
	f := map[string]string{"a": "1\n2\n3\n", "b": "x\ny\n", "c": "only\n", "nonl": "p\nq",
		"long":   "The quick brown fox jumps over the lazy dog and keeps running far away\nshort\n\tTabbed line that is long enough to wrap around\n",
		"tabs":   "a\tb\tc\n\tlead\n        eight\n  two\tx\n12345678\t9\nab\b\tc\n",
		"spaces": "        x\n    y       z\nabcdefg h\n                 long\n \t a\n"}
	c := func(name string, args ...string) toolCase { return toolCase{name: name, args: args, files: f} }
	runDiff(t, []toolCase{
		c("paste", "paste", "a", "b"),
		c("paste-three", "paste", "a", "b", "c"),
		c("paste-d", "paste", "-d,", "a", "b"),
		c("paste-d-cycle", "paste", "-d,:", "a", "b", "c"),
		c("paste-d-escapes", "paste", "-d", "\\t\\n", "a", "b"),
		c("paste-d-zero", "paste", "-d", "\\0", "a", "b"),
		c("paste-s", "paste", "-s", "a", "b"),
		c("paste-s-d", "paste", "-s", "-d,", "a"),
		c("paste-nonl", "paste", "nonl", "a"),
		c("paste-stdin", "paste", "-", "a"),
		c("paste-stdin-twice", "paste", "-", "-"),
		c("paste-missing", "paste", "a", "nope"),
		c("paste-empty-d", "paste", "-d", "", "a", "b"),
		c("paste-bad-d", "paste", "-d", "\\", "a"),
		c("fold", "fold", "long"),
		c("fold-w", "fold", "-w", "20", "long"),
		c("fold-s", "fold", "-s", "-w", "20", "long"),
		c("fold-b", "fold", "-b", "-w", "10", "tabs"),
		c("fold-tabs", "fold", "-w", "10", "tabs"),
		c("fold-obsolete", "fold", "-15", "long"),
		c("fold-bad", "fold", "-w", "0", "long"),
		c("fold-nonl", "fold", "-w1", "nonl"),
		c("expand", "expand", "tabs"),
		c("expand-t4", "expand", "-t", "4", "tabs"),
		c("expand-list", "expand", "-t", "2,5,9", "tabs"),
		c("expand-i", "expand", "-i", "tabs"),
		c("expand-obsolete", "expand", "-3", "tabs"),
		c("expand-slash", "expand", "-t", "2,/5", "tabs"),
		c("expand-plus", "expand", "-t", "2,+5", "tabs"),
		c("expand-bad", "expand", "-t", "x", "tabs"),
		c("expand-desc", "expand", "-t", "5,3", "tabs"),
		c("unexpand", "unexpand", "spaces"),
		c("unexpand-a", "unexpand", "-a", "spaces"),
		c("unexpand-t4", "unexpand", "-t4", "spaces"),
		c("unexpand-first-only", "unexpand", "-t4", "--first-only", "spaces"),
		c("unexpand-tabs", "unexpand", "-a", "tabs"),
		c("unexpand-list", "unexpand", "-t", "3,6", "spaces"),
	})
}
