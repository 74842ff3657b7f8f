package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"rung.dev/rung/client"
	"rung.dev/rung/controller"
	"rung.dev/rung/e2b"
	"rung.dev/rung/internal/testenv"
)

// e2bSDKDir is testdata/e2bsdk: the package.json and package-lock.json
// that pin the `e2b` npm package the tests drive, and the Node scripts.
const e2bSDKDir = "testdata/e2bsdk"

// e2bSDK installs the pinned E2B SDK (npm ci from testdata/e2bsdk's
// lock file) into a cache shared across runs, next to the test image
// cache, keyed by the lock file's hash, and returns the directory that
// holds its node_modules. A run that finds it there installs nothing.
// Two test processes that both miss the cache each install into a
// temporary directory of their own and rename it into place; the loser
// of the rename removes its copy and uses the winner's.
func e2bSDK(t testing.TB) string {
	t.Helper()
	testenv.Require(t, "node", "npm")
	lock, err := os.ReadFile(filepath.Join(e2bSDKDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := os.ReadFile(filepath.Join(e2bSDKDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(append([]byte{}, pkg...), lock...))
	var pin struct{ Dependencies map[string]string }
	if err := json.Unmarshal(pkg, &pin); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(filepath.Dir(testenv.ImageCache), "e2b-npm")
	dir := filepath.Join(root, "e2b-"+pin.Dependencies["e2b"]+"-"+hex.EncodeToString(sum[:6]))
	marker := filepath.Join(dir, "node_modules", "e2b", "package.json")
	if _, err := os.Stat(marker); err == nil {
		return dir
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(root, ".install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci of the pinned E2B SDK: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(marker); serr != nil {
			t.Fatalf("install the E2B SDK into %s: %v", dir, err)
		}
		// Another process installed it first.
	}
	return dir
}

// sdkStep is one line the Node scripts print: a step's name and whether
// it did what the script expected, with what it saw when it did not.
type sdkStep struct {
	Step  string          `json:"step"`
	OK    bool            `json:"ok"`
	Error string          `json:"error,omitempty"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// runSDKScript runs the Node script testdata/e2bsdk/name with the SDK
// of sdk and env, and returns the steps it reported.
func runSDKScript(t testing.TB, sdk, name string, env ...string) []sdkStep {
	t.Helper()
	script, err := filepath.Abs(filepath.Join(e2bSDKDir, name))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Env = append(os.Environ(), append(env, "RUNG_E2B_SDK="+sdk)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var steps []sdkStep
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s sdkStep
		if json.Unmarshal(sc.Bytes(), &s) == nil && s.Step != "" {
			steps = append(steps, s)
		}
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("node %s: %v", name, err)
		}
		t.Errorf("node %s: %v\nstdout:\n%s\nstderr:\n%s", name, err, out, stderr.Bytes())
	}
	return steps
}

// serveE2BPort serves d's E2B surfaces without prefixes on a loopback
// port, as `rung serve --e2b-addr` does, until d closes.
func serveE2BPort(t testing.TB, d *Daemon) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // ends when the daemon's Close shuts the E2B server down
		defer close(done)
		d.ServeE2B(ln)
	}()
	t.Cleanup(func() {
		d.e2bSrv.Close()
		<-done
	})
	return ln.Addr().String()
}

// TestE2BSDK drives a base daemon with the real E2B SDK (the npm package
// pinned in testdata/e2bsdk) through its two ways in: E2B_API_URL and
// E2B_SANDBOX_URL under the API's /e2b prefixes, and the --e2b-addr port
// that serves both without them. testdata/e2bsdk/smoke.mjs (everyday
// calls) and more.mjs (watching, snapshots, network, signed URLs) say what
// each step expects.
func TestE2BSDK(t *testing.T) {
	sdk := e2bSDK(t)
	ensureBase(t)
	c, d, addr := startContainerDaemonWith(t, DaemonConfig{DefaultImage: "base", ImageDir: testenv.ImageCache, PreviewDomain: "preview.test"})
	if _, err := c.CreateTenant(t.Context(), "acme"); err != nil {
		t.Fatal(err)
	}
	key, err := c.CreateE2BKey(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	e2bAddr := serveE2BPort(t, d)
	// On the E2B port a browser's preflight for envd carries no
	// E2b-Sandbox-Id, only its name: it is envd's, answered with CORS.
	req, _ := http.NewRequestWithContext(t.Context(), "OPTIONS", "http://"+e2bAddr+"/filesystem.Filesystem/Stat", nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "e2b-sandbox-id, x-access-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Headers") != "e2b-sandbox-id, x-access-token" {
		t.Errorf("preflight on the E2B port: %d %v", resp.StatusCode, resp.Header)
	}
	for _, tc := range []struct {
		name     string
		api, sbx string
	}{
		{"prefixed", "http://" + addr + "/e2b/api", "http://" + addr + "/e2b/envd"},
		{"e2b-addr", "http://" + e2bAddr, "http://" + e2bAddr},
	} {
		for _, script := range []string{"smoke.mjs", "more.mjs"} {
			t.Run(tc.name+"/"+script, func(t *testing.T) {
				steps := runSDKScript(t, sdk, script, "E2B_API_URL="+tc.api, "E2B_SANDBOX_URL="+tc.sbx, "E2B_API_KEY="+key.Token, "RUNG_PREVIEW_URL=http://"+addr)
				checkSDKSteps(t, steps)
			})
		}
	}
}

// checkSDKSteps fails t for each step a script reported failed, and when
// it stopped before its "done".
func checkSDKSteps(t *testing.T, steps []sdkStep) {
	t.Helper()
	if len(steps) == 0 {
		t.Fatal("the script reported no steps")
	}
	for _, s := range steps {
		if !s.OK {
			t.Errorf("%s: %s (saw %s)", s.Step, s.Error, s.Data)
		}
	}
	if last := steps[len(steps)-1]; last.Step != "done" {
		t.Errorf("the script stopped after %q", last.Step)
	}
}

// BenchmarkE2BSDK measures what an E2B SDK user waits for on a base
// daemon, through the pinned SDK in Node: commands.run('echo hi') on a
// running sandbox, files.write and files.read of 1 KiB, and
// Sandbox.create to the first command's result (testdata/e2bsdk/bench.mjs,
// RUNG_BENCH_N iterations per measure, default 200, per b.Loop
// iteration; run it with -benchtime 1x). It reports p50 and p99 in ms.
func BenchmarkE2BSDK(b *testing.B) {
	sdk := e2bSDK(b)
	addr, key := e2bBenchDaemon(b)
	var steps []sdkStep
	for b.Loop() {
		steps = runSDKScript(b, sdk, "bench.mjs", "E2B_API_URL=http://"+addr+"/e2b/api", "E2B_SANDBOX_URL=http://"+addr+"/e2b/envd", "E2B_API_KEY="+key)
	}
	reportSDKSteps(b, steps)
}

// BenchmarkE2BSDKWarmPool is BenchmarkE2BSDK's creates against a daemon
// that keeps two warm spares for E2B creates (`rung serve --e2b-warm
// base=2`): each timed create claims one.
func BenchmarkE2BSDKWarmPool(b *testing.B) {
	const spares = 2
	sdk := e2bSDK(b)
	governLikeServe(b)
	ensureBase(b)
	c, d, addr := startContainerDaemonWith(b, DaemonConfig{DefaultImage: "base", ImageDir: testenv.ImageCache,
		Warm: []controller.WarmSpec{{Image: "base", Count: spares, LinkWorkspace: e2b.Home}}})
	key := e2bKey(b, c, "acme")
	var steps []sdkStep
	for b.Loop() {
		steps = runSDKScript(b, sdk, "bench.mjs", "E2B_API_URL=http://"+addr+"/e2b/api", "E2B_SANDBOX_URL=http://"+addr+"/e2b/envd", "E2B_API_KEY="+key,
			"RUNG_BENCH_WARM_SPARES="+strconv.Itoa(spares), "RUNG_BENCH_METRICS_URL=http://"+addr+"/metrics", "RUNG_BENCH_TOKEN="+d.Token)
	}
	reportSDKSteps(b, steps)
}

// BenchmarkE2BSDKFloor times what BenchmarkE2BSDK's steady calls
// (commands.run, files.write and files.read, isRunning) cost the SDK
// itself: testdata/e2bsdk/floor.mjs drives the pinned SDK against
// sdkFloorHandler, a server that answers each call at once with fixed
// bytes. It is a measuring instrument, not an envd: run the two side by
// side, and BenchmarkE2BSDK's figure less this one is rung's part.
func BenchmarkE2BSDKFloor(b *testing.B) {
	sdk := e2bSDK(b)
	governLikeServe(b) // the server's Go runtime as rung's, so the difference is rung's work
	srv := httptest.NewServer(sdkFloorHandler())
	b.Cleanup(srv.Close)
	var steps []sdkStep
	for b.Loop() {
		steps = runSDKScript(b, sdk, "floor.mjs", "E2B_SANDBOX_URL="+srv.URL, "E2B_API_KEY=e2b_0000", "E2B_DEBUG=true")
	}
	reportSDKSteps(b, steps)
}

// sdkFloorHandler answers floor.mjs's calls as envd would shape them:
// a multipart upload is read to its end and answered with the written
// file's entry, a read with 1 KiB, a Start of any command with the
// events of `echo hi` (start, its output, its end, then the end of the
// stream, each in its own Connect envelope and write), /health with 204.
func sdkFloorHandler() http.Handler {
	envelope := func(flags byte, msg string) []byte {
		b := make([]byte, 5, 5+len(msg))
		b[0] = flags
		binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
		return append(b, msg...)
	}
	events := [][]byte{
		envelope(0, `{"event":{"start":{"pid":1}}}`),
		envelope(0, `{"event":{"data":{"stdout":"aGkK"}}}`),
		envelope(0, `{"event":{"end":{"exitCode":0,"exited":true,"status":"exit status 0"}}}`),
		envelope(2, `{}`),
	}
	kib := bytes.Repeat([]byte("x"), 1024)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /files", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(kib)
	})
	mux.HandleFunc("POST /files", func(w http.ResponseWriter, r *http.Request) {
		mr, err := r.MultipartReader()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for {
			part, err := mr.NextPart()
			if err != nil {
				break
			}
			io.Copy(io.Discard, part)
		}
		p := r.URL.Query().Get("path")
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode([]map[string]string{{"name": path.Base(p), "type": "file", "path": p}})
	})
	mux.HandleFunc("POST /process.Process/Start", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/connect+json")
		for _, ev := range events {
			w.Write(ev)
			w.(http.Flusher).Flush()
		}
	})
	return mux
}

// reportSDKSteps reports bench.mjs's measures as the benchmark's metrics.
func reportSDKSteps(b *testing.B, steps []sdkStep) {
	for _, s := range steps {
		var q struct {
			P50 float64 `json:"p50_ms"`
			P99 float64 `json:"p99_ms"`
		}
		if s.Step == "done" || json.Unmarshal(s.Data, &q) != nil {
			continue
		}
		b.ReportMetric(q.P50, s.Step+"-p50-ms")
		b.ReportMetric(q.P99, s.Step+"-p99-ms")
	}
}

// BenchmarkE2BWire times what the SDK's calls cost the daemon, from a Go
// client of the same process over HTTP keep-alive (no Node): a Start of
// `bash -l -c 'echo hi'` (commands.run), /files write then read of 1 KiB,
// and POST /sandboxes. BenchmarkE2BSDK is the same through the SDK.
func BenchmarkE2BWire(b *testing.B) {
	addr, key := e2bBenchDaemon(b)
	base := "http://" + addr
	do := func(req *http.Request) []byte {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			b.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, body)
		}
		return body
	}
	create := func() string {
		req, _ := http.NewRequest("POST", base+"/e2b/api/sandboxes", strings.NewReader(`{"templateID":"base"}`))
		req.Header.Set("X-API-KEY", key)
		req.Header.Set("Content-Type", "application/json")
		var out struct{ SandboxID string }
		json.Unmarshal(do(req), &out)
		return out.SandboxID
	}
	envd := func(method, path, id string, body io.Reader) *http.Request {
		req, _ := http.NewRequest(method, base+"/e2b/envd"+path, body)
		req.Header.Set("X-Access-Token", key)
		req.Header.Set("E2b-Sandbox-Id", id)
		return req
	}
	id := create()
	msg := `{"process":{"cmd":"/bin/bash","args":["-l","-c","echo hi"],"envs":{}},"stdin":false}`
	env := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(env[1:], uint32(len(msg)))
	env = append(env, msg...)
	start := func() {
		req := envd("POST", "/process.Process/Start", id, bytes.NewReader(env))
		req.Header.Set("Content-Type", "application/connect+json")
		req.Header.Set("Connect-Protocol-Version", "1")
		if out := do(req); !bytes.Contains(out, []byte(`"stdout":"aGkK"`)) {
			b.Fatalf("Start answered %s", out)
		}
	}
	kib := []byte(strings.Repeat("x", 1024))
	files := func(i int) {
		p := "/home/user/bench/" + strconv.Itoa(i%16) + ".txt"
		// As the SDK sends it by default: one multipart file.
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		fw, _ := mw.CreateFormFile("file", p)
		fw.Write(kib)
		mw.Close()
		req := envd("POST", "/files?path="+url.QueryEscape(p), id, &body)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		do(req)
		if out := do(envd("GET", "/files?path="+url.QueryEscape(p), id, nil)); len(out) != 1024 {
			b.Fatalf("read back %d bytes", len(out))
		}
	}
	start()
	files(0)
	measure := func(name string, n int, fn func(i int)) {
		ds := make([]time.Duration, n)
		for i := range n {
			t0 := time.Now()
			fn(i)
			ds[i] = time.Since(t0)
		}
		slices.Sort(ds)
		b.ReportMetric(float64(ds[n/2].Microseconds())/1000, name+"-p50-ms")
		b.ReportMetric(float64(ds[n*99/100].Microseconds())/1000, name+"-p99-ms")
	}
	for b.Loop() {
		measure("start_echo", 500, func(int) { start() })
		measure("files_write_read_1KiB", 500, files)
		measure("create", 20, func(int) { create() })
	}
}

