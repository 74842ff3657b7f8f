package rung_test

import (
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "rung.dev/rung"

// A rank orders rung's packages: a package's code, and its in-package
// tests, import only packages of lower rank or its own parents (store/sqlite
// imports store, shell/tools imports shell). An external test package
// (p_test) may also import packages of its own rank: nothing imports it, so
// it can wire a real daemon or use a sibling's conformance suite
// (store/sqlite's tests run store/storetest). Keys are package prefixes
// relative to the module; the longest match wins. docs/ARCHITECTURE.md
// ("Packages and ranks") must agree.
type rank struct {
	n   int
	why string
}

var ranks = map[string]rank{
	"":                {0, "domain types, IDs and error classes: everything imports it"},
	"internal":        {0, "small helpers (testenv, passwd, testsummary, inproc, nettest, procs) that import nothing of ours"},
	"storage":         {1, "the pool and the file view, under both tiers"},
	"store":           {1, "the metadata store; it knows rung's types and nothing above them"},
	"wire":            {1, "the HTTP API's JSON bodies, once, for the server and the SDK"},
	"dashboard":       {1, "the web dashboard's embedded HTML, CSS and ES modules: a client of /v1 in the browser, it imports nothing of ours"},
	"usage":           {1, "per-sandbox usage samples in bounded rings and the loop that takes them; it knows sandbox IDs and nothing above"},
	"image":           {2, "image store and builders, for the container tier"},
	"agent":           {2, "the in-container agent and its protocol, for the container tier"},
	"network":         {2, "sandboxes' links and packet policy on the host (veth, nftables), under the container tier"},
	"egress":          {2, "one sandbox's egress proxy and DNS under its network policy; it knows rung's policy types and nothing above them"},
	"shell/tools/awk": {2, "an awk interpreter with no rung imports, under the tools that run it"},
	"shell":           {3, "the isolate tier: it reports what it cannot run, never calls up"},
	"container":       {3, "the container tier"},
	"router":          {4, "decides the tier per exec from what shell reports"},
	"controller":      {5, "one actor per sandbox over the tiers and the store"},
	"api":             {6, "HTTP over the controller"},
	"e2b":             {6, "the E2B SDK's control plane and envd over the controller, a client of it like api"},
	"e2b/envdpb":      {1, "envd's protocol: generated messages and Connect stubs, importing only protobuf and connect"},
	"containers":      {6, "the container tier's adapter: implements controller.ContainerTier, as store/sqlite implements store.Store"},
	"client":          {6, "the Go SDK (see sdkOnly)"},
	"networks":        {6, "the network tier: implements controller.NetworkTier and containers.Network over network and egress"},
	"tracing":         {6, "OpenTelemetry traces over the controller's and the API's Tracer interfaces; wired by cmd, imported by no one else (tracing/tracingtest: a real OTLP receiver for tests)"},
	"metrics":         {6, "Prometheus metrics over the controller's, the API's and the store's hooks; wired by cmd, imported by no one else"},
	"mcp":             {7, "the MCP server: agents' tools over the Go SDK (client), as the CLI is, never around the API"},
	"bench":           {7, "side-by-side benchmarks over every part"},
	"cmd":             {8, "the binary: wires every part, the MCP server included"},
}

// sdkOnly: the client's code imports rung, wire (the API's bodies) and the
// standard library only, so an SDK user gets nothing else. Its tests may
// run a real daemon.
const sdkOnly = "client"

// A dep is a third-party module (a go.mod requirement, exactly) and the
// packages whose code may import it: each module lives behind the package
// that owns it, so no foreign type appears in another package's API.
// tests lists packages whose tests may also import it ("*": any test).
type dep struct {
	pkgs, tests []string
	why         string
}

var modules = map[string]dep{
	"mvdan.cc/sh/v3":                         {[]string{"shell"}, nil, "the parser behind the isolate tier; the router asks shell, never the syntax tree"},
	"github.com/ncruces/go-sqlite3":          {[]string{"store/sqlite"}, nil, "the SQLite driver behind store.Store"},
	"github.com/opencontainers/runtime-spec": {[]string{"container"}, nil, "OCI bundles are the container tier's"},
	"github.com/klauspost/compress":          {[]string{"image", "storage", "shell/tools"}, nil, "zstd: image layers, the chunks of snapshot archives (storage/archive.go), and tar --zstd's reading"},
	"github.com/ulikunitz/xz":                {[]string{"shell/tools"}, nil, "xz decompression for tar -J's reading (the standard library has none)"},
	"github.com/itchyny/gojq":                {[]string{"shell/tools"}, nil, "the jq tool"},
	"github.com/go-git/go-git/v5":            {[]string{"shell/tools"}, []string{"storage"}, "the git tool; storage's tests run it over the billy adapter"},
	"github.com/go-git/go-billy/v5":          {[]string{"storage", "shell/tools"}, nil, "storage adapts its file view to billy for the git tool"},
	"github.com/spf13/cobra":                 {[]string{"cmd"}, nil, "the CLI's verbs and flags"},
	"github.com/coder/websocket":             {[]string{"api", "cmd"}, nil, "the exec and process WebSocket streams, served by api and used by the CLI"},
	"github.com/google/go-cmp":               {nil, []string{"*"}, "diffs in test failures"},
	"github.com/google/nftables":             {[]string{"network"}, nil, "the packet policy's nftables table is network's alone"},
	"github.com/vishvananda/netlink":         {[]string{"network"}, nil, "veth pairs, addresses and routes of sandboxes' links"},
	"golang.org/x/sys":                       {[]string{"storage", "container", "containers", "agent", "shell", "image", "internal", "network", "egress", "cmd"}, []string{"controller"}, "system calls the standard library lacks (openat2, ioctls, prctl); no x/sys type in an exported signature"},
	"connectrpc.com/connect":                 {[]string{"e2b"}, nil, "envd's Connect RPC services, served by e2b (stubs generated into e2b/envdpb)"},
	"google.golang.org/protobuf":             {[]string{"e2b", "tracing"}, nil, "envd's messages in protobuf JSON, generated into e2b/envdpb and used by e2b; tracing writes OTLP requests with protowire alone, and its tests decode them"},
	"github.com/miekg/dns":                   {[]string{"egress"}, nil, "the DNS server that answers a sandbox's queries under its egress policy"},
	"github.com/prometheus/client_golang":    {[]string{"metrics"}, nil, "the /metrics registry and its text format; the API serves it as a plain http.Handler"},
	"github.com/modelcontextprotocol/go-sdk": {[]string{"mcp"}, nil, "MCP sessions and tools are package mcp's (mcp/mcptest drives them from other packages' tests)"},
	"github.com/google/jsonschema-go":        {[]string{"mcp"}, nil, "the MCP tools' input schemas (enums and bounds the SDK's inference cannot say)"},

	// OpenTelemetry lives behind package tracing alone; the controller and
	// the API start spans through Tracer interfaces of their own.
	"go.opentelemetry.io/otel":       {[]string{"tracing"}, nil, "OpenTelemetry's API (attributes, status codes, propagation) behind tracing.Tracer"},
	"go.opentelemetry.io/otel/trace": {[]string{"tracing"}, nil, "OpenTelemetry's span API, wrapped by tracing's controller.Span"},
	"go.opentelemetry.io/otel/sdk":   {[]string{"tracing"}, nil, "the tracer provider and batch span processor that tracing runs"},
	"go.opentelemetry.io/proto/otlp": {[]string{"tracing/tracingtest"}, []string{"tracing"}, "OTLP's generated messages, for tests only: tracing/tracingtest's receiver and tracing's encoder test decode requests with them (the exporter writes them with protowire: the package also holds gRPC stubs, which would link grpc into the binary)"},
}

// unlinked are modules the rung binary must not link, with why: each
// costs every start of the binary (the in-container agent's included)
// its package initialisation.
var unlinked = map[string]string{
	"google.golang.org/grpc":                 "7 ms of init per start with grpc-gateway (docs/BENCHMARKS.md); OTLP goes over HTTP",
	"github.com/grpc-ecosystem/grpc-gateway": "linked only through OTLP's generated collector package, which tracing does not import",
	"go.opentelemetry.io/proto/otlp":         "generated messages register descriptors at init; tracing writes OTLP with protowire",
}

// TestBinaryUnlinked checks that cmd/rung's dependencies include none of
// unlinked's modules.
func TestBinaryUnlinked(t *testing.T) {
	t.Parallel()
	dec := goJSON(t, "list", "-deps", "-json=ImportPath", "./cmd/rung")
	for dec.More() {
		var p struct{ ImportPath string }
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		for mod, why := range unlinked {
			if under(p.ImportPath, mod) {
				t.Errorf("cmd/rung links %s: %s", p.ImportPath, why)
			}
		}
	}
}

// An edge is an import the ranks allow but the design forbids: from's
// code (not its tests, which may wire real parts, unless testsToo says
// so) must not import to or its subpackages.
type edge struct{ from, to string }

var badDeps = map[edge]string{
	{"controller", "agent"}: "the agent protocol is the container tier's: the controller sees processes and exits through the interface it owns",
	{"controller", "image"}: "images are the container tier's: the controller passes an image reference",
	{"api", "agent"}:        "the API's wire types are package wire's, not the agent's frames",
	{"wire", "store"}:       "the wire format must not follow the store's schema",
	{"api", "image"}:        "the API's wire types are its own, and it reaches images through the controller",
	{"api", "store"}:        "the API serves the controller's and rung's types, never the store's: tenants, tokens and events go through the controller",
}

// testsToo are badDeps edges that bind from's tests as well.
var testsToo = map[edge]string{
	{"api", "store"}: "the API's tests get a store only inside a controller (controller/controllertest)",
}

// knownBad are badDeps edges that exist today: reported, not failed,
// until a refactor removes them. An exception whose edge is gone fails the
// test, so that the rule holds from then on: delete its line. Issue 12
// emptied it; an edge added here needs an issue that removes it.
var knownBad = []edge{}

type listedPackage struct {
	ImportPath                         string
	Imports, TestImports, XTestImports []string
}

func goJSON(t *testing.T, args ...string) *json.Decoder {
	t.Helper()
	out, err := exec.Command("go", args...).Output()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
	} else if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return json.NewDecoder(strings.NewReader(string(out)))
}

