package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// This file holds git config (reading the repository and global files,
// -c overrides, the config subcommand) and identities (user.name,
// GIT_AUTHOR_* and GIT_COMMITTER_*, date parsing).

// --global is not among them: the global file is $HOME/.gitconfig, outside
// the view (/root or /home/user), and git reads and writes it outside a
// repository too, where the tool would stop; the check sends it to the
// container as an unknown option.
var gitConfigOpts = NewOptions("local", "l,list", "get", "unset")

// loadConfig reads one config file; a missing file is an empty config.
func (g *gitCtx) loadConfig(file string) (*config.Config, error) {
	cfg := config.New()
	f, err := g.c.FS.OpenFile(file, os.O_RDONLY, 0)
	if err != nil {
		return cfg, nil
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	if err := config.NewDecoder(bytes.NewReader(b)).Decode(cfg); err != nil {
		return nil, fmt.Errorf("parse %s: %w", file, err)
	}
	return cfg, nil
}

func (g *gitCtx) globalFile() string {
	home := g.c.Getenv("HOME")
	if home == "" {
		home = "/workspace"
	}
	return home + "/.gitconfig"
}

// gitSplitKey splits "section.sub.key" into its parts.
func gitSplitKey(k string) (sec, sub, key string, ok bool) {
	i := strings.IndexByte(k, '.')
	j := strings.LastIndexByte(k, '.')
	if i < 0 || j == len(k)-1 || i == 0 {
		return "", "", "", false
	}
	sec, key = strings.ToLower(k[:i]), strings.ToLower(k[j+1:])
	if i != j {
		sub = k[i+1 : j]
	}
	return sec, sub, key, true
}

func gitCfgGet(cfg *config.Config, k string) (string, bool) {
	sec, sub, key, ok := gitSplitKey(k)
	if !ok || !cfg.HasSection(sec) {
		return "", false
	}
	s := cfg.Section(sec)
	if sub != "" {
		if !s.HasSubsection(sub) {
			return "", false
		}
		ss := s.Subsection(sub)
		if !ss.HasOption(key) {
			return "", false
		}
		return ss.Option(key), true
	}
	if !s.HasOption(key) {
		return "", false
	}
	return s.Option(key), true
}

// config returns the effective value of key: -c, repository, global.
func (g *gitCtx) config(key string) (string, bool) {
	for i := len(g.overrides) - 1; i >= 0; i-- {
		if strings.EqualFold(g.overrides[i][0], key) {
			return g.overrides[i][1], true
		}
	}
	if g.top != "" {
		if cfg, err := g.cachedConfig(g.top + "/.git/config"); err == nil {
			if v, ok := gitCfgGet(cfg, key); ok {
				return v, true
			}
		}
	}
	if cfg, err := g.cachedConfig(g.globalFile()); err == nil {
		if v, ok := gitCfgGet(cfg, key); ok {
			return v, true
		}
	}
	return "", false
}

// cachedConfig is loadConfig read once per invocation; writeFile drops
// a file it rewrites.
func (g *gitCtx) cachedConfig(file string) (*config.Config, error) {
	if cfg, ok := g.cfgs[file]; ok {
		return cfg, nil
	}
	cfg, err := g.loadConfig(file)
	if err != nil {
		return nil, err
	}
	if g.cfgs == nil {
		g.cfgs = map[string]*config.Config{}
	}
	g.cfgs[file] = cfg
	return cfg, nil
}

// signature builds the author (role "AUTHOR") or committer identity.
func (g *gitCtx) signature(role string) (object.Signature, error) {
	name, ok := g.c.LookupEnv("GIT_" + role + "_NAME")
	if !ok {
		name, ok = g.config("user.name")
	}
	if !ok {
		return object.Signature{}, fmt.Errorf("identity without user.name")
	}
	email, ok := g.c.LookupEnv("GIT_" + role + "_EMAIL")
	if !ok {
		email, ok = g.config("user.email")
	}
	if !ok {
		email, ok = g.c.LookupEnv("EMAIL")
	}
	if !ok {
		return object.Signature{}, fmt.Errorf("identity without user.email")
	}
	when := time.Now()
	if d, ok := g.c.LookupEnv("GIT_" + role + "_DATE"); ok {
		t, err := gitParseGitDate(d)
		if err != nil {
			return object.Signature{}, err
		}
		when = t
	} else {
		when = when.In(time.UTC).Truncate(time.Second)
	}
	return object.Signature{Name: name, Email: email, When: when}, nil
}

// gitParseGitDate parses the date forms git's GIT_*_DATE accept most often:
// "@unix +zzzz", "unix +zzzz", ISO 8601 and RFC 2822.
func gitParseGitDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if f := strings.Fields(s); len(f) == 2 && len(f[1]) == 5 && (f[1][0] == '+' || f[1][0] == '-') {
		if n, err := strconv.ParseInt(strings.TrimPrefix(f[0], "@"), 10, 64); err == nil {
			if loc, ok := gitParseZone(f[1]); ok {
				return time.Unix(n, 0).In(loc), nil
			}
		}
	}
	layouts := []string{
		time.RFC3339, "2006-01-02T15:04:05", "2006-01-02 15:04:05 -0700", "2006-01-02 15:04:05",
		"2006-01-02T15:04:05-0700", time.RFC1123Z, "Mon, 2 Jan 2006 15:04:05 -0700",
		"Mon Jan 2 15:04:05 2006 -0700",
	}
	for _, l := range layouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("date %q: unsupported format", s)
}

