package tools

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// dirs compares two directories (either may be missing with -N). GNU
// sorts the names, as the file view does.
func (d *differ) dirs(a, b string, aExists, bExists bool) {
	if d.ctx.Err() != nil {
		return
	}
	list := func(p string, exists bool) (map[string]fs.DirEntry, bool) {
		m := map[string]fs.DirEntry{}
		if !exists {
			return m, true
		}
		ents, err := d.c.FS.ReadDir(d.c.Abs(p))
		if err != nil {
			d.trouble(p, err)
			return nil, false
		}
		for _, e := range ents {
			if !d.excluded(e.Name()) {
				m[e.Name()] = e
			}
		}
		return m, true
	}
	ma, ok1 := list(a, aExists)
	mb, ok2 := list(b, bExists)
	if !ok1 || !ok2 {
		return
	}
	names := make([]string, 0, len(ma)+len(mb))
	for n := range ma {
		names = append(names, n)
	}
	for n := range mb {
		if _, ok := ma[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		pa, pb := diffJoinPath(a, n), diffJoinPath(b, n)
		_, inA := ma[n]
		_, inB := mb[n]
		var fa, fb fs.FileInfo
		if inA {
			fa, _ = d.c.FS.Stat(d.c.Abs(pa))
		}
		if inB {
			fb, _ = d.c.FS.Stat(d.c.Abs(pb))
		}
		switch {
		case inA && inB:
			d.pair(pa, pb, fa, fb)
		case d.newFile:
			info := fa
			if info == nil {
				info = fb
			}
			if info != nil && info.IsDir() {
				if d.recursive {
					d.dirs(pa, pb, inA, inB)
				}
				continue
			}
			d.files(pa, pb, inA, inB, d.header(pa, pb))
		default:
			dir := a
			if inB {
				dir = b
			}
			d.out.WriteString(fmt.Sprintf("Only in %s: %s\n", dir, n))
			d.setStatus(1)
		}
	}
}

func (d *differ) pair(pa, pb string, fa, fb fs.FileInfo) {
	switch {
	case fa == nil || fb == nil:
		if fa == nil {
			_, err := d.c.FS.Stat(d.c.Abs(pa))
			d.trouble(pa, err)
		}
		if fb == nil {
			_, err := d.c.FS.Stat(d.c.Abs(pb))
			d.trouble(pb, err)
		}
	case fa.IsDir() && fb.IsDir():
		if d.recursive {
			d.dirs(pa, pb, true, true)
		} else {
			fmt.Fprintf(d.out, "Common subdirectories: %s and %s\n", pa, pb)
		}
	case fa.IsDir() != fb.IsDir():
		kind := func(fi fs.FileInfo) string {
			if fi.IsDir() {
				return "directory"
			}
			if fi.Size() == 0 {
				return "regular empty file"
			}
			return "regular file"
		}
		fmt.Fprintf(d.out, "File %s is a %s while file %s is a %s\n", pa, kind(fa), pb, kind(fb))
		d.setStatus(1)
	default:
		d.files(pa, pb, true, true, d.header(pa, pb))
	}
}

func (d *differ) header(pa, pb string) string {
	if d.switches == "" {
		return fmt.Sprintf("diff %s %s\n", pa, pb)
	}
	return fmt.Sprintf("diff %s %s %s\n", d.switches, pa, pb)
}

func (d *differ) excluded(name string) bool {
	for _, p := range d.excludes {
		if srchFnmatch(p, name) {
			return true
		}
	}
	return false
}

func diffJoinPath(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}