func rel(p string) string {
	if p == module {
		return ""
	}
	return strings.TrimPrefix(p, module+"/")
}

// under reports whether package p is prefix or below it ("" is the root
// package alone).
func under(p, prefix string) bool {
	return p == prefix || prefix != "" && strings.HasPrefix(p, prefix+"/")
}

// rankOf returns the rank of package p: that of the longest ranks key
// it is under.
func rankOf(p string) (r rank, ok bool) {
	best := -1
	for prefix, rk := range ranks {
		if under(p, prefix) && len(prefix) > best {
			best, r, ok = len(prefix), rk, true
		}
	}
	return r, ok
}

func TestDependencies(t *testing.T) {
	reqs := requirements(t)
	for mod := range modules {
		if !reqs[mod] {
			t.Errorf("deps_test.go lists module %s, which go.mod does not require directly", mod)
		}
	}
	for mod := range reqs {
		if _, ok := modules[mod]; !ok {
			t.Errorf("go.mod requires %s, which deps_test.go does not list: add it with the package that owns it", mod)
		}
	}
	used := map[edge]bool{}
	seen := map[string]bool{}
	dec := goJSON(t, "list", "-json", "./...")
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		me := rel(p.ImportPath)
		seen[me] = true
		if _, ok := rankOf(me); !ok {
			t.Errorf("package %s has no rank in deps_test.go", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			checkImport(t, me, imp, "", used)
		}
		for _, imp := range p.TestImports {
			checkImport(t, me, imp, "test", used)
		}
		for _, imp := range p.XTestImports {
			checkImport(t, me, imp, "external test", used)
		}
	}
	for prefix := range ranks {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(seen)), func(p string) bool { return under(p, prefix) }) {
			t.Errorf("ranks lists %q, which matches no package", prefix)
		}
	}
	for e := range testsToo {
		if _, ok := badDeps[e]; !ok {
			t.Errorf("testsToo lists %s -> %s, which badDeps does not forbid", e.from, e.to)
		}
	}
	for _, e := range knownBad {
		if _, ok := badDeps[e]; !ok {
			t.Errorf("knownBad lists %s -> %s, which badDeps does not forbid", e.from, e.to)
		} else if !used[e] {
			t.Errorf("%s no longer imports %s: delete its line from knownBad so the rule holds", e.from, e.to)
		}
	}
}