// e2bBenchDaemon starts a base daemon with tenant acme and returns its
// address and an E2B key of acme.
func e2bBenchDaemon(b *testing.B) (addr, key string) {
	governLikeServe(b)
	ensureBase(b)
	c, _, addr := startContainerDaemonWith(b, DaemonConfig{DefaultImage: "base", ImageDir: testenv.ImageCache})
	return addr, e2bKey(b, c, "acme")
}

// governLikeServe adjusts this process's GOMAXPROCS to its load until b
// ends, as `rung serve` does for the daemon (governProcs), unless
// $GOMAXPROCS fixes it: a benchmark of an in-process daemon then runs as
// a served one does, and GOMAXPROCS=2 runs it as before the governor. It
// reports how many changes the governor made (gomaxprocs-changes).
func governLikeServe(b *testing.B) {
	g := governProcs(slog.New(slog.DiscardHandler), nil)
	if g == nil {
		return
	}
	b.Cleanup(func() {
		b.ReportMetric(float64(g.Changes()), "gomaxprocs-changes")
		g.Stop()
	})
}

// e2bKey creates tenant and returns an E2B key of it.
func e2bKey(b *testing.B, c *client.Client, tenant string) string {
	if _, err := c.CreateTenant(b.Context(), tenant); err != nil {
		b.Fatal(err)
	}
	k, err := c.CreateE2BKey(b.Context(), tenant)
	if err != nil {
		b.Fatal(err)
	}
	return k.Token
}
