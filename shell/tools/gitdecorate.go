package tools

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// This file holds log's --date formats and --decorate names.

// gitDateFormats are the --date formats that do not depend on the
// local zone: each prints the time in the zone it was recorded with, or
// (relative) against the current time as git does at its run. human,
// local, *-local and format:... are refused by the check.
var gitDateFormats = map[string]func(t time.Time) string{
	"default":        gitDate,
	"iso":            func(t time.Time) string { return t.Format("2006-01-02 15:04:05 -0700") },
	"iso8601":        func(t time.Time) string { return t.Format("2006-01-02 15:04:05 -0700") },
	"iso-strict":     func(t time.Time) string { return t.Format("2006-01-02T15:04:05-07:00") },
	"iso8601-strict": func(t time.Time) string { return t.Format("2006-01-02T15:04:05-07:00") },
	"rfc":            func(t time.Time) string { return t.Format("Mon, 2 Jan 2006 15:04:05 -0700") },
	"rfc2822":        func(t time.Time) string { return t.Format("Mon, 2 Jan 2006 15:04:05 -0700") },
	"short":          func(t time.Time) string { return t.Format("2006-01-02") },
	"raw":            func(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) + t.Format(" -0700") },
	"unix":           func(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) },
	"relative":       func(t time.Time) string { return gitRelativeDate(t.Unix(), time.Now().Unix()) },
}

// gitRelativeDate is git's --date=relative: "N units ago", rounding at
// each step as git's show_date_relative does.
func gitRelativeDate(t, now int64) string {
	if now < t {
		return "in the future"
	}
	unit := func(n int64, u string) string {
		if n == 1 {
			return "1 " + u
		}
		return strconv.FormatInt(n, 10) + " " + u + "s"
	}
	diff := now - t
	if diff < 90 {
		return unit(diff, "second") + " ago"
	}
	if diff = (diff + 30) / 60; diff < 90 {
		return unit(diff, "minute") + " ago"
	}
	if diff = (diff + 30) / 60; diff < 36 {
		return unit(diff, "hour") + " ago"
	}
	diff = (diff + 12) / 24
	switch {
	case diff < 14:
		return unit(diff, "day") + " ago"
	case diff < 70:
		return unit((diff+3)/7, "week") + " ago"
	case diff < 365:
		return unit((diff+15)/30, "month") + " ago"
	case diff < 1825:
		total := (diff*12*2 + 365) / (365 * 2)
		years, months := total/12, total%12
		if months > 0 {
			return unit(years, "year") + ", " + unit(months, "month") + " ago"
		}
		return unit(years, "year") + " ago"
	}
	return unit((diff+183)/365, "year") + " ago"
}

// gitDecorateMode reads a --decorate or log.decorate value: "short",
// "full" or "" (none); ok is false for a value we do not read as git
// does. "auto" decorates on a terminal only, and the tools' output
// never is one.
func gitDecorateMode(v string, config bool) (string, bool) {
	switch strings.ToLower(v) {
	case "short":
		return "short", true
	case "full":
		return "full", true
	case "no":
		return "", true
	case "auto":
		return "", config
	case "true", "yes", "on", "1":
		return "short", config
	case "false", "off", "0":
		return "", config
	}
	return "", false
}

// gitLogConfigRefused lists settings that change log's and show's output
// in ways not implemented here; when one is set the command is refused.
var gitLogConfigRefused = []string{"format.pretty", "log.abbrevcommit", "log.showsignature", "log.showroot",
	"log.excludedecoration", "log.follow", "mailmap.file", "mailmap.blob", "log.initialdecorationset"}

// decorations maps each commit to its "HEAD -> main, tag: v1, side"
// list, as git's --decorate prints it: HEAD first (with the branch it
// points at), then the branches, remote-tracking branches, tags and
// refs/stash (git's default filter: not refs/notes and the like) in
// descending name order, tags marked "tag: ", symbolic refs where they
// point; full names when full, else without refs/heads/, refs/tags/ and
// refs/remotes/.
func (g *gitCtx) decorations(full bool) map[plumbing.Hash]string {
	type ref struct {
		name string
		h    plumbing.Hash
	}
	var refs []ref
	if iter, err := g.st.IterReferences(); err == nil {
		iter.ForEach(func(r *plumbing.Reference) error {
			if n := string(r.Name()); !strings.HasPrefix(n, "refs/heads/") && !strings.HasPrefix(n, "refs/remotes/") &&
				!strings.HasPrefix(n, "refs/tags/") && n != "refs/stash" {
				// Git 2.39's default decoration filter.
				return nil
			}
			if r.Type() == plumbing.SymbolicReference {
				// refs/remotes/origin/HEAD: decorated where it points.
				t, err := storer.ResolveReference(g.st, r.Name())
				if err != nil {
					return nil
				}
				r = plumbing.NewHashReference(r.Name(), t.Hash())
			}
			refs = append(refs, ref{string(r.Name()), r.Hash()})
			return nil
		})
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].name > refs[j].name })
	show := func(n string) string {
		if full {
			return n
		}
		for _, p := range []string{"refs/heads/", "refs/tags/", "refs/remotes/"} {
			if s, ok := strings.CutPrefix(n, p); ok {
				return s
			}
		}
		return n
	}
	lists := map[plumbing.Hash][]string{}
	branch, head, detached, err := g.headRef()
	skip := ""
	if err == nil && !head.IsZero() {
		if detached {
			lists[head] = append(lists[head], "HEAD")
		} else {
			lists[head] = append(lists[head], "HEAD -> "+show(string(branch)))
			skip = string(branch)
		}
	}
	for _, r := range refs {
		if r.name == skip {
			continue
		}
		h, tag := g.peel(r.h), strings.HasPrefix(r.name, "refs/tags/")
		if h != r.h {
			tag = true
		}
		name := show(r.name)
		if tag {
			name = "tag: " + name
		}
		lists[h] = append(lists[h], name)
	}
	out := make(map[plumbing.Hash]string, len(lists))
	for h, l := range lists {
		out[h] = strings.Join(l, ", ")
	}
	return out
}