// checkImport checks one import of package me; kind is "" for its code,
// "test" for its in-package tests, "external test" for me_test.
func checkImport(t *testing.T, me, imp, kind string, used map[edge]bool) {
	t.Helper()
	who := me
	if kind != "" {
		who += " (" + kind + ")"
	}
	switch {
	case imp == module || strings.HasPrefix(imp, module+"/"):
		dep := rel(imp)
		if kind == "" && me == sdkOnly && dep != "" && dep != "wire" {
			t.Errorf("%s imports %s: %s", who, imp, ranks[sdkOnly].why+": rung, wire and the standard library only")
		}
		mine, _ := rankOf(me)
		its, ok := rankOf(dep)
		parent := dep == "" || strings.HasPrefix(me, dep+"/") || kind == "external test" && dep == me
		if ok && (its.n > mine.n || its.n == mine.n && !parent && kind != "external test") {
			t.Errorf("%s (rank %d) imports %s (rank %d, %s): dependencies point downward only", who, mine.n, dep, its.n, its.why)
		}
		checkBad(t, me, dep, kind, used)
	case !strings.Contains(strings.SplitN(imp, "/", 2)[0], "."):
		// standard library
	default:
		checkModule(t, who, me, imp, kind != "")
	}
}

// checkBad checks one import against badDeps; kind is as for checkImport.
func checkBad(t *testing.T, me, dep, kind string, used map[edge]bool) {
	t.Helper()
	for e, why := range badDeps {
		if !under(me, e.from) || !under(dep, e.to) {
			continue
		}
		if kind != "" {
			if tw, ok := testsToo[e]; ok {
				t.Errorf("%s (%s) imports %s: %s", me, kind, dep, tw)
			}
			continue
		}
		if slices.Contains(knownBad, e) {
			if !used[e] {
				t.Logf("known exception: %s imports %s, which will be forbidden: %s", me, dep, why)
			}
			used[e] = true
			continue
		}
		t.Errorf("%s imports %s: %s", me, dep, why)
	}
}

