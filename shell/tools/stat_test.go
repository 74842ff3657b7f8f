package tools

import "testing"

// statFrac gives files times with fractions of a second, and before
// the epoch.
func statFrac(t *testing.T, dir string) {
	fuRun(t, dir, "touch", "-d", "2024-05-06 07:08:09.123456789", "frac")
	fuRun(t, dir, "touch", "-d", "@-5.5", "neg")
	fuRun(t, dir, "touch", "-d", "@-0.25", "negfrac")
	fuRun(t, dir, "touch", "-d", "@-7", "negwhole")
}

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
		{name: "precision-times", args: []string{"stat", "-c", "%.3Y|%.9Y|%.Y|%.0Y|%.12Y|%.1X|%.3Z", "f", "frac", "d"}, files: files, setup: statFrac},
		{name: "precision-width", args: []string{"stat", "-c", "[%20.3Y][%-20.3Y][%020.3Y][%+.3Y][% .3Y][%#.3Y][%'.3Y][%-+25.6Y][%05.0Y]", "frac"}, files: files, setup: statFrac},
		{name: "precision-negative", args: []string{"stat", "-c", "%.3Y|%Y|%.0Y|%12.2Y|%012.2Y|%+.1Y", "neg", "negfrac", "negwhole"}, files: files, setup: statFrac},
		{name: "precision-others", args: []string{"stat", "-c", "[%.5s][%.2n][%.3a][%.6a][%.3A][%.1F][%8.3s][%.3h][%.0s]", "f", "e", "d"}, files: files, setup: setup},
		{name: "precision-printf", args: []string{"stat", "--printf", "%.3Y\n%.3X\n", "frac"}, files: files, setup: statFrac},
		{name: "unknown-letters", args: []string{"stat", "-c", "%q|%5q|%-5q|%c|%l|%S|%k|%j|%v|%E|%e|%Q|%M|%J|%K|%O|%P|%V|%p|%H|%Hq|%Ls|%Hs|%Lx", "f"}, files: files, setup: setup},
		{name: "w-W", args: []string{"stat", "-c", "%w %W", "f"}, files: files, setup: setup, known: birth},
	}
	runSame(t, cases)
}