func gitParseZone(z string) (*time.Location, bool) {
	hh, err1 := strconv.Atoi(z[1:3])
	mm, err2 := strconv.Atoi(z[3:5])
	if err1 != nil || err2 != nil {
		return nil, false
	}
	off := (hh*60 + mm) * 60
	if z[0] == '-' {
		off = -off
	}
	return time.FixedZone("", off), true
}

// gitConfig is "git config": get, set, --list, --unset.
func gitConfig(ctx context.Context, g *gitCtx, opts []Opt, args []string) int {
	file := g.top + "/.git/config"
	list, unset := false, false
	for _, o := range opts {
		switch o.Key {
		case "list":
			list = true
		case "unset":
			unset = true
		}
	}
	cfg, err := g.loadConfig(file)
	if err != nil {
		return g.fatal("%v", err)
	}
	w := g.c.Stdout
	switch {
	case list:
		if len(args) != 0 {
			return g.c.Fail("git config --list with arguments")
		}
		for _, s := range cfg.Sections {
			for _, o := range s.Options {
				fmt.Fprintf(w, "%s.%s=%s\n", strings.ToLower(s.Name), strings.ToLower(o.Key), o.Value)
			}
			for _, ss := range s.Subsections {
				for _, o := range ss.Options {
					fmt.Fprintf(w, "%s.%s.%s=%s\n", strings.ToLower(s.Name), ss.Name, strings.ToLower(o.Key), o.Value)
				}
			}
		}
		return 0
	case len(args) == 1 && !unset:
		sec, sub, key, ok := gitSplitKey(args[0])
		if !ok {
			fmt.Fprintf(g.c.Stderr, "error: key does not contain a section: %s\n", args[0])
			return 2
		}
		_ = sec
		_ = sub
		_ = key
		v, ok := g.config(args[0])
		if !ok {
			return 1
		}
		fmt.Fprintln(w, v)
		return 0
	case len(args) == 2 && !unset, len(args) == 1 && unset:
		sec, sub, key, ok := gitSplitKey(args[0])
		if !ok {
			fmt.Fprintf(g.c.Stderr, "error: key does not contain a section: %s\n", args[0])
			return 2
		}
		if unset {
			if _, ok := gitCfgGet(cfg, args[0]); !ok {
				return 5
			}
			if sub != "" {
				cfg.Section(sec).Subsection(sub).RemoveOption(key)
			} else {
				cfg.Section(sec).RemoveOption(key)
			}
		} else {
			cfg.SetOption(sec, sub, key, args[1])
		}
		var buf bytes.Buffer
		if err := config.NewEncoder(&buf).Encode(cfg); err != nil {
			return g.fatal("%v", err)
		}
		if err := g.writeFile(file, buf.Bytes()); err != nil {
			return g.fatal("%v", err)
		}
		return 0
	}
	return g.c.Fail("git config with these arguments")
}

// writeFile replaces file's content.
func (g *gitCtx) writeFile(file string, data []byte) error {
	delete(g.cfgs, file)
	f, err := g.c.FS.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", file, err)
	}
	return f.Close()
}
