package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
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
	// The page opens on the journal: looking at a sandbox starts no
	// shell, and so no container.
	sctx, done = step(time.Minute)
	b.waitFor(sctx, "the journal, the page's first tab", `document.querySelector("#tab-journal.on") && !document.querySelector("#panel-journal").hidden &&
		document.querySelector("#journal-rows tr[data-type='sandbox.created']")`)
	done()
	var started bool
	b.eval(ctx, `document.querySelector("#term-input") !== null`, &started)
	if started {
		t.Errorf("opening the sandbox's page started the terminal")
	}
	sb, err := c.Get(ctx, "dash-e2e")
	if err != nil {
		t.Fatalf("the dashboard's sandbox: %v", err)
	}
	if sb.State != rung.StateReady {
		t.Errorf("the sandbox is %s after its page opened, want %s (no container)", sb.State, rung.StateReady)
	}

	// The terminal: a login shell on a PTY in the container. Keys typed
	// go to it; its output (echo, SGR colours) is drawn; the shell's
	// state (the working directory) carries from one command to the next.
	b.click(ctx, "#tab-terminal")
	sctx, done = step(3 * time.Minute)
	b.waitFor(sctx, "the shell's first output", `/^\d+×\d+$/.test(document.querySelector("#term-status").textContent)`)
	done()
	termLine := func(what, text string) {
		t.Helper()
		sctx, done := step(2 * time.Minute)
		defer done()
		b.waitFor(sctx, what, fmt.Sprintf(`[...document.querySelectorAll("#term-screen .ln")].some((l) => l.textContent.trim() === %q)`, text))
	}
	b.typeInto(ctx, "#term-input", "echo hello-$((6*7))")
	b.pressEnter(ctx)
	termLine("the command's output", "hello-42")
	b.typeInto(ctx, "#term-input", `printf '\033[31mred\033[0m plain\n'`)
	b.pressEnter(ctx)
	sctx, done = step(2 * time.Minute)
	b.waitFor(sctx, "red text in the terminal", `[...document.querySelectorAll("#term-screen span.f1")].some((s) => s.textContent === "red")`)
	done()
	b.typeInto(ctx, "#term-input", "cd /tmp && pwd")
	b.pressEnter(ctx)
	termLine("the new working directory", "/tmp")
	b.typeInto(ctx, "#term-input", "pwd; echo still-$((1+1))")
	b.pressEnter(ctx)
	termLine("the working directory kept", "still-2")
	var pwds int
	b.eval(ctx, `[...document.querySelectorAll("#term-screen .ln")].filter((l) => l.textContent.trim() === "/tmp").length`, &pwds)
	if pwds != 2 {
		t.Errorf("the second command's pwd: %d lines of /tmp on the screen, want 2", pwds)
	}
	// No escape character reaches the page: the sequences were interpreted.
	var raw bool
	b.eval(ctx, `document.querySelector("#term-screen").textContent.includes("\x1b")`, &raw)
	if raw {
		t.Errorf("the terminal shows a raw escape sequence")
	}
	shot("03-terminal")
	// A program that asks for mouse reports (?1000, SGR encoding: as
	// vim's "set mouse=a" or "less --mouse" do) gets a click as the cell
	// under it: here the cursor's, column 9 of row 3 of the cleared
	// screen. "ready" is written last, so once it shows the modes are on
	// and the cursor is in its place; the two reports are 18 characters.
	b.typeInto(ctx, "#term-input", `printf '\033[H\033[2J\033[?1000h\033[?1006h\n\n   ready'; read -rs -n 18 x; printf '\033[?1000l\033[?1006l'; echo; echo "mouse:$(printf %s "$x" | tr -d '\033')"`)
	b.pressEnter(ctx)
	termLine("the mouse modes set", "ready")
	var at []float64
	b.eval(ctx, `(() => { const r = document.querySelector("#term-screen .cur").getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`, &at)
	if len(at) != 2 {
		t.Fatalf("the cursor's place: %v", at)
	}
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		b.page(ctx, "Input.dispatchMouseEvent", map[string]any{"type": typ, "x": at[0], "y": at[1], "button": "left", "clickCount": 1}, nil)
	}
	termLine("the click, press and release, as the program read them", "mouse:[<0;9;3M[<0;9;3m")
	shot("03a-terminal-mouse")
	// A narrower window resizes the terminal: the PTY gets the new size
	// (stty reads it from the terminal), and the shell still answers.
	var before string
	b.eval(ctx, `document.querySelector("#term-status").textContent`, &before)
	b.page(ctx, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 900, "height": 700, "deviceScaleFactor": 1, "mobile": false}, nil)
	sctx, done = step(time.Minute)
	size := b.waitFor(sctx, "the terminal's new size", fmt.Sprintf(`(() => { const s = document.querySelector("#term-status").textContent; return s !== %q && /^\d+×\d+$/.test(s) && s; })()`, before))
	done()
	var sizeText string
	var cols, rows int
	json.Unmarshal(size, &sizeText)
	if _, err := fmt.Sscanf(sizeText, "%d×%d", &cols, &rows); err != nil {
		t.Fatalf("terminal size %s: %v", size, err)
	}
	b.typeInto(ctx, "#term-input", "stty size")
	b.pressEnter(ctx)
	termLine("the PTY's new size", fmt.Sprintf("%d %d", rows, cols))
	shot("03b-terminal-resized")
	b.page(ctx, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false}, nil)
	// The shell exits: the session ends, and a new one starts on request.
	b.typeInto(ctx, "#term-input", "exit 3")
	b.pressEnter(ctx)
	sctx, done = step(time.Minute)
	b.waitFor(sctx, "the ended session", `document.querySelector("#term-status").textContent === "session ended" && !document.querySelector("#term-reconnect").hidden`)
	done()
	termLine("the shell's exit", "[session ended: exit 3]")
	b.click(ctx, "#term-reconnect")
	b.typeInto(ctx, "#term-input", "echo again-$((2+3)); pwd")
	b.pressEnter(ctx)
	termLine("the new session's output", "again-5")
	termLine("the new session's directory", "/workspace")
	shot("03c-terminal-new-session")

	// The journal follows the events stream: an exec made elsewhere shows
	// up without a reload, and so does the tier split.
	b.click(ctx, "#tab-journal")
	sctx, done = step(time.Minute)
	b.waitFor(sctx, "the terminal's exec in the journal", `[...document.querySelectorAll("#journal-rows tr[data-type='exec.started']")].some((r) => r.textContent.includes("bash -l") && r.textContent.includes('"pty"'))`)
	done()
	if _, err := c.Exec(ctx, string(sb.ID), client.ExecRequest{Command: "echo from-the-sdk"}); err != nil {
		t.Fatal(err)
	}
	sctx, done = step(time.Minute)
	b.waitFor(sctx, "the SDK's exec in the journal", `[...document.querySelectorAll("#journal-rows tr[data-type='exec.started']")].some((r) => r.textContent.includes("from-the-sdk"))`)
	// The server's counts: the SDK's exec in the isolate tier, the
	// terminal's first session in the container (the second still runs).
	b.waitFor(sctx, "the tier split", `document.querySelector("#tier-split").textContent === "isolate 1 · container 1"`)
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
	b.waitFor(sctx, "the running sandbox's memory", fmt.Sprintf(`document.querySelector("#sandbox-rows tr[data-id='%s'] td:nth-child(8)")?.textContent.endsWith("B")`, sb.ID))
	// Each row's tier split: the SDK's exec and the terminal's sessions
	// (the second ends when the page leaves the terminal or its container
	// stops); the fork has run nothing.
	b.waitFor(sctx, "the sandbox's tier split", fmt.Sprintf(`/^isolate 1 · container [12]$/.test(document.querySelector("#sandbox-rows tr[data-id='%s'] td.tiers")?.textContent)`, sb.ID))
	b.waitFor(sctx, "the fork's tier split", fmt.Sprintf(`[...document.querySelectorAll("#sandbox-rows tr[data-id]")].some((r) => r.dataset.id !== %q && r.querySelector("td.tiers").textContent === "isolate 0 · container 0")`, sb.ID))
	done()
	shot("10-list")

	// The list is paged: 50 rows, then "Show more" fetches the next page
	// after the first's cursor and appends it; the list's refresh then
	// fetches both pages again, each after its own cursor.
	for i := range 53 {
		if _, err := c.Create(ctx, client.CreateRequest{Name: fmt.Sprintf("page-%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	sctx, done = step(2 * time.Minute)
	b.waitFor(sctx, "the first page of 50", `document.querySelectorAll("#sandbox-rows tr[data-id]").length === 50 && !document.querySelector("#more").hidden`)
	done()
	b.eval(ctx, `performance.setResourceTimingBufferSize(100000); performance.clearResourceTimings()`, nil)
	b.click(ctx, "#more")
	sctx, done = step(time.Minute)
	b.waitFor(sctx, "all 55 after Show more", `document.querySelectorAll("#sandbox-rows tr[data-id]").length === 55 && document.querySelector("#more").hidden &&
		document.querySelector("#sandbox-rows tr[data-id]:last-child a").textContent === "page-52"`)
	done()
	listCalls := func() []string {
		var urls []string
		b.eval(ctx, `performance.getEntriesByType("resource").map((e) => e.name).filter((n) => n.includes("/v1/sandboxes?"))`, &urls)
		return urls
	}
	if urls := listCalls(); len(urls) == 0 || !strings.Contains(urls[0], "after=") || !strings.Contains(urls[0], "limit=50") {
		t.Errorf("Show more fetched %q; want the page of 50 after the first page's cursor", urls)
	}
	// Rows drawn from now on are new elements: wait for the next refresh's.
	b.eval(ctx, `document.querySelector("#sandbox-rows tr").dataset.drawn = "before"`, nil)
	sctx, done = step(time.Minute)
	b.waitFor(sctx, "the list's refresh", `!document.querySelector("#sandbox-rows tr[data-drawn]")`)
	done()
	var rowsAfter int
	b.eval(ctx, `document.querySelectorAll("#sandbox-rows tr[data-id]").length`, &rowsAfter)
	if rowsAfter != 55 {
		t.Errorf("after the list's refresh: %d rows, want the 55 of both pages", rowsAfter)
	}
	for _, u := range listCalls() {
		if !strings.Contains(u, "limit=50") {
			t.Errorf("the list fetched %s; every page is 50", u)
		}
	}
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
	const five = "a\r\nb\r\nc\r\nd\r\ne" // a screen of 5 lines, full
	tests := []struct {
		name   string
		writes []string // written one after another
		want   string   // Terminal.text(): lines, trailing blanks trimmed
		pty    bool     // LF is a line feed only (opts.crlf false), as on a PTY
	}{
		{"lines", []string{"a\nb\n"}, "a\nb", false},
		{"carriage return", []string{"abc\rX"}, "Xbc", false},
		{"backspace", []string{"abc\b\bX"}, "aXc", false},
		{"erase by backspace", []string{"ab\b \b"}, "a", false},
		{"tab", []string{"a\tb"}, "a       b", false},
		{"wrap at the width", []string{"0123456789AB"}, "0123456789\nAB", false},
		{"colours are not text", []string{"\x1b[1;31mred\x1b[0m plain"}, "red plain", false},
		{"a sequence split across writes", []string{"x\x1b[3", "1my"}, "xy", false},
		{"cursor back and erase to end of line", []string{"12345\x1b[3D\x1b[K"}, "12", false},
		{"erase line", []string{"abc\x1b[2K\rd"}, "d", false},
		{"cursor up", []string{"l1\nl2\x1b[1Ax"}, "l1x\nl2", false},
		{"clear screen and scrollback", []string{"old\nstuff\x1b[H\x1b[2J\x1b[3Jnew"}, "new", false},
		{"clear screen keeps scrollback", []string{"old\x1b[H\x1b[2Jnew"}, "old\nnew", false},
		{"cursor position", []string{"\x1b[2;3Hx"}, "\n  x", false},
		{"title (OSC) is ignored", []string{"\x1b]0;title\x07ok\x1b]2;t\x1b\\!"}, "ok!", false},
		{"unknown sequences are ignored", []string{"\x1b[?25l\x1b[?2004hA\x1b=B"}, "AB", false},
		{"markup is text", []string{"<b>x</b>"}, "<b>x</b>", false},
		// What bash and readline send on a PTY.
		{"pty: LF keeps the column", []string{"ab\ncd"}, "ab\n  cd", true},
		{"pty: CR LF", []string{"$ ls\r\na  b\r\n$ "}, "$ ls\na  b\n$", true},
		{"readline: rubout", []string{"$ abc\b\x1b[K"}, "$ ab", true},
		{"readline: rubout by overwrite", []string{"$ abc\b \b\b \b"}, "$ a", true},
		{"delete characters", []string{"abcdef\r\x1b[2C\x1b[2P"}, "abef", true},
		{"insert characters", []string{"abef\r\x1b[2C\x1b[2@cd"}, "abcdef", true},
		{"insert mode", []string{"abef\r\x1b[2C\x1b[4hcd\x1b[4lX"}, "abcdXf", true},
		{"erase characters", []string{"abcdef\r\x1b[C\x1b[3X"}, "a   ef", true},
		{"pending wrap: CR returns on the same line", []string{"0123456789\rX"}, "X123456789", true},
		{"pending wrap: cursor left from the last column", []string{"0123456789\x1b[D\x1b[KX"}, "01234567X", true},
		{"pending wrap: backspace from the last column", []string{"0123456789\bX"}, "01234567X9", true},
		{"pending wrap: the next character wraps", []string{"0123456789", "A"}, "0123456789\nA", true},
		{"save and restore the cursor", []string{"ab\x1b7cd\x1b8X", "\x1b[se\x1b[uY"}, "abXY", true},
		{"cursor down stays on the screen", []string{"a\x1b[9Bb"}, "a\n\n\n\n b", true},
		{"charset designation is not text", []string{"\x1b(Bx\x1b)0y"}, "xy", true},
		{"other private and intermediate sequences", []string{"\x1b[>4;1mA\x1b[2 qB\x1b[?1004hC"}, "ABC", true},
		// Recorded from bash 5 (readline) on a 10-column PTY: typing
		// "echo abcdefghij" and six Backspaces, Enter; "echo hxllo", three
		// Lefts, Backspace, "e", Home, Delete, "X", Enter; "exit".
		{"bash readline, recorded: edits across a wrapped line", []string{"\u001b[?2004h$ echo abcdefghij\b\u001b[K\b\u001b[K\b\u001b[K\b\u001b[K\b\u001b[K\b\u001b[K\r\n\u001b[?2004l\rabcd\r\n\u001b[?2004h$ echo hxllo\b\r\u001b[A\u001b[C\u001b[C\u001b[C\u001b[C\u001b[C\u001b[C\u001b[C\u001b[C\u001b[C\bllo\u001b[K\u001b[A\u001b[C\u001b[C\u001b[C\u001b[C\u001b[C\u001b[C\u001b[Cello\u001b[A\u001b[C\u001b[C\u001b[C\u001b[C\u001b[C\u001b[C\u001b[C\r\u001b[C\u001b[Ccho hello\u001b[K\u001b[A\u001b[CXcho hello\u001b[A\u001b[C\r\n\r\r\n\u001b[?2004l\rbash: Xcho: command not found\r\n\u001b[?2004h$ exit\r\n\u001b[?2004l\rexit\r\n"},
			"$ echo abc\nd\nabcd\n$ Xcho hel\nlo\nbash: Xcho\n: command\nnot found\n$ exit\nexit", true},
		{"clear screen (Ctrl-L)", []string{"$ x\r\n\x1b[H\x1b[2J$ "}, "$ x\n\n$", true},
		// Scroll regions: rows 2 to 4 of a screen holding a to e.
		{"scroll region: a line feed at its bottom scrolls it", []string{five + "\x1b[2;4r\x1b[4;1H\nX"}, "a\nc\nd\nX\ne", true},
		{"scroll region: reverse index at its top scrolls it down", []string{five + "\x1b[2;4r\x1b[2;1H\x1bMX"}, "a\nX\nb\nc\ne", true},
		{"scroll region: insert and delete lines", []string{five + "\x1b[2;4r\x1b[3;1H\x1b[L", "\x1b[2;1H\x1b[2M"}, "a\nc\n\n\ne", true},
		{"scroll region: scroll up and down", []string{five + "\x1b[2;4r\x1b[S", "\x1b[2T"}, "a\n\n\nc\ne", true},
		{"scroll region: index and next line", []string{five + "\x1b[1;3r\x1b[3;2H\x1bDX\x1bEY"}, "c\n X\nY\nd\ne", true},
		{"scroll region: cursor up stops at its top", []string{"\x1b[3;5r\x1b[4;1H\x1b[9AX"}, "\n\nX", true},
		{"origin mode", []string{"\x1b[2;4r\x1b[?6h\x1b[1;1HA\x1b[9;1HB"}, "\nA\n\nB", true},
		// The alternate screen.
		{"alternate screen: shown, empty, the cursor in place", []string{"main1\r\nmain2\x1b[?1049halt"}, "\n     alt", true},
		{"alternate screen: the main one and its scrollback restored", []string{"l1\r\nl2\r\nl3\r\nl4\r\nl5\r\nl6\r\nl7",
			"\x1b[?1049h\x1b[H\x1b[2Jfull\r\nscreen\r\n\r\n\r\n\r\nscrolled", "\x1b[?1049lX"}, "l1\nl2\nl3\nl4\nl5\nl6\nl7X", true},
		{"alternate screen: ?47 keeps it", []string{"ab\x1b[?47hcd\x1b[?47lef\x1b[?47h"}, "  cd", true},
		{"alternate screen: leaving ?1047 clears it", []string{"ab\x1b[?1047hcd\x1b[?1047l\x1b[?47hX"}, "    X", true},
		{"?1048 saves the cursor", []string{"ab\x1b[?1048hcd\x1b[?1048lX"}, "abXd", true},
		{"DCS strings are not text", []string{"a\x1bPzz\x1b\\b"}, "ab", true},
		{"repeat the last character", []string{"ab\x1b[3b"}, "abbbb", true},
		{"tab stops: cleared, set, to the last column", []string{"\x1b[3g\x1b[3G\x1bH\r\ta\tb"}, "  a      b", true},
		{"tab forward and back", []string{"\x1b[2Ia\x1b[Zb"}, "        ba", true},
		{"autowrap off", []string{"\x1b[?7l0123456789AB"}, "012345678B", true},
		{"line drawing characters", []string{"\x1b(0lqk\x1b(Bq"}, "┌─┐q", true},
		{"erase to the end at the pending wrap keeps the line", []string{"0123456789\x1b[K"}, "0123456789", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			writes, _ := json.Marshal(tc.writes)
			var got string
			js := `(async () => { const { Terminal } = await import("/ui/term.js");
				const t = new Terminal(document.createElement("div"), { cols: 10, rows: 5, crlf: ` + fmt.Sprint(!tc.pty) + ` });
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
	// 256 colours past the first 16 and truecolour have no class: they
	// are set on the span's style object, which the CSP allows.
	js = `(async () => { const { Terminal } = await import("/ui/term.js");
		const el = document.body.appendChild(document.createElement("div"));
		const t = new Terminal(el, { cols: 40, rows: 5 });
		t.write("\x1b[38;5;196mr\x1b[48;2;1;2;3mt\x1b[38;5;2mg\x1b[0m\x1b[38:2::0:0:255mb\x1b[m");
		await new Promise((r) => setTimeout(r, 0));
		const got = [...el.querySelectorAll("span")].map((s) => s.className + ":" + s.style.color + "/" + s.style.backgroundColor + ":" + s.textContent);
		el.remove();
		return got; })()`
	if err := b.eval(ctx, js, &spans); err != nil {
		t.Fatal(err)
	}
	want = []string{":rgb(255, 0, 0)/:r", ":rgb(255, 0, 0)/rgb(1, 2, 3):t", "f2:/rgb(1, 2, 3):g", ":rgb(0, 0, 255)/:b", "cur:/: "}
	if fmt.Sprint(spans) != fmt.Sprint(want) {
		t.Errorf("spans = %q, want %q", spans, want)
	}
	// Queries are answered through opts.reply: the cursor's position,
	// the status and the primary device attributes (not the secondary).
	var replies []string
	js = `(async () => { const { Terminal } = await import("/ui/term.js");
		const out = [];
		const t = new Terminal(document.createElement("div"), { cols: 10, rows: 5, reply: (d) => out.push(d) });
		t.write("\r\nab\x1b[6n\x1b[5n\x1b[c\x1b[>c");
		return out; })()`
	if err := b.eval(ctx, js, &replies); err != nil {
		t.Fatal(err)
	}
	if want := []string{"\x1b[2;3R", "\x1b[0n", "\x1b[?1;2c"}; fmt.Sprint(replies) != fmt.Sprint(want) {
		t.Errorf("replies = %q, want %q", replies, want)
	}
	// The cursor is hidden and shown by ?25; bracketed paste is tracked.
	var modes []any
	js = `(async () => { const { Terminal } = await import("/ui/term.js");
		const el = document.createElement("div");
		const t = new Terminal(el, { cols: 40, rows: 5 });
		const tick = () => new Promise((r) => setTimeout(r, 0));
		t.write("x\x1b[?25l\x1b[?2004h"); await tick();
		const hidden = el.querySelectorAll(".cur").length, paste = t.bracketedPaste;
		t.write("\x1b[?25h\x1b[?2004l"); await tick();
		const shown = el.querySelectorAll(".cur").length, pasteOff = t.bracketedPaste;
		t.write("\x1b[?1h"); const app = t.appCursor;
		t.write("\x1b[?1l");
		return [hidden, paste, shown, pasteOff, app, t.appCursor]; })()`
	if err := b.eval(ctx, js, &modes); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(modes) != "[0 true 1 false true false]" {
		t.Errorf("[cursors while hidden, bracketed paste on, cursors when shown, bracketed paste off, ?1h, ?1l] = %v, want [0 true 1 false true false]", modes)
	}
	// Drawn: the alternate screen is drawn whole, in place of the main
	// screen and its scrollback, which are drawn again on leaving it.
	var drawn []string
	js = `(async () => { const { Terminal } = await import("/ui/term.js");
		const el = document.createElement("div");
		const t = new Terminal(el, { cols: 10, rows: 3, crlf: false });
		const tick = () => new Promise((r) => setTimeout(r, 0));
		const lines = () => [...el.children].map((l) => l.textContent.trimEnd()).join("|");
		t.write("1\r\n2\r\n3\r\n4"); await tick();
		const main = lines();
		t.write("\x1b[?1049h\x1b[Halt"); await tick();
		const alt = lines();
		t.write("\x1b[?1049l"); await tick();
		return [main, alt, lines()]; })()`
	if err := b.eval(ctx, js, &drawn); err != nil {
		t.Fatal(err)
	}
	if want := []string{"1|2|3|4", "alt||", "1|2|3|4"}; fmt.Sprint(drawn) != fmt.Sprint(want) {
		t.Errorf("lines drawn [main, alternate, main again] = %q, want %q", drawn, want)
	}
	testRecordedSessions(ctx, t, b)
	testMouseReports(ctx, t, b)
	// Keys: what the PTY terminal sends for each (dashboard/ui/exec.js).
	keys := []struct {
		event string // KeyboardEvent init, JSON
		want  string
		app   bool // application cursor keys (?1h)
	}{
		{`{"key":"ArrowUp"}`, "\x1bOA", true},
		{`{"key":"Home"}`, "\x1bOH", true},
		{`{"key":"End"}`, "\x1bOF", true},
		{`{"key":"Delete"}`, "\x1b[3~", true},
		{`{"key":"ArrowLeft","ctrlKey":true}`, "\x1b[1;5D", true},
		{`{"key":"ArrowRight","shiftKey":true}`, "\x1b[1;2C", false},
		{`{"key":"Delete","ctrlKey":true}`, "\x1b[3;5~", false},
		{`{"key":"PageDown"}`, "\x1b[6~", false},
		{`{"key":"Escape"}`, "\x1b", false},
		{`{"key":"F1"}`, "\x1bOP", false},
		{`{"key":"F5"}`, "\x1b[15~", false},
		{`{"key":"F10"}`, "\x1b[21~", false},
		{`{"key":"Enter"}`, "\r", false},
		{`{"key":"Backspace"}`, "\x7f", false},
		{`{"key":"ArrowUp"}`, "\x1b[A", false},
		{`{"key":"ArrowLeft"}`, "\x1b[D", false},
		{`{"key":"Home"}`, "\x1b[H", false},
		{`{"key":"End"}`, "\x1b[F", false},
		{`{"key":"Delete"}`, "\x1b[3~", false},
		{`{"key":"Tab"}`, "\t", false},
		{`{"key":"Tab","shiftKey":true}`, "\x1b[Z", false},
		{`{"key":"c","ctrlKey":true}`, "\x03", false},
		{`{"key":"D","ctrlKey":true,"shiftKey":true}`, "\x04", false},
		{`{"key":"[","ctrlKey":true}`, "\x1b", false},
		{`{"key":"b","altKey":true}`, "\x1bb", false},
		{`{"key":"V","ctrlKey":true,"shiftKey":true}`, "", false}, // the browser pastes
		{`{"key":"C","ctrlKey":true,"shiftKey":true}`, "", false}, // the browser copies
		{`{"key":"Insert","shiftKey":true}`, "", false},
		{`{"key":"Insert"}`, "\x1b[2~", false},
		{`{"key":"a"}`, "", false}, // text: the input event sends it
		{`{"key":"v","metaKey":true}`, "", false},
		{`{"key":"Shift","shiftKey":true}`, "", false},
	}
	for _, k := range keys {
		var got string
		js := `(async () => { const { keyData } = await import("/ui/exec.js");
			return keyData(new KeyboardEvent("keydown", ` + k.event + `), ` + fmt.Sprint(k.app) + `); })()`
		if err := b.eval(ctx, js, &got); err != nil {
			t.Fatal(err)
		}
		if got != k.want {
			t.Errorf("keyData(%s, appCursor %v) = %q, want %q", k.event, k.app, got, k.want)
		}
	}
	if f := b.pageFaults(); len(f) > 0 {
		t.Errorf("the page reported faults: %q", f)
	}
}

// TestDashboardLineMode checks the terminal's fallback: on a server
// without the container tier the PTY exec is refused (unavailable), and
// the terminal runs each line as one exec in the isolate tier instead.
func TestDashboardLineMode(t *testing.T) {
	testenv.Require(t, "chromium")
	d, addr := startDaemonWith(t, DaemonConfig{Data: t.TempDir(), NoContainers: true})
	c := client.New(addr, client.WithToken(d.Token))
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	sb, err := c.Create(ctx, client.CreateRequest{Name: "no-pty"})
	if err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t, 1200, 900)
	dashboardLogin(ctx, b, "http://"+addr, d.Token)
	b.navigate(ctx, "http://"+addr+"/#/s/"+string(sb.ID)+"/terminal")
	b.waitFor(ctx, "the refused terminal", `document.querySelector("#term-screen").textContent.includes("[no terminal: ")`)
	b.waitFor(ctx, "line mode's input", `document.querySelector("#term-input")?.tagName === "INPUT" && document.querySelector("#term-status").textContent === "idle"`)
	b.typeInto(ctx, "#term-input", "echo hello-$((6*7))")
	b.pressEnter(ctx)
	b.waitFor(ctx, "the command's output", `[...document.querySelectorAll("#term-screen .ln")].some((l) => l.textContent === "hello-42")`)
	b.waitFor(ctx, "the command's exit", `document.querySelector("#term-screen").textContent.includes("[exit 0 · isolate")`)
	if dir := artifactDir(t); dir != "" {
		b.screenshot(ctx, filepath.Join(dir, "line-mode.png"))
	}
	if f := b.pageFaults(); len(f) > 0 {
		t.Errorf("the page reported faults:\n%s", strings.Join(f, "\n"))
	}
}

// testMouseReports checks what the terminal sends for mouse events
// under each mouse mode and encoding a program may set (xterm's
// ctlseqs, "Mouse Tracking"), and which cell a point is over.
func testMouseReports(ctx context.Context, t *testing.T, b *browser) {
	const (
		press   = `{"action":"press","button":0,"col":4,"row":2}`
		release = `{"action":"release","button":0,"col":4,"row":2}`
	)
	tests := []struct {
		name  string
		modes string // written first
		event string // the event, JSON (Terminal.mouseReport's argument)
		want  string
	}{
		{"off: nothing", "", press, ""},
		{"turned off again", "\x1b[?1000h\x1b[?1000l", press, ""},
		{"reset of another mode turns it off", "\x1b[?1002h\x1b[?1000l", press, ""},
		{"1000: press", "\x1b[?1000h", press, "\x1b[M %#"},
		{"1000: release is button 3", "\x1b[?1000h", release, "\x1b[M#%#"},
		{"1000: right button with Ctrl and Shift", "\x1b[?1000h", `{"action":"press","button":2,"col":0,"row":0,"ctrl":true,"shift":true}`, "\x1b[M6!!"},
		{"1000: Alt is 8", "\x1b[?1000h", `{"action":"press","button":1,"col":0,"row":0,"alt":true}`, "\x1b[M)!!"},
		{"1000: wheel up and down", "\x1b[?1000h", `{"action":"wheel","button":-1,"up":true,"col":0,"row":0}`, "\x1b[M`!!"},
		{"1000: no motion", "\x1b[?1000h", `{"action":"move","button":0,"col":1,"row":1}`, ""},
		{"1002: motion with a button held", "\x1b[?1002h", `{"action":"move","button":0,"col":1,"row":1}`, "\x1b[M@\"\""},
		{"1002: no motion without one", "\x1b[?1002h", `{"action":"move","button":-1,"col":1,"row":1}`, ""},
		{"1003: any motion", "\x1b[?1003h", `{"action":"move","button":-1,"col":1,"row":1}`, "\x1b[MC\"\""},
		{"9 (X10): press without modifiers", "\x1b[?9h", `{"action":"press","button":0,"col":4,"row":2,"ctrl":true}`, "\x1b[M %#"},
		{"9 (X10): no release", "\x1b[?9h", release, ""},
		{"past column 95 in bytes: not sent", "\x1b[?1000h", `{"action":"press","button":0,"col":95,"row":0}`, ""},
		{"SGR: press", "\x1b[?1000h\x1b[?1006h", press, "\x1b[<0;5;3M"},
		{"SGR: release names its button", "\x1b[?1000h\x1b[?1006h", `{"action":"release","button":2,"col":4,"row":2}`, "\x1b[<2;5;3m"},
		{"SGR: wheel down with Ctrl", "\x1b[?1000h\x1b[?1006h", `{"action":"wheel","button":-1,"up":false,"col":9,"row":0,"ctrl":true}`, "\x1b[<81;10;1M"},
		{"SGR: far cells", "\x1b[?1003h\x1b[?1006h", `{"action":"move","button":-1,"col":299,"row":119}`, "\x1b[<35;300;120M"},
		{"SGR off: bytes again", "\x1b[?1000h\x1b[?1006h\x1b[?1006l", press, "\x1b[M %#"},
		{"urxvt (1015)", "\x1b[?1000h\x1b[?1015h", release, "\x1b[35;5;3M"},
		{"UTF-8 (1005): far cells as characters", "\x1b[?1000h\x1b[?1005h", `{"action":"press","button":0,"col":199,"row":0}`, "\x1b[M \u00e8!"},
		{"a full reset turns it off", "\x1b[?1000h\x1bc", press, ""},
	}
	for _, tc := range tests {
		t.Run("mouse "+tc.name, func(t *testing.T) {
			modes, _ := json.Marshal(tc.modes)
			var got string
			js := `(async () => { const { Terminal } = await import("/ui/term.js");
				const t = new Terminal(document.createElement("div"), { cols: 300, rows: 120 });
				t.write(` + string(modes) + `);
				return t.mouseReport(` + tc.event + `); })()`
			if err := b.eval(ctx, js, &got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("after %q, mouseReport(%s) = %q, want %q", tc.modes, tc.event, got, tc.want)
			}
		})
	}
	// cellAt: the screen's top line is its row 0, below the scrollback.
	var cell []int
	js := `(async () => { const { Terminal } = await import("/ui/term.js");
		const el = document.body.appendChild(document.createElement("div"));
		const t = new Terminal(el, { cols: 10, rows: 3, crlf: false });
		t.write("1\r\n2\r\n3\r\n4\r\n5");
		await new Promise((r) => setTimeout(r, 0));
		const box = el.children[2].getBoundingClientRect(); // "3": the screen's first line
		const cell = { w: 10, h: 20 };
		const at = t.cellAt(box.left + 4 * 10 + 5, box.top + 2 * 20 + 5, cell);
		const off = t.cellAt(box.left - 50, box.top + 100 * 20, cell);
		el.remove();
		return [at.col, at.row, off.col, off.row]; })()`
	if err := b.eval(ctx, js, &cell); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(cell) != "[4 2 0 2]" {
		t.Errorf("cellAt [col row of a point in cell 4,2; of a point off the screen] = %v, want [4 2 0 2]", cell)
	}
}

// testRecordedSessions replays sessions of full-screen programs recorded
// on a PTY (testdata/term/*.json, made by record.py there) through the
// terminal renderer, step by step, and checks each screen the recording
// names, line by line, against the one tmux drew from the same output
// (the oracle, see testdata/term/README): less paging, scrolling back a
// line at a time and searching; vim moving, deleting and opening lines
// in scroll regions; top drawing the main screen; and the shell's lines
// from before each program, restored with their scrollback after.
func testRecordedSessions(ctx context.Context, t *testing.T, b *browser) {
	for _, name := range []string{"less", "vim", "top"} {
		t.Run("recorded "+name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "term", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				Cols, Rows int
				Steps      []struct{ In, Out string }
				Checks     []struct {
					Step   int
					Screen []string // the screen's lines, trailing blanks trimmed
					Text   []string // the main screen and its scrollback
				}
			}
			if err := json.Unmarshal(data, &rec); err != nil {
				t.Fatal(err)
			}
			for _, c := range rec.Checks {
				var out []string
				for _, s := range rec.Steps[:c.Step+1] {
					out = append(out, s.Out)
				}
				writes, _ := json.Marshal(out)
				var got []string
				result := "t.screen()"
				if c.Text != nil {
					result = `t.text().split("\n")`
				}
				js := fmt.Sprintf(`(async () => { const { Terminal } = await import("/ui/term.js");
					const t = new Terminal(document.createElement("div"), { cols: %d, rows: %d, crlf: false });
					for (const w of %s) t.write(w);
					return %s; })()`, rec.Cols, rec.Rows, writes, result)
				if err := b.eval(ctx, js, &got); err != nil {
					t.Fatal(err)
				}
				want := c.Screen
				if c.Text != nil {
					want = c.Text
				}
				if len(got) != len(want) {
					t.Errorf("after step %d (%q): %d lines, want %d:\n%s", c.Step, rec.Steps[c.Step].In, len(got), len(want), strings.Join(got, "\n"))
					continue
				}
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("after step %d (%q), line %d = %q, want %q", c.Step, rec.Steps[c.Step].In, i+1, got[i], want[i])
					}
				}
			}
		})
	}
}
