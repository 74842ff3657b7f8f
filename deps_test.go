package rung_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "rung.dev/rung"

// ranks orders rung's packages: a package imports only packages of lower
// rank, or its own parent (store/sqlite imports store, shell/tools imports
// shell). Longest prefix wins; subpackages share their parent's rank.
var ranks = map[string]int{
	"":                 0, // the domain package
	"internal/testenv": 0,
	"internal":         0,
	"storage":          1,
	"store":            1,
	"image":            2,
	"agent":            2,
	"shell/tools/awk":  2, // a language library with no rung imports
	"shell":            3,
	"container":        3,
	"router":           4,
	"controller":       5,
	"api":              6,
	"client":           6, // imports rung only (checked below)
	"bench":            7,
	"cmd":              7,
}

// thirdParty says which of our packages may import each third-party
// module, so that no foreign type leaks into another package's API.
var thirdParty = map[string][]string{
	"mvdan.cc/sh/v3":                         {"shell"},
	"github.com/ncruces/":                    {"store/sqlite"},
	"github.com/jackc/pgx":                   {"store/postgres"},
	"github.com/containerd/go-runc":          {"container"},
	"github.com/opencontainers/":             {"container", "image"},
	"github.com/google/go-containerregistry": {"image"},
	"github.com/klauspost/compress":          {"image"},
	"github.com/itchyny/gojq":                {"shell/tools"},
	"github.com/go-git/go-git":               {"shell/tools"},
	"github.com/go-git/go-billy":             {"storage", "shell/tools"},
	"gopkg.in/yaml.v3":                       {"shell/tools"},
	"github.com/spf13/":                      {"cmd"},
	"github.com/coder/websocket":             {"api", "cmd", "bench"},
	"github.com/google/go-cmp":               {}, // tests only
	"golang.org/x/sys":                       {"storage", "container", "agent", "shell", "internal", "image", "cmd", "controller"},
	"golang.org/x/":                          {"storage", "container", "agent", "shell", "internal", "image", "cmd"},
}

type listedPackage struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

func rel(p string) string {
	if p == module {
		return ""
	}
	return strings.TrimPrefix(p, module+"/")
}

func rankOf(p string) (int, bool) {
	best, rank, found := -1, 0, false
	for prefix, r := range ranks {
		if (p == prefix || strings.HasPrefix(p, prefix+"/") || prefix == "") && len(prefix) > best {
			best, rank, found = len(prefix), r, true
		}
	}
	return rank, found
}

func within(p string, allowed []string) bool {
	for _, a := range allowed {
		if p == a || strings.HasPrefix(p, a+"/") {
			return true
		}
	}
	return false
}

func TestDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		me := rel(p.ImportPath)
		myRank, ok := rankOf(me)
		if !ok {
			t.Errorf("package %s has no rank in deps_test.go", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			switch {
			case strings.HasPrefix(imp, module):
				dep := rel(imp)
				if me == "client" && dep != "" {
					t.Errorf("client imports %s: the SDK may import only rung and the standard library", imp)
				}
				depRank, _ := rankOf(dep)
				parent := strings.HasPrefix(me, dep+"/") || dep == ""
				if depRank >= myRank && !parent {
					t.Errorf("%s (rank %d) imports %s (rank %d): dependencies point downward only", me, myRank, dep, depRank)
				}
			case !strings.Contains(strings.SplitN(imp, "/", 2)[0], "."):
				// standard library
			default:
				checkThirdParty(t, me, imp)
			}
		}
	}
}

func checkThirdParty(t *testing.T, me, imp string) {
	t.Helper()
	best := ""
	for mod := range thirdParty {
		if strings.HasPrefix(imp, mod) && len(mod) > len(best) {
			best = mod
		}
	}
	if best == "" {
		t.Errorf("%s imports %s, which deps_test.go does not list: add it with the package allowed to use it", me, imp)
		return
	}
	if !within(me, thirdParty[best]) {
		t.Errorf("%s imports %s; only %v may (each third-party module lives behind one package)", me, imp, thirdParty[best])
	}
}
