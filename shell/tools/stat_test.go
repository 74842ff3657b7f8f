package tools

import "testing"

func TestStat(t *testing.T) {
	t.Parallel()
	files := map[string]string{"f": "hello", "e": "", "d/x": "1", "sp ace": "s"}
	setup := fuSetup(fuSymlink("f", "lnk"), fuSymlink("nowhere", "dangle"), fuMkfifo("p"), fuSocket("s"), fuSymlink("loop", "loop"), fuChmod("e", 0o4755))
	birth := "GNU prints the birth time from statx; the file view has stat only"
	cases := []toolCase{
		{name: "default", args: []string{"stat", "f"}, files: files, setup: setup, known: birth},
		{name: "default-no-birth", args: []string{"stat", "-c", "  File: %N%n  Size: %-10s\tBlocks: %-10b IO Block: %-6o %F", "f", "d", "lnk", "p"}, files: files, setup: setup},
		{name: "terse", args: []string{"stat", "-t", "f", "d"}, files: files, setup: setup, known: birth},
		{name: "format-basic", args: []string{"stat", "-c", "%n %s %F %a %A", "f", "e", "d", "lnk", "p", "s"}, files: files, setup: setup},
		{name: "format-ids", args: []string{"stat", "-c", "%u %U %g %G %h %i %d %D %Hd %Ld %f %t %T %b %B %o", "f", "d"}, files: files, setup: setup},
		{name: "format-times", args: []string{"stat", "-c", "%x|%y|%z|%X|%Y|%Z", "f", "d", "lnk"}, files: files, setup: setup},
		{name: "format-N", args: []string{"stat", "-c", "%N", "f", "lnk", "dangle", "sp ace"}, files: files, setup: setup},
		{name: "format-N-quoting", args: []string{"stat", "-c", "%N", "q'uote", "x$y", "m'i$x", "a\nb", "c\x01d", "t\tb", "é"},
			files: map[string]string{"q'uote": "", "x$y": "", "m'i$x": "", "a\nb": "", "c\x01d": "", "t\tb": "", "é": ""}},
		{name: "format-width", args: []string{"stat", "-c", "[%10s][%-10s][%010s][%5h][%-8U]", "f", "d"}, files: files, setup: setup},
		{name: "format-percent", args: []string{"stat", "-c", "100%% %n", "f"}, files: files, setup: setup},
		{name: "printf", args: []string{"stat", "--printf", "%n\\t%s\\n", "f", "e"}, files: files, setup: setup},
		{name: "printf-no-newline", args: []string{"stat", "--printf=%s", "f"}, files: files, setup: setup},
		{name: "L", args: []string{"stat", "-L", "-c", "%n %F %s %i", "lnk"}, files: files, setup: setup},
		{name: "L-dangling", args: []string{"stat", "-L", "-c", "%n", "dangle"}, files: files, setup: setup},
		{name: "loop", args: []string{"stat", "-c", "%n %F", "loop"}, files: files, setup: setup},
		{name: "loop-L", args: []string{"stat", "-L", "loop"}, files: files, setup: setup},
		{name: "missing", args: []string{"stat", "-c", "%n", "nope", "f"}, files: files, setup: setup},
		{name: "no-operand", args: []string{"stat"}, files: files, setup: setup},
		{name: "setuid", args: []string{"stat", "-c", "%a %A", "e"}, files: files, setup: setup},
		{name: "w-W", args: []string{"stat", "-c", "%w %W", "f"}, files: files, setup: setup, known: birth},
	}
	runSame(t, cases)
}
