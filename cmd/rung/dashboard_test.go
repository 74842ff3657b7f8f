package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rung.dev/rung/client"
	"rung.dev/rung/dashboard"
	"rung.dev/rung/internal/testenv"
)

// TestDashboard drives the web dashboard of a real `rung serve` in
// headless Chromium, as a user would: log in with the token, create a
// sandbox, run commands in the terminal and see their output (colours
// included), watch the journal follow new execs, browse files with
// hostile names, take snapshots and fork one (the lineage tree), run a
// background process and read its output, see its container's usage
// samples, and page through the list. Screenshots of each step are
// kept (see artifactDir). Any uncaught exception, console error or
// Content-Security-Policy violation in the page fails the test.
func TestDashboard(t *testing.T) {
	testenv.Require(t, "chromium")
	bin := rungBinary(t)
	p := startServe(t, bin, t.TempDir())
	defer p.stop(t)
	base := "http://" + p.addr
	checkHeaders(t, base)

	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	step := func(d time.Duration) (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, d) }
	dir := artifactDir(t)
	t.Logf("screenshots in %s", dir)
	b := startBrowser(t, 1400, 1000)
	shot := func(name string) {
		if dir != "" {
			b.screenshot(ctx, filepath.Join(dir, name+".png"))
		}
	}
	c := client.New(p.addr, client.WithToken(p.token))

	// Log in.
	b.navigate(ctx, base+"/")
	sctx, done := step(time.Minute)
	b.waitFor(sctx, "the login form", `document.querySelector("#token")`)
	done()
	shot("01-login")
	b.typeInto(ctx, "#token", "rung_not-a-token")
	b.click(ctx, "#login button[type=submit]")
	sctx, done = step(time.Minute)
	b.waitFor(sctx, "a refused token", `document.querySelector("#login-note").textContent.includes("unauthenticated")`)
	done()
	b.clearFaults() // the refused token's 401, logged by the browser
	b.eval(ctx, `document.querySelector("#token").value = ""`, nil)
	b.typeInto(ctx, "#token", p.token)
	b.click(ctx, "#login button[type=submit]")
	sctx, done = step(time.Minute)
	b.waitFor(sctx, "the empty sandbox list", `document.querySelector("#sandbox-rows .empty")`)
	done()
	shot("02-list-empty")

	// Create a sandbox from the form: the page moves to it.
	b.typeInto(ctx, "#new-name", "dash-e2e")
	b.click(ctx, "#create")
	sctx, done = step(2 * time.Minute)
	b.waitFor(sctx, "the sandbox's page", `location.hash.startsWith("#/s/") && document.querySelector("#summary h2")?.textContent.includes("dash-e2e")`)
	done()
	sb, err := c.Get(ctx, "dash-e2e")
	if err != nil {
		t.Fatalf("the dashboard's sandbox: %v", err)
	}

	// The terminal: a command, its output and its exit; SGR colours.
	b.typeInto(ctx, "#term-input", "echo hello-$((6*7))")
	b.pressEnter(ctx)
	sctx, done = step(2 * time.Minute)
	b.waitFor(sctx, "the command's output", `document.querySelector("#term-screen").textContent.includes("hello-42")`)
	b.waitFor(sctx, "the command's exit", `document.querySelector("#term-screen").textContent.includes("[exit 0 · isolate")`)
	done()
	b.typeInto(ctx, "#term-input", `printf '\033[31mred\033[0m plain\n'`)
	b.pressEnter(ctx)
	sctx, done = step(2 * time.Minute)
	b.waitFor(sctx, "red text in the terminal", `[...document.querySelectorAll("#term-screen span.f1")].some((s) => s.textContent === "red")`)
	done()
	// No escape character reaches the page: the sequence was interpreted.
	var raw bool
	b.eval(ctx, `document.querySelector("#term-screen").textContent.includes("\x1b")`, &raw)
	if raw {
		t.Errorf("the terminal shows a raw escape sequence")
	}
	shot("03-terminal")

	// The journal follows the events stream: an exec made elsewhere shows
	// up without a reload, and so does the tier split.
	b.click(ctx, "#tab-journal")
	sctx, done = step(time.Minute)
	b.waitFor(sctx, "the terminal's exec in the journal", `[...document.querySelectorAll("#journal-rows tr[data-type='exec.started']")].some((r) => r.textContent.includes("hello-"))`)
	done()
	if _, err := c.Exec(ctx, string(sb.ID), client.ExecRequest{Command: "echo from-the-sdk"}); err != nil {
		t.Fatal(err)
	}
	sctx, done = step(time.Minute)
	b.waitFor(sctx, "the SDK's exec in the journal", `[...document.querySelectorAll("#journal-rows tr[data-type='exec.started']")].some((r) => r.textContent.includes("from-the-sdk"))`)
	b.waitFor(sctx, "the tier split", `document.querySelector("#tier-split").textContent.includes("isolate 3")`)
	done()
	shot("04-journal")

	// Files: names and contents are untrusted, and shown as text.
	hostile := `<img src=x onerror="document.title='owned'">.txt`
	body := `<script>document.title = "owned"</script>`
	if _, err := c.WriteFile(ctx, string(sb.ID), "/workspace/"+hostile, strings.NewReader(body), 0o644); err != nil {
		t.Fatal(err)
	}
	b.click(ctx, "#tab-files")
	sel := fmt.Sprintf(`[...document.querySelectorAll("#file-rows button.file")].find((e) => e.textContent === %q)`, hostile)
	sctx, done = step(time.Minute)
	b.waitFor(sctx, "the hostile file name, as text", sel)
	done()
	b.eval(ctx, sel+`.click()`, nil)
	sctx, done = step(time.Minute)
	b.waitFor(sctx, "the file's content, as text", fmt.Sprintf(`document.querySelector("#file-text")?.textContent === %q`, body))
	done()
	var injected bool
	b.eval(ctx, `document.title === "owned" || !!document.querySelector("main img, main script")`, &injected)
	if injected {
		t.Errorf("a file name or content became markup")
	}
	shot("05-files")

	// Snapshots: take one with the button, fork it from the tree, and
	// see the fork's snapshot nested under it.
	b.click(ctx, "#tab-snapshots")
	b.click(ctx, "#snapshot")
	sctx, done = step(2 * time.Minute)
	b.waitFor(sctx, "the snapshot in the list", `document.querySelector("#snapshot-count")?.textContent === "1" && document.querySelector("#snapshot-tree li.mine")`)
	done()
	shot("06-snapshot")
	b.click(ctx, "#snapshot-tree li.mine button.small")
	sctx, done = step(2 * time.Minute)
	// The page shows the fork once its summary names the sandbox the
	// location does (until then the parent's page may still be up).
	b.waitFor(sctx, "the fork's page", fmt.Sprintf(`location.hash.startsWith("#/s/") && !location.hash.includes(%q) && document.querySelector("#summary dd")?.textContent === location.hash.split("/")[2]`, sb.ID))
	done()
	b.click(ctx, "#tab-snapshots")
	b.click(ctx, "#snapshot")
	sctx, done = step(2 * time.Minute)
	b.waitFor(sctx, "the fork's snapshot under its parent", `document.querySelector("#snapshot-tree li.other > ul > li.mine")`)
	done()
	shot("07-lineage")

	// A background process and its output (in the container tier).
	b.navigate(ctx, base+"/#/s/"+string(sb.ID)+"/processes")
	sctx, done = step(time.Minute)
	b.waitFor(sctx, "the processes tab", fmt.Sprintf(`document.querySelector("#summary dd")?.textContent === %q && !document.querySelector("#panel-processes").hidden`, sb.ID))
	done()
	b.typeInto(ctx, "#proc-command", "echo from-a-process; echo to-stderr >&2")
	b.pressEnter(ctx)
	sctx, done = step(3 * time.Minute)
	b.waitFor(sctx, "the process's output", `document.querySelector("#proc-output").textContent.includes("from-a-process")`)
	b.waitFor(sctx, "the process's exit", `document.querySelector("#proc-output").textContent.includes("[exit 0]")`)
	done()
	shot("08-processes")

	b.click(ctx, "#tab-network")
	sctx, done = step(time.Minute)
	b.waitFor(sctx, "the network policy", `document.querySelector("#net-mode")?.textContent === "none"`)
	done()
	b.click(ctx, "#tab-metrics")
	sctx, done = step(time.Minute)
	// The container runs (the process started it): the server samples it
	// every 5 s and the tab reads the samples every 5 s.
	b.waitFor(sctx, "the usage panel", `document.querySelector("#panel-metrics h3")`)
	done()
	sctx, done = step(2 * time.Minute)
	b.waitFor(sctx, "a usage sample", `document.querySelector("#usage dd")?.textContent.endsWith(")")`)
	done()
	shot("09-metrics")

	// Back on the list, with both sandboxes and the running one's usage.
	b.click(ctx, "#bar .brand")
	sctx, done = step(2 * time.Minute)
	b.waitFor(sctx, "two sandboxes listed", `document.querySelectorAll("#sandbox-rows tr[data-id]").length === 2`)
	b.waitFor(sctx, "the running sandbox's memory", fmt.Sprintf(`document.querySelector("#sandbox-rows tr[data-id='%s'] td:nth-child(7)")?.textContent.endsWith("B")`, sb.ID))
	done()
	shot("10-list")

	// The list is paged: 50 rows, then "Show more".
	for i := range 53 {
		if _, err := c.Create(ctx, client.CreateRequest{Name: fmt.Sprintf("page-%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	sctx, done = step(2 * time.Minute)
	b.waitFor(sctx, "the first page of 50", `document.querySelectorAll("#sandbox-rows tr[data-id]").length === 50 && !document.querySelector("#more").hidden`)
	done()
	b.click(ctx, "#more")
	sctx, done = step(time.Minute)
	b.waitFor(sctx, "all 55 after Show more", `document.querySelectorAll("#sandbox-rows tr[data-id]").length === 55 && document.querySelector("#more").hidden`)
	done()
	if f := b.pageFaults(); len(f) > 0 {
		t.Errorf("the page reported faults:\n%s", strings.Join(f, "\n"))
	}
}

// checkHeaders checks the page's security headers and that the
// dashboard's files carry no inline script.
func checkHeaders(t *testing.T, base string) {
	t.Helper()
	res, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %s", res.Status)
	}
	for k, want := range map[string]string{
		"Content-Security-Policy": dashboard.CSP, "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
	} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("GET / %s = %q, want %q", k, got, want)
		}
	}
}

