package tools

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"rung.dev/rung/shell"
)

// This file implements git log's commit filters: --grep, --author and
// --committer (with -i, -E, -F, --all-match, --invert-grep), the pickaxe
// -S, and --since/--until with the date forms whose meaning we can match
// exactly. What git's approxidate would read differently is refused.

// gitLogFilter is the parsed filter options of one git log.
type gitLogFilter struct {
	greps      []*grepMatcher // --grep, matched against the message lines
	authors    []*grepMatcher // --author, matched against "Name <email>"
	committers []*grepMatcher
	allMatch   bool
	invert     bool
	pickaxe    string // -S; "" when not given
	since      int64  // committer time lower bound; 0 when not given
	until      int64  // committer time upper bound; 0 when not given
	hasUntil   bool
}

// active reports whether any message or date filter is set.
func (f *gitLogFilter) active() bool {
	return len(f.greps)+len(f.authors)+len(f.committers) > 0 || f.invert
}

// gitDateForm lists the --since/--until values whose meaning under git's
// date parser we reproduce: ISO dates with an optional time, and "N units
// ago" for units of fixed length.
var (
	gitDateOnly = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})$`)
	gitDateTime = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?$`)
	gitDateAgo  = regexp.MustCompile(`^(\d{1,6}) (second|minute|hour|day|week)s? ago$`)
)