func checkModule(t *testing.T, who, me, imp string, test bool) {
	t.Helper()
	mod := ""
	for m := range modules {
		if (imp == m || strings.HasPrefix(imp, m+"/")) && len(m) > len(mod) {
			mod = m
		}
	}
	if mod == "" {
		t.Errorf("%s imports %s, whose module deps_test.go does not list: add it with the package that owns it", who, imp)
		return
	}
	d := modules[mod]
	ok := slices.ContainsFunc(d.pkgs, func(p string) bool { return under(me, p) })
	if test {
		ok = ok || slices.ContainsFunc(d.tests, func(p string) bool { return p == "*" || under(me, p) })
	}
	if !ok {
		t.Errorf("%s imports %s; module %s is for %s: code of %v, tests of %v", who, imp, mod, d.why, d.pkgs, d.tests)
	}
}

// requirements returns go.mod's direct requirements.
func requirements(t *testing.T) map[string]bool {
	t.Helper()
	var mod struct {
		Require []struct {
			Path     string
			Indirect bool
		}
	}
	if err := goJSON(t, "mod", "edit", "-json").Decode(&mod); err != nil {
		t.Fatal(err)
	}
	reqs := map[string]bool{}
	for _, r := range mod.Require {
		if !r.Indirect {
			reqs[r.Path] = true
		}
	}
	return reqs
}

// archRow is a row of docs/ARCHITECTURE.md's rank table: "| 1 | `storage`, `store` | job |".
var archRow = regexp.MustCompile("^\\| (\\d+) \\| (`[^|]*`) \\|")

// TestRanksMatchArchitecture checks that every package docs/ARCHITECTURE.md
// ranks has that rank here.
func TestRanksMatchArchitecture(t *testing.T) {
	doc, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(string(doc), "\n") {
		m := archRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		want, _ := strconv.Atoi(m[1])
		for _, name := range strings.Split(m[2], ",") {
			p := strings.Trim(strings.TrimSpace(name), "`")
			if p == "rung" {
				p = ""
			}
			if got, ok := rankOf(p); !ok || got.n != want {
				t.Errorf("docs/ARCHITECTURE.md ranks %s %d; deps_test.go ranks it %d", name, want, got.n)
			}
		}
	}
	if rows == 0 {
		t.Error("no rank table found in docs/ARCHITECTURE.md")
	}
}
