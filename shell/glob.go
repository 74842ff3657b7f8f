package shell

import (
	"io/fs"
	"sort"
	"strings"
)

// globField does pathname expansion of one field. ok is false when the
// field is not a pattern after all, or nothing matched (and neither
// nullglob nor failglob applies): then the field stays as it is.
func (r *runner) globField(f []seg) ([]string, bool) {
	var sb strings.Builder
	for _, s := range f {
		if s.quoted {
			sb.WriteString(escapePattern(s.s))
		} else {
			sb.WriteString(s.s)
		}
	}
	pat := sb.String()
	matches := r.glob(pat)
	if len(matches) == 0 {
		if r.shopts["nullglob"] {
			return nil, true
		}
		if r.shopts["failglob"] {
			r.fatalf(1, "no match: %s", joinSegs(f))
		}
		return nil, false
	}
	return matches, true
}

// glob returns the sorted paths matching pat, relative to the working
// directory unless pat is absolute.
func (r *runner) glob(pat string) []string {
	abs := strings.HasPrefix(pat, "/")
	comps := strings.Split(pat, "/")
	base := r.dir
	prefix := ""
	if abs {
		base = "/"
		prefix = "/"
		comps = comps[1:]
	}
	// Collapse repeated slashes like the kernel does.
	var cs []string
	for i, c := range comps {
		if c == "" && i != len(comps)-1 {
			continue
		}
		cs = append(cs, c)
	}
	var out []string
	r.globWalk(base, prefix, cs, &out)
	sort.Strings(out)
	return out
}

func (r *runner) globWalk(dir, prefix string, comps []string, out *[]string) {
	if r.ctx.Err() != nil {
		return
	}
	if len(comps) == 0 {
		*out = append(*out, prefix)
		return
	}
	c := comps[0]
	rest := comps[1:]
	if c == "" {
		// trailing slash: only directories
		if fi, err := r.sh.sh.cfg.FS.Stat(dir); err == nil && fi.IsDir() {
			*out = append(*out, prefix)
		}
		return
	}
	if !hasMeta(c, true) {
		lit := unescapeGlob(c)
		p := joinPath(dir, lit)
		if len(rest) == 0 {
			if _, err := r.sh.sh.cfg.FS.Lstat(p); err == nil {
				*out = append(*out, prefix+lit)
			}
			return
		}
		r.globWalk(p, prefix+lit+"/", rest, out)
		return
	}
	if c == "**" && r.shopts["globstar"] {
		r.globStar(dir, prefix, rest, out)
		return
	}
	ents, err := r.sh.sh.cfg.FS.ReadDir(dir)
	if err != nil {
		return
	}
	m := r.compilePattern(c, patternOpts{nocase: r.shopts["nocaseglob"], pathname: true})
	dotOK := strings.HasPrefix(c, ".") || strings.HasPrefix(c, "\\.") || r.shopts["dotglob"]
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") && !dotOK {
			continue
		}
		if !m.match(name) {
			continue
		}
		p := joinPath(dir, name)
		if len(rest) == 0 {
			*out = append(*out, prefix+name)
			continue
		}
		if fi, err := r.sh.sh.cfg.FS.Stat(p); err != nil || !fi.IsDir() {
			continue
		}
		r.globWalk(p, prefix+name+"/", rest, out)
	}
}

// globStar matches ** against zero or more directory levels.
func (r *runner) globStar(dir, prefix string, rest []string, out *[]string) {
	if len(rest) == 0 {
		// "**" alone matches every file and directory below.
		var walk func(d, p string)
		walk = func(d, p string) {
			ents, err := r.sh.sh.cfg.FS.ReadDir(d)
			if err != nil {
				return
			}
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".") && !r.shopts["dotglob"] {
					continue
				}
				*out = append(*out, p+e.Name())
				if e.IsDir() {
					walk(joinPath(d, e.Name()), p+e.Name()+"/")
				}
			}
		}
		if prefix != "" && prefix != "/" {
			*out = append(*out, prefix)
		}
		walk(dir, prefix)
		return
	}
	if len(rest) == 1 && rest[0] == "" {
		r.globStarDirs(dir, prefix, out)
		return
	}
	r.globWalk(dir, prefix, rest, out)
	ents, err := r.sh.sh.cfg.FS.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") && !r.shopts["dotglob"] {
			continue
		}
		r.globStar(joinPath(dir, e.Name()), prefix+e.Name()+"/", rest, out)
	}
}

// globStarDirs matches **/ : every directory below, a symlink to one
// too (but not what is below it); the starting directory itself only
// when it has a name (src/**/ matches src/, **/ does not match "").
func (r *runner) globStarDirs(dir, prefix string, out *[]string) {
	if prefix != "" {
		*out = append(*out, prefix)
	}
	ents, err := r.sh.sh.cfg.FS.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") && !r.shopts["dotglob"] {
			continue
		}
		p := joinPath(dir, e.Name())
		switch {
		case e.IsDir():
			r.globStarDirs(p, prefix+e.Name()+"/", out)
		case e.Type()&fs.ModeSymlink != 0:
			if fi, err := r.sh.sh.cfg.FS.Stat(p); err == nil && fi.IsDir() {
				*out = append(*out, prefix+e.Name()+"/")
			}
		}
	}
}

func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

func unescapeGlob(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}