var gitAgoUnit = map[string]int64{"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400}

// gitDateSupported reports whether v is a date form [gitParseDate] reads
// as git does (the zone is checked again at run time).
func gitDateSupported(v string) bool {
	_, ok := gitParseDate(v, time.Now(), time.UTC)
	return ok
}

// gitParseDate reads a --since/--until value as git's approxidate does
// for the supported forms: a time without a zone is local time, a date
// without a time takes the current time of day (approxidate starts from
// "now" and the date only replaces the day), and "N units ago" subtracts
// seconds from now. ok is false for other forms, and for a date-only form
// whose zone offset differs from now's (mktime would keep now's DST flag).
func gitParseDate(v string, now time.Time, loc *time.Location) (int64, bool) {
	now = now.In(loc)
	if m := gitDateAgo.FindStringSubmatch(v); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return now.Unix() - n*gitAgoUnit[m[2]], true
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	if m := gitDateTime.FindStringSubmatch(v); m != nil {
		y, mo, d, h, mi, s := atoi(m[1]), atoi(m[2]), atoi(m[3]), atoi(m[4]), atoi(m[5]), atoi(m[6])
		if !gitDateValid(y, mo, d) || h > 23 || mi > 59 || s > 59 {
			return 0, false
		}
		return time.Date(y, time.Month(mo), d, h, mi, s, 0, loc).Unix(), true
	}
	if m := gitDateOnly.FindStringSubmatch(v); m != nil {
		y, mo, d := atoi(m[1]), atoi(m[2]), atoi(m[3])
		if !gitDateValid(y, mo, d) {
			return 0, false
		}
		t := time.Date(y, time.Month(mo), d, now.Hour(), now.Minute(), now.Second(), 0, loc)
		if _, off := t.Zone(); off != gitZoneOffset(now) {
			return 0, false
		}
		return t.Unix(), true
	}
	return 0, false
}

func gitZoneOffset(t time.Time) int { _, off := t.Zone(); return off }

// gitDateValid accepts the dates git's parser takes literally: years it
// reads as four digits and days that exist in the month (git would
// normalise 2023-02-30; we refuse it).
func gitDateValid(y, mo, d int) bool {
	if y < 1970 || y >= 2100 || mo < 1 || mo > 12 || d < 1 {
		return false
	}
	return d <= time.Date(y, time.Month(mo)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// gitParseLogFilter reads the filter options; on failure it has printed
// git's error or refused (see [gitExitStatus]).
func gitParseLogFilter(g *gitCtx, opts []Opt) (*gitLogFilter, bool) {
	f := &gitLogFilter{}
	mode, icase := byte('G'), false
	var greps, authors, committers []string
	for _, o := range opts {
		switch o.Key {
		case "grep":
			greps = append(greps, o.Value)
		case "author":
			authors = append(authors, o.Value)
		case "committer":
			committers = append(committers, o.Value)
		case "regexp-ignore-case":
			icase = true
		case "extended-regexp":
			mode = 'E'
		case "fixed-strings":
			mode = 'F'
		case "basic-regexp":
			mode = 'G'
		case "all-match":
			f.allMatch = true
		case "invert-grep":
			f.invert = true
		case "S":
			f.pickaxe = o.Value
		case "since", "after", "until", "before":
			t, ok := gitParseDate(o.Value, time.Now(), fuLocation(g.c))
			if !ok {
				g.c.Fail("git log date " + strconv.Quote(o.Value))
				return nil, false
			}
			if o.Key == "since" || o.Key == "after" {
				f.since = t
			} else {
				f.until, f.hasUntil = t, true
			}
		}
	}
	if f.invert && f.allMatch {
		g.c.Fail("git log --invert-grep with --all-match")
		return nil, false
	}
	if f.pickaxe != "" && icase {
		g.c.Fail("git log -S with -i")
		return nil, false
	}
	var ok bool
	compile := func(pats []string) []*grepMatcher {
		var out []*grepMatcher
		for _, p := range pats {
			m, _, err := newGrepMatcher(&grepConfig{mode: mode, patterns: []string{p}, icase: icase, eol: '\n'})
			if err != nil {
				g.fatal("command line, '%s': %v", p, err)
				ok = false
				return nil
			}
			out = append(out, m)
		}
		return out
	}
	ok = true
	f.greps = compile(greps)
	f.authors = compile(authors)
	f.committers = compile(committers)
	return f, ok
}

// gitCheckLogFilter is the static part of the filter refusals: date
// forms we do not read as git does, and option combinations not proven.
func gitCheckLogFilter(opts []Opt) error {
	var invert, allMatch, icase, pickaxe bool
	for _, o := range opts {
		switch o.Key {
		case "since", "after", "until", "before":
			if !gitDateSupported(o.Value) && !strings.Contains(o.Value, shell.Unknown) {
				return fmt.Errorf("--%s=%q (only YYYY-MM-DD[ HH:MM[:SS]] and \"N seconds|minutes|hours|days|weeks ago\")", o.Key, o.Value)
			}
		case "invert-grep":
			invert = true
		case "all-match":
			allMatch = true
		case "regexp-ignore-case":
			icase = true
		case "S":
			pickaxe = true
			if o.Value == "" {
				return fmt.Errorf("-S with an empty string")
			}
		}
	}
	if invert && allMatch {
		return fmt.Errorf("--invert-grep with --all-match")
	}
	if pickaxe && icase {
		return fmt.Errorf("-S with -i")
	}
	return nil
}

// keepDate reports whether cm passes --until.
func (f *gitLogFilter) keepDate(cm *object.Commit) bool {
	return !f.hasUntil || cm.Committer.When.Unix() <= f.until
}

// matchMessage applies --grep/--author/--committer as git combines them:
// the message patterns are OR'ed (all required with --all-match, none
// allowed with --invert-grep), each header field's patterns are OR'ed,
// and the parts are AND'ed. The message is matched line by line,
// starting with the empty line that ends the header, as git's grep does.
func (f *gitLogFilter) matchMessage(cm *object.Commit) bool {
	if !gitAnyMatch(f.authors, gitIdent(cm.Author)) || !gitAnyMatch(f.committers, gitIdent(cm.Committer)) {
		return false
	}
	if len(f.greps) == 0 {
		return true
	}
	lines := append([]string{""}, strings.Split(strings.TrimSuffix(cm.Message, "\n"), "\n")...)
	any, all := false, true
	for _, m := range f.greps {
		hit := false
		for _, l := range lines {
			if m.lineMatches([]byte(l)) {
				hit = true
				break
			}
		}
		any = any || hit
		all = all && hit
	}
	switch {
	case f.invert:
		return !any
	case f.allMatch:
		return all
	}
	return any
}

// gitIdent is the part of an author or committer header git's --author
// sees: the timestamp is stripped.
func gitIdent(s object.Signature) string { return s.Name + " <" + s.Email + ">" }

func gitAnyMatch(ms []*grepMatcher, s string) bool {
	if len(ms) == 0 {
		return true
	}
	for _, m := range ms {
		if m.lineMatches([]byte(s)) {
			return true
		}
	}
	return false
}

// pickaxeFilter keeps the changes whose two sides hold a different number
// of (non-overlapping) occurrences of f.pickaxe, binary files included as
// git 2.39 does. refuse is set when the answer could depend on git's
// inexact rename detection, which may pair a deleted and an added file we
// leave apart: no other change matches, and every deleted or added file
// that contains the string has a counterpart on the other side with the
// same count (paired, the two would cancel out).
func (g *gitCtx) pickaxeFilter(f *gitLogFilter, chs []gitFileChange) (kept []gitFileChange, refuse bool, err error) {
	counts := map[byte]map[int]bool{'A': {}, 'D': {}}
	var loose [][2]int // status, count of added/deleted files holding the string
	determined := false
	for i := range chs {
		fc := &chs[i]
		if err := g.load(fc, nil); err != nil {
			return nil, false, err
		}
		before := strings.Count(string(fc.oldData), f.pickaxe)
		after := strings.Count(string(fc.newData), f.pickaxe)
		if before != after {
			kept = append(kept, *fc)
		}
		switch fc.status {
		case 'A':
			counts['A'][after] = true
			if after > 0 {
				loose = append(loose, [2]int{'A', after})
			}
		case 'D':
			counts['D'][before] = true
			if before > 0 {
				loose = append(loose, [2]int{'D', before})
			}
		default:
			determined = determined || before != after
		}
	}
	if determined || len(loose) == 0 {
		return kept, false, nil
	}
	for _, l := range loose {
		other := byte('A')
		if l[0] == 'A' {
			other = 'D'
		}
		if !counts[other][l[1]] {
			return kept, false, nil
		}
	}
	return kept, true, nil
}
