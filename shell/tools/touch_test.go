package tools

import "testing"

func TestTouch(t *testing.T) {
	t.Parallel()
	files := map[string]string{"f": "data", "d/": ""}
	st := []string{"stat", "-c", "%n %y %x %s %F", "f", "new"}
	cases := []fuSeqCase{
		{name: "create", files: files, cmds: [][]string{{"touch", "new"}, {"ls"}}},
		{name: "create-many", files: files, cmds: [][]string{{"touch", "a", "b", "c"}, {"ls"}}},
		{name: "c-missing", files: files, cmds: [][]string{{"touch", "-c", "nope"}, {"ls"}}},
		{name: "no-create", files: files, cmds: [][]string{{"touch", "--no-create", "nope", "f"}, {"ls"}}},
		{name: "d-date", files: files, cmds: [][]string{{"touch", "-d", "2020-01-02 03:04:05", "f", "new"}, st}},
		{name: "d-iso-t", files: files, cmds: [][]string{{"touch", "-d", "2019-12-31T23:59:59", "f"}, {"ls", "-l", "--full-time", "f"}}},
		{name: "d-epoch", files: files, cmds: [][]string{{"touch", "-d", "@1600000000", "f"}, {"ls", "-l", "--full-time", "f"}}},
		{name: "d-epoch-frac", files: files, cmds: [][]string{{"touch", "--date=@1600000000.5", "f"}, {"ls", "-l", "--full-time", "f"}}},
		{name: "d-epoch-negative-frac", files: files, cmds: [][]string{{"touch", "--date=@-5.5", "f"}, {"stat", "-c", "%.9Y %Y", "f"}}},
		{name: "d-epoch-negative-small", files: files, cmds: [][]string{{"touch", "-d", "@-0.25", "f"}, {"stat", "-c", "%.9Y %Y", "f"}}},
		{name: "d-date-only", files: files, cmds: [][]string{{"touch", "-d", "2001-02-03", "f"}, {"ls", "-l", "--full-time", "f"}}},
		{name: "d-utc", files: files, cmds: [][]string{{"touch", "-d", "2001-02-03 04:05:06 UTC", "f"}, {"ls", "-l", "--full-time", "f"}}},
		{name: "d-relative", files: files, cmds: [][]string{
			{"touch", "-d", "3 days ago", "f"}, {"ls", "-l", "--time-style=+%Y-%m-%d", "f"},
			{"touch", "-d", "2 years ago", "f"}, {"ls", "-l", "--time-style=+%Y-%m-%d", "f"},
			{"touch", "-d", "yesterday", "f"}, {"ls", "-l", "--time-style=+%Y-%m-%d", "f"},
			{"touch", "-d", "1 month ago", "f"}, {"ls", "-l", "--time-style=+%Y-%m-%d", "f"},
			{"touch", "-d", "+2 weeks", "f"}, {"ls", "-l", "--time-style=+%Y-%m-%d", "f"},
			{"touch", "-d", "tomorrow", "f"}, {"ls", "-l", "--time-style=+%Y-%m", "f"},
		}},
		{name: "t-stamp", files: files, cmds: [][]string{{"touch", "-t", "202001020304.05", "f"}, {"ls", "-l", "--full-time", "f"}}},
		{name: "t-stamp-short", files: files, cmds: [][]string{{"touch", "-t", "9901020304", "f"}, {"ls", "-l", "--full-time", "f"}}},
		{name: "t-bad", files: files, cmds: [][]string{{"touch", "-t", "20x", "f"}}},
		{name: "m-only", files: files, setup: fuOldTimes, cmds: [][]string{{"touch", "-m", "-d", "2020-05-05", "f"}, {"stat", "-c", "%y %x", "f"}}},
		{name: "a-only", files: files, setup: fuOldTimes, cmds: [][]string{{"touch", "-a", "-d", "2020-05-05", "f"}, {"stat", "-c", "%y %x", "f"}}},
		{name: "time-mtime", files: files, setup: fuOldTimes, cmds: [][]string{{"touch", "--time=mtime", "-d", "2020-05-05", "f"}, {"stat", "-c", "%y %x", "f"}}},
		{name: "reference", files: files, setup: fuSetup(fuOldTimes, fuMtime("d", fuRecent)), cmds: [][]string{{"touch", "-r", "d", "f"}, {"stat", "-c", "%y", "f"}}},
		{name: "missing-dir", files: files, cmds: [][]string{{"touch", "nodir/x"}}},
		{name: "no-operand", files: files, cmds: [][]string{{"touch"}}},
		{name: "dangling-symlink", files: files, setup: fuSymlink("target", "l"), cmds: [][]string{{"touch", "l"}, {"ls"}}},
		{name: "fifo", files: files, setup: fuSetup(fuMkfifo("p"), fuOldTimes), cmds: [][]string{{"touch", "-d", "2020-01-01", "p"}, {"stat", "-c", "%y", "p"}}},
	}
	runDiffSeq(t, cases)
}
