package tools

import "testing"

func TestColumn(t *testing.T) {
	t.Parallel()
	words := "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n"
	f := map[string]string{"t": "a b c\nlonger x\n\nz  y\n", "csv": "a,b,,c\nxx,y\n", "w": words,
		"wide": "é日 x\nab y\n", "lead": "  a b\nc d \n", "long": txRepeat("a", 79) + "\nb\n", "empty": "",
		"many": txRepeat("word\n", 40), "tabs": "a\tb\nccc\td\n"}
	c := func(name string, args ...string) toolCase { return toolCase{name: name, args: args, files: f} }
	runDiff(t, []toolCase{
		c("t", "column", "-t", "t"),
		c("t-s", "column", "-t", "-s,", "csv"),
		c("t-s-space", "column", "-t", "-s", " ", "t"),
		c("t-o", "column", "-t", "-o", "|", "t"),
		c("t-s-o", "column", "-t", "-s,", "-o", " | ", "csv"),
		c("t-wide", "column", "-t", "wide"),
		c("t-lead", "column", "-t", "lead"),
		c("t-tabs", "column", "-t", "tabs"),
		c("t-empty", "column", "-t", "empty"),
		c("fill", "column", "w"),
		c("fill-x", "column", "-x", "-c", "30", "w"),
		c("fill-c", "column", "-c", "10", "w"),
		c("fill-c40", "column", "-c", "40", "w"),
		c("fill-long", "column", "long"),
		c("fill-many", "column", "many"),
		c("fill-x-many", "column", "-x", "many"),
		c("fill-empty", "column", "empty"),
		c("stdin", "column", "-t"),
		c("missing", "column", "nope"),
		{name: "refused", args: []string{"column", "-J", "t"}, files: f, known: "JSON output is refused (exit 125)"},
	})
}
