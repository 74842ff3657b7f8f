package containers

import (
	"cmp"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// imagePath answers where a container of one image finds a command on
// its PATH, for the isolate tier's check (shell.CheckRequest.LookPath):
// a tool the image lacks (column in base) or one it has elsewhere must
// not run in-process, and type, which and command -v must answer what
// the container would. It reads the image's layers, which never change;
// what a sandbox's container adds to or removes from its own root file
// system later is not seen (an added command still runs in the
// container; a removed tool would still run in-process). It is safe for
// concurrent use.
type imagePath struct {
	layers []string // layer directories, top first
	path   []string // the image's PATH
	shell  string   // the shell execs run under (/bin/bash)

	mu    sync.Mutex        // guards found
	found map[string]string // name or path -> where it is found, "" for nowhere
}

// bashDefaultPath is the PATH bash uses when the environment has none.
const bashDefaultPath = "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin:."

func newImagePath(layers []string, env []string) *imagePath {
	p := bashDefaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			p = v
		}
	}
	ip := &imagePath{layers: layers, found: map[string]string{}}
	for d := range strings.SplitSeq(p, ":") {
		ip.path = append(ip.path, cmp.Or(d, "."))
	}
	return ip
}

// lookPath returns where name is found: for a bare name, the first
// PATH directory holding an executable of that name; for a name with a
// slash, the name itself when it is an executable.
func (ip *imagePath) lookPath(name string) string {
	ip.mu.Lock()
	p, ok := ip.found[name]
	ip.mu.Unlock()
	if ok {
		return p
	}
	p = ip.search(name)
	ip.mu.Lock()
	if len(ip.found) < 4096 { // names come from scripts: keep the cache bounded
		ip.found[name] = p
	}
	ip.mu.Unlock()
	return p
}

func (ip *imagePath) search(name string) string {
	if strings.Contains(name, "/") {
		if path.IsAbs(name) && ip.executable(name) {
			return name
		}
		return ""
	}
	for _, d := range ip.path {
		if !path.IsAbs(d) {
			continue // "." and relative entries depend on the working directory
		}
		if p := path.Join(d, name); ip.executable(p) {
			return p
		}
	}
	return ""
}

// executable reports whether p, resolved inside the image, is a regular
// file with an execute bit.
func (ip *imagePath) executable(p string) bool {
	fi, ok := ip.stat(p, 0)
	return ok && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// maxLinks bounds the symlinks followed resolving one path, as the
// kernel's ELOOP does.
const maxLinks = 40

// stat resolves p component by component inside the merged layers
// (symlinks, absolute ones too, stay inside the image) and stats the
// result.
func (ip *imagePath) stat(p string, links int) (fs.FileInfo, bool) {
	cur := "/"
	rest := strings.Split(strings.Trim(path.Clean(p), "/"), "/")
	for i, comp := range rest {
		if comp == "" || comp == "." {
			continue
		}
		next := path.Join(cur, comp)
		fi, ok := ip.lstat(next)
		if !ok {
			return nil, false
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if links >= maxLinks {
				return nil, false
			}
			target, ok := ip.readlink(next)
			if !ok {
				return nil, false
			}
			if !path.IsAbs(target) {
				target = path.Join(cur, target)
			}
			return ip.stat(path.Join(append([]string{target}, rest[i+1:]...)...), links+1)
		}
		if i < len(rest)-1 && !fi.IsDir() {
			return nil, false
		}
		cur = next
	}
	fi, ok := ip.lstat(cur)
	return fi, ok
}

// lstat finds p in the topmost layer that has it, honouring overlay
// whiteouts (a 0/0 character device or a .wh. file hides lower layers).
func (ip *imagePath) lstat(p string) (fs.FileInfo, bool) {
	dir, base := path.Split(p)
	for _, l := range ip.layers {
		if _, err := os.Lstat(l + dir + ".wh." + base); err == nil {
			return nil, false
		}
		fi, err := os.Lstat(l + p)
		if err != nil {
			continue
		}
		if fi.Mode()&fs.ModeCharDevice != 0 {
			if st, ok := fi.Sys().(*unix.Stat_t); ok && st.Rdev == 0 {
				return nil, false
			}
		}
		return fi, true
	}
	return nil, false
}

func (ip *imagePath) readlink(p string) (string, bool) {
	for _, l := range ip.layers {
		if t, err := os.Readlink(l + p); err == nil {
			return t, true
		}
	}
	return "", false
}

// lookPaths caches an imagePath per pinned image reference, for every
// sandbox of that image: a pinned image never changes.
type lookPaths struct {
	mu sync.Mutex // guards byRef
	// byRef: nil for an image the isolate tier does not model (its
	// shell is not bash, as lite's busybox sh).
	byRef map[string]*imagePath
}

// imagePathOf returns the imagePath of image ref ("" for the default
// image), or nil when the isolate tier does not model the image (its
// shell is not bash: the tier answers as bash and GNU tools do, which on
// lite's busybox is all it can do) or it cannot be read.
func (t *Tier) imagePathOf(ref string) *imagePath {
	pinned := strings.Contains(ref, "@sha256:")
	if pinned {
		t.paths.mu.Lock()
		ip, ok := t.paths.byRef[ref]
		t.paths.mu.Unlock()
		if ok {
			return ip
		}
	}
	im, err := t.image(ref)
	if err != nil {
		return nil
	}
	var ip *imagePath
	if path.Base(im.Config.Shell) == "bash" {
		layers := make([]string, len(im.Layers))
		for i, l := range im.Layers {
			layers[len(layers)-1-i] = t.cfg.Images.LayerDir(l)
		}
		ip = newImagePath(layers, im.Config.Env)
		ip.shell = im.Config.Shell
	}
	if pinned {
		t.paths.mu.Lock()
		if t.paths.byRef == nil {
			t.paths.byRef = map[string]*imagePath{}
		}
		t.paths.byRef[ref] = ip
		t.paths.mu.Unlock()
	}
	return ip
}

// ImagePath implements [controller.ContainerImages].
func (t *Tier) ImagePath(ref string) (lookPath func(string) string, shell string) {
	if ip := t.imagePathOf(ref); ip != nil {
		return ip.lookPath, ip.shell
	}
	return nil, ""
}
