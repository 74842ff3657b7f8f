package tools

import (
	"testing"
	"time"
)

// TestFindNewerXY compares -newerXY (a date, or another file's times)
// with GNU find.
func TestFindNewerXY(t *testing.T) {
	t.Parallel()
	files := map[string]string{"t/a": "", "t/b": "", "t/c": ""}
	day := func(s string) time.Time {
		d, err := time.Parse("2006-01-02", s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	setup := fuSetup(fuMtime("t/a", day("2019-06-01")), fuMtime("t/b", day("2023-06-01")), fuMtime("t/c", day("2021-01-01")))
	cases := []toolCase{
		{name: "mt", args: []string{"find", "t", "-type", "f", "-newermt", "2020-01-01"}},
		{name: "not-mt", args: []string{"find", "t", "-type", "f", "!", "-newermt", "2020-01-01"}},
		{name: "mt-time", args: []string{"find", "t", "-type", "f", "-newermt", "2021-01-01 00:00:00"}},
		{name: "mt-iso", args: []string{"find", "t", "-type", "f", "-newermt", "2020-12-31T23:59:59Z"}},
		{name: "mt-epoch", args: []string{"find", "t", "-type", "f", "-newermt", "@1600000000"}},
		{name: "mm", args: []string{"find", "t", "-type", "f", "-newermm", "t/c"}},
		{name: "mm-missing", args: []string{"find", "t", "-newermm", "nosuch"}},
		{name: "mt-missing-arg", args: []string{"find", "t", "-newermt"}},
	}
	for i := range cases {
		cases[i].files, cases[i].setup = files, setup
	}
	runDiff(t, cases)
}
