package image

import (
	"strconv"
	"strings"
)

// BuildProgress is where a Debian image build is, as a progress display
// shows it: the stage, what its packages are going through, and how many
// of them are through it.
type BuildProgress struct {
	// Stage is "waiting" (for another build of the image), "debootstrap"
	// (Debian's minbase), "apt-get" (the image's packages), "setup" (the
	// user account) or "layer" (storing the root filesystem), or "" before
	// the first stage line.
	Stage string
	// Step is what the stage's packages are going through now:
	// "downloading", "extracting", "unpacking" or "configuring"; "" when
	// the stage has no packages.
	Step string
	// Done is how many packages are through Step; Total how many the
	// stage has, 0 while it is not known yet (debootstrap names its
	// packages only as it downloads them).
	Done, Total int
}

// ProgressTracker turns the output lines of [Store.BuildDebian] (and so
// of BuildBase) into a [BuildProgress], by counting the packages
// debootstrap, apt and dpkg name as they go. The zero value is ready. It
// is not safe for concurrent use.
type ProgressTracker struct {
	cur   BuildProgress
	seen  map[string]map[string]bool // step -> packages through it, this stage
	gets  int                        // apt's highest "Get:N"
	fetch int                        // debootstrap's packages downloaded (or found in its cache)
}

// Progress returns where the build is.
func (t *ProgressTracker) Progress() BuildProgress { return t.cur }

// Line reads one output line and returns the progress after it, and
// whether the line changed it.
func (t *ProgressTracker) Line(line string) (BuildProgress, bool) {
	before := t.cur
	t.read(strings.TrimSpace(line))
	return t.cur, t.cur != before
}

func (t *ProgressTracker) read(line string) {
	switch {
	case strings.HasPrefix(line, "waiting for another build of "):
		t.stage("waiting")
	case strings.HasPrefix(line, stageDebootstrap):
		t.stage("debootstrap")
	case strings.HasPrefix(line, stageApt):
		t.stage("apt-get")
	case strings.HasPrefix(line, stageSetup):
		t.stage("setup")
	case strings.HasPrefix(line, stageLayer):
		t.stage("layer")
	case strings.HasPrefix(line, "I: "):
		t.debootstrap(strings.TrimPrefix(line, "I: "))
	default:
		t.apt(line)
	}
}

func (t *ProgressTracker) stage(name string) {
	t.cur = BuildProgress{Stage: name}
	t.seen, t.gets, t.fetch = nil, 0, 0
}

// through records pkg as through step and makes step the current one.
func (t *ProgressTracker) through(step, pkg string) {
	if t.seen == nil {
		t.seen = map[string]map[string]bool{}
	}
	if t.seen[step] == nil {
		t.seen[step] = map[string]bool{}
	}
	t.seen[step][pkg] = true
	t.cur.Step, t.cur.Done = step, len(t.seen[step])
}

// debootstrap reads debootstrap's "I: " lines: "Retrieving NAME VERSION"
// or "Validating NAME VERSION" per package downloaded (or taken from its
// cache), then "Extracting NAME...", "Unpacking NAME...", "Configuring
// NAME..." per package. Its other lines have more words or none of these
// verbs.
func (t *ProgressTracker) debootstrap(msg string) {
	f := strings.Fields(msg)
	switch {
	case len(f) == 3 && (f[0] == "Retrieving" || f[0] == "Validating"):
		t.through("downloading", f[1])
		t.fetch = t.cur.Done
	case len(f) == 2 && strings.HasSuffix(f[1], "..."):
		step := map[string]string{"Extracting": "extracting", "Unpacking": "unpacking", "Configuring": "configuring"}[f[0]]
		if step == "" {
			return
		}
		// Once it extracts, the download is over: its count is the total.
		t.cur.Total = t.fetch
		t.through(step, strings.TrimSuffix(f[1], "..."))
	}
}

// apt reads apt-get's and dpkg's lines: "N upgraded, M newly installed,
// ..." gives the total, "Get:K URL SUITE NAME ARCH VERSION [SIZE]" counts
// downloads, and dpkg's "Unpacking NAME:ARCH (VERSION) ..." and "Setting
// up NAME:ARCH (VERSION) ..." count packages unpacked and configured
// (during debootstrap too, which installs some packages with dpkg).
func (t *ProgressTracker) apt(line string) {
	f := strings.Fields(line)
	switch {
	case len(f) >= 5 && f[1] == "upgraded," && f[3] == "newly" && t.cur.Stage == "apt-get":
		if n, err := strconv.Atoi(f[2]); err == nil {
			t.cur.Total = n
		}
	case len(f) >= 2 && strings.HasPrefix(f[0], "Get:") && t.cur.Stage == "apt-get":
		if n, err := strconv.Atoi(strings.TrimPrefix(f[0], "Get:")); err == nil && n > t.gets {
			t.gets = n
			t.cur.Step, t.cur.Done = "downloading", n
		}
	case len(f) >= 3 && f[0] == "Unpacking" && strings.HasPrefix(f[2], "("):
		t.through("unpacking", pkgName(f[1]))
	case len(f) >= 4 && f[0] == "Setting" && f[1] == "up" && strings.HasPrefix(f[3], "("):
		t.through("configuring", pkgName(f[2]))
	}
}

// pkgName drops dpkg's ":arch" from a package name.
func pkgName(s string) string {
	name, _, _ := strings.Cut(s, ":")
	return name
}