// TestTerminalRenderer runs the dashboard's terminal renderer
// (dashboard/ui/term.js) in headless Chromium over a table of output and
// the screen it must leave, and checks that colours become classes.
func TestTerminalRenderer(t *testing.T) {
	testenv.Require(t, "chromium")
	t.Parallel()
	srv := httptest.NewServer(dashboard.Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	b := startBrowser(t, 800, 600)
	b.navigate(ctx, srv.URL+"/")
	b.waitFor(ctx, "the page", `document.querySelector("#token")`)
	tests := []struct {
		name   string
		writes []string // written one after another
		want   string   // Terminal.text(): lines, trailing blanks trimmed
	}{
		{"lines", []string{"a\nb\n"}, "a\nb"},
		{"carriage return", []string{"abc\rX"}, "Xbc"},
		{"backspace", []string{"abc\b\bX"}, "aXc"},
		{"erase by backspace", []string{"ab\b \b"}, "a"},
		{"tab", []string{"a\tb"}, "a       b"},
		{"wrap at the width", []string{"0123456789AB"}, "0123456789\nAB"},
		{"colours are not text", []string{"\x1b[1;31mred\x1b[0m plain"}, "red plain"},
		{"a sequence split across writes", []string{"x\x1b[3", "1my"}, "xy"},
		{"cursor back and erase to end of line", []string{"12345\x1b[3D\x1b[K"}, "12"},
		{"erase line", []string{"abc\x1b[2K\rd"}, "d"},
		{"cursor up", []string{"l1\nl2\x1b[1Ax"}, "l1x\nl2"},
		{"clear screen and scrollback", []string{"old\nstuff\x1b[H\x1b[2J\x1b[3Jnew"}, "new"},
		{"clear screen keeps scrollback", []string{"old\x1b[H\x1b[2Jnew"}, "old\nnew"},
		{"cursor position", []string{"\x1b[2;3Hx"}, "\n  x"},
		{"title (OSC) is ignored", []string{"\x1b]0;title\x07ok\x1b]2;t\x1b\\!"}, "ok!"},
		{"unknown sequences are ignored", []string{"\x1b[?25l\x1b[?2004hA\x1b=B"}, "AB"},
		{"markup is text", []string{"<b>x</b>"}, "<b>x</b>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			writes, _ := json.Marshal(tc.writes)
			var got string
			js := `(async () => { const { Terminal } = await import("/ui/term.js");
				const t = new Terminal(document.createElement("div"), { cols: 10, rows: 5 });
				for (const w of ` + string(writes) + `) t.write(w);
				return t.text(); })()`
			if err := b.eval(ctx, js, &got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("text after %q = %q, want %q", tc.writes, got, tc.want)
			}
		})
	}
	// Rendered: colours are classes on spans of text, the cursor a span.
	var spans []string
	js := `(async () => { const { Terminal } = await import("/ui/term.js");
		const el = document.createElement("div");
		const t = new Terminal(el, { cols: 40, rows: 5 });
		t.write("a\x1b[31mred\x1b[1;42mboth\x1b[0m<i>");
		await new Promise((r) => setTimeout(r, 0)); // the render is on a timer
		return [...el.querySelectorAll("span")].map((s) => s.className + ":" + s.textContent); })()`
	if err := b.eval(ctx, js, &spans); err != nil {
		t.Fatal(err)
	}
	want := []string{":a", "f1:red", "f1 b2 tb:both", ":<i>", "cur: "}
	if fmt.Sprint(spans) != fmt.Sprint(want) {
		t.Errorf("spans = %q, want %q", spans, want)
	}
	if f := b.pageFaults(); len(f) > 0 {
		t.Errorf("the page reported faults: %q", f)
	}
}
