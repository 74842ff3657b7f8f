package tools

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestDate(t *testing.T) {
	t.Parallel()
	d := func(name string, args ...string) toolCase {
		return toolCase{name: name, args: append([]string{"date"}, args...)}
	}
	all := "+%a|%A|%b|%B|%c|%C|%d|%D|%e|%F|%g|%G|%h|%H|%I|%j|%k|%l|%m|%M|%n|%N|%p|%P|%q|%r|%R|%s|%S|%t|%T|%u|%U|%V|%w|%W|%x|%X|%y|%Y|%z|%:z|%::z|%:::z|%Z|%%"
	setRef := func(t *testing.T, dir string) {
		ts := time.Unix(1234567890, 0)
		if err := os.Chtimes(filepath.Join(dir, "ref"), ts, ts); err != nil {
			t.Fatal(err)
		}
	}
	runDiff(t, toolCases{
		d("epoch", "-d", "@1700000000"),
		d("epoch-zero-all", "-d", "@0", all),
		d("epoch-all", "-d", "@1700000000", all),
		d("leap-all", "-d", "2024-02-29 13:05:09", all),
		d("newyear-all", "-d", "2021-01-01 23:59:59", all),
		d("yearend-all", "-d", "2024-12-30 12:00", all),
		d("iso-date", "-d", "2024-01-02"),
		d("iso-datetime", "-d", "2024-01-02 03:04:05", "+%s"),
		d("iso-T-Z", "-u", "-d", "2024-01-02T03:04:05Z", "-Iseconds"),
		d("offset", "-d", "2024-01-02 03:04:05 +0200", "-R"),
		d("offset-colon", "-d", "2024-01-02 03:04:05 -05:30", "+%F %T %z"),
		d("zone-name", "-d", "2024-03-10 12:00 EST"),
		d("frac", "-d", "@1.5", "+%s.%N"),
		d("frac-3N", "-d", "@1.123456789", "+%3N|%6N|%N"),
		d("month-name", "-d", "Jan 5 2024", "+%F"),
		d("day-month", "-d", "5 Jan 2024 10:00", "+%F_%T"),
		d("us-date", "-d", "03/15/2024", "+%F"),
		d("rel-day", "-d", "2024-01-02 +1 day", "+%F"),
		d("rel-month-overflow", "-d", "2024-01-31 1 month", "+%F"),
		d("rel-week-ago", "-d", "1 week ago 2024-01-10", "+%F"),
		d("rel-neg", "-d", "2024-01-10 -1 week", "+%F"),
		d("rel-hours", "-d", "2024-01-10 10:00 3 hours", "+%F %T"),
		d("rel-ago", "-d", "2024-01-10 2 days ago", "+%F"),
		d("time-pm", "-d", "2024-01-10 3:04pm", "+%T"),
		d("time-am", "-d", "2024-01-10 12:30am", "+%T"),
		d("I", "-I", "-d", "@0"),
		d("Ihours", "-Ihours", "-d", "@0"),
		d("Iminutes", "-Iminutes", "-d", "@0"),
		d("Ins", "--iso-8601=ns", "-d", "@1.25"),
		d("rfc3339", "--rfc-3339=seconds", "-d", "@1700000000"),
		d("rfc3339-ns", "--rfc-3339=ns", "-d", "@1700000000"),
		d("rfc3339-date", "--rfc-3339=date", "-d", "@1700000000"),
		d("R", "-R", "-d", "@1700000000"),
		d("u", "-u", "-d", "@1700000000"),
		d("flags", "-d", "@0", "+%-d|%_m|%^a|%#Z|%10Y|%-5d|%05e|%_H|%-j|%^B|%#a|%#p|%3S|%-N"),
		d("pad-more", "-d", "2024-01-05 03:04:05", "+%_d|%0e|%-H|%_5M|%08s|%-y|%_Y"),
		d("EO", "-d", "@0", "+%Ey|%Od|%EY"),
		d("unknown-conv", "-d", "@0", "+%J|%"),
		d("text", "-d", "@0", "+Today is %A."),
		d("invalid", "-d", "garbage"),
		d("invalid-month", "-d", "2024-13-01"),
		d("ref", "-r", "ref", "+%s %F"),
		d("ref-missing", "-r", "nope"),
		d("extra", "-d", "@0", "+%s", "x"),
		d("two-formats", "-R", "-d", "@0", "+%s"),
		d("weekday", "-d", "2024-01-10", "+%a %U %W %V"),
		d("negative-epoch", "-d", "@-86400", "+%F %T"),
		d("empty-format", "-d", "@0", "+"),
	}.withFiles(map[string]string{"ref": "x"}, setRef))
	tz := func(name, zone string, args ...string) toolCase {
		return toolCase{name: name, args: append([]string{"env", "TZ=" + zone, "date"}, args...)}
	}
	runDiff(t, []toolCase{
		tz("tz-ny", "America/New_York", "-d", "@1700000000"),
		tz("tz-ny-summer", "America/New_York", "-d", "@1690000000", "+%Z %z %:z"),
		tz("tz-posix", "UTC+3", "-d", "@0"),
		tz("tz-posix-east", "XYZ-5:30", "-d", "@0", "+%Z %z"),
		tz("tz-colon", ":Europe/Paris", "-d", "@0"),
		tz("tz-u", "America/New_York", "-u", "-d", "@0"),
		tz("tz-local-parse", "Asia/Tokyo", "-d", "2024-01-02 03:04:05", "+%s"),
	})
}

type toolCases []toolCase

func (cs toolCases) withFiles(files map[string]string, setup func(*testing.T, string)) []toolCase {
	for i := range cs {
		cs[i].files, cs[i].setup = files, setup
	}
	return cs
}
