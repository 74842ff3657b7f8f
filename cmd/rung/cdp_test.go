package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A small Chrome DevTools Protocol client, for driving Debian's headless
// Chromium from tests (the dashboard's). It speaks CDP's JSON messages
// over the browser's WebSocket, attaches to one page with a flat session,
// and records what the page reports as going wrong (uncaught exceptions,
// console errors, Content-Security-Policy violations) so a test can fail
// on them.

// browser is a headless Chromium process and one page in it.
type browser struct {
	t       testing.TB
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	conn    *websocket.Conn
	session string // the page's flat session id

	mu      sync.Mutex // guards the fields below
	next    int64
	pending map[int64]chan cdpReply
	faults  []string // exceptions, console errors, log errors
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type cdpMessage struct {
	ID        int64           `json:"id"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	SessionID string          `json:"sessionId"`
	cdpReply
}

var devtoolsURL = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

// startBrowser starts headless Chromium with a profile in a temporary
// directory, opens a page of width x height and attaches to it. The
// browser is killed when the test ends.
func startBrowser(t testing.TB, width, height int) *browser {
	t.Helper()
	profile := t.TempDir()
	args := []string{
		"--headless", "--remote-debugging-port=0", "--user-data-dir=" + profile,
		"--no-first-run", "--no-default-browser-check", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-extensions", "--disable-background-networking", "--disable-sync", "--mute-audio",
		"--disable-background-timer-throttling", "--disable-renderer-backgrounding",
		fmt.Sprintf("--window-size=%d,%d", width, height), "about:blank",
	}
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its setuid/namespace
		// sandbox; the page it loads is our own dashboard.
		args = append([]string{"--no-sandbox"}, args...)
	}
	b := &browser{t: t, done: make(chan struct{}), pending: map[int64]chan cdpReply{}}
	b.cmd = exec.Command("chromium", args...)
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers die with it
	stderr, err := b.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	urlc := make(chan string, 1)
	var logMu sync.Mutex
	var log strings.Builder
	go func() { // ends when chromium closes stderr (it exits)
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			logMu.Lock()
			if log.Len() < 64<<10 {
				log.WriteString(sc.Text() + "\n")
			}
			logMu.Unlock()
			if m := devtoolsURL.FindStringSubmatch(sc.Text()); m != nil && !sent {
				urlc <- m[1]
				sent = true
			}
		}
		b.cmd.Wait()
		close(b.done)
	}()
	t.Cleanup(func() {
		if b.conn != nil {
			b.conn.CloseNow()
		}
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-b.done
	})
	var wsURL string
	select {
	case wsURL = <-urlc:
	case <-b.done:
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("chromium exited before listening: %s", log.String())
	case <-time.After(time.Minute):
		t.Fatal("chromium did not announce its DevTools endpoint in a minute")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		t.Fatalf("dial devtools: %v", err)
	}
	conn.SetReadLimit(256 << 20) // screenshots arrive base64 in one message
	b.conn = conn
	go b.read() // ends when the connection closes (Cleanup)

	var target struct{ TargetID string }
	b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct{ SessionID string }
	b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	b.session = att.SessionID
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		b.call(ctx, b.session, m, nil, nil)
	}
	b.call(ctx, b.session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	return b
}

// read dispatches replies to their callers and records the page's faults.
func (b *browser) read() {
	for {
		_, data, err := b.conn.Read(context.Background())
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m cdpMessage
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		if m.ID != 0 {
			b.mu.Lock()
			ch := b.pending[m.ID]
			delete(b.pending, m.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- m.cdpReply
			}
			continue
		}
		if f := fault(m.Method, m.Params); f != "" {
			b.mu.Lock()
			b.faults = append(b.faults, f)
			b.mu.Unlock()
		}
	}
}

// fault describes an event that means the page misbehaved, or "".
func fault(method string, params json.RawMessage) string {
	switch method {
	case "Runtime.exceptionThrown":
		var p struct {
			ExceptionDetails struct {
				Text      string
				Exception struct{ Description string }
			}
		}
		json.Unmarshal(params, &p)
		return "exception: " + p.ExceptionDetails.Text + " " + p.ExceptionDetails.Exception.Description
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string
			Args []struct {
				Value       any
				Description string
			}
		}
		json.Unmarshal(params, &p)
		if p.Type != "error" && p.Type != "assert" {
			return ""
		}
		var parts []string
		for _, a := range p.Args {
			parts = append(parts, fmt.Sprint(a.Value, a.Description))
		}
		return "console." + p.Type + ": " + strings.Join(parts, " ")
	case "Log.entryAdded":
		var p struct {
			Entry struct{ Source, Level, Text, URL string }
		}
		json.Unmarshal(params, &p)
		if p.Entry.Level != "error" {
			return ""
		}
		return "log (" + p.Entry.Source + "): " + p.Entry.Text + " " + p.Entry.URL
	}
	return ""
}

// call sends one command (to the page's session, or to the browser when
// session is "") and decodes its result into out (nil: discard). A CDP
// error, a closed connection or ctx's end fails the test.
func (b *browser) call(ctx context.Context, session, method string, params, out any) {
	b.t.Helper()
	if err := b.try(ctx, session, method, params, out); err != nil {
		b.t.Fatalf("%s: %v", method, err)
	}
}

func (b *browser) try(ctx context.Context, session, method string, params, out any) error {
	b.mu.Lock()
	b.next++
	id := b.next
	ch := make(chan cdpReply, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
	}()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, _ := json.Marshal(msg)
	if err := b.conn.Write(ctx, websocket.MessageText, data); err != nil {
		return err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return io.ErrUnexpectedEOF
		}
		if r.Error != nil {
			return fmt.Errorf("cdp error %d: %s", r.Error.Code, r.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// page sends a command to the page.
func (b *browser) page(ctx context.Context, method string, params, out any) {
	b.t.Helper()
	b.call(ctx, b.session, method, params, out)
}

// eval evaluates expr in the page (awaiting it if it is a promise) and
// decodes its value into out (nil: discard); a thrown exception is an
// error.
func (b *browser) eval(ctx context.Context, expr string, out any) error {
	var r struct {
		Result           struct{ Value json.RawMessage }
		ExceptionDetails *struct {
			Text      string
			Exception struct{ Description string }
		}
	}
	err := b.try(ctx, b.session, "Runtime.evaluate", map[string]any{
		"expression": expr, "awaitPromise": true, "returnByValue": true, "userGesture": true}, &r)
	if err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("%s %s", r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out != nil && len(r.Result.Value) > 0 {
		return json.Unmarshal(r.Result.Value, out)
	}
	return nil
}

// waitFor waits until the JavaScript expression cond is truthy in the
// page, and returns its value as JSON. It does not poll on a timer: the
// page re-checks cond at each DOM mutation (a MutationObserver) and
// resolves the evaluation when it holds. A navigation in between, which
// destroys the evaluation's context, is retried. It gives up, with a
// screenshot and the page's text, when ctx ends.
func (b *browser) waitFor(ctx context.Context, what, cond string) json.RawMessage {
	b.t.Helper()
	expr := `new Promise((resolve) => {
	let obs = null;
	const check = () => {
		let v;
		try { v = (` + cond + `); } catch (e) { v = undefined; }
		if (v) { if (obs) obs.disconnect(); resolve(v); return true; }
		return false;
	};
	if (!check()) {
		obs = new MutationObserver(check);
		obs.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
	}
})`
	for {
		var v json.RawMessage
		err := b.eval(ctx, expr, &v)
		if err == nil {
			return v
		}
		if ctx.Err() != nil {
			b.dumpPage(what)
			b.t.Fatalf("waiting for %s (%s): %v", what, cond, err)
		}
		// The context went away under the evaluation (a navigation or a
		// reload): evaluate again in the new document.
		if !strings.Contains(err.Error(), "context") && !strings.Contains(err.Error(), "Inspected target navigated") {
			b.t.Fatalf("waiting for %s: %v", what, err)
		}
	}
}

// dumpPage logs the page's text and saves a screenshot, for a failure.
func (b *browser) dumpPage(what string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var text string
	b.eval(ctx, `location.href + "\n" + document.body.innerText`, &text)
	b.t.Logf("page while waiting for %s:\n%s", what, text)
	b.t.Logf("page faults: %q", b.pageFaults())
	if dir := artifactDir(b.t); dir != "" {
		b.screenshot(ctx, filepath.Join(dir, "failure.png"))
	}
}

// screenshot saves the page as a PNG at path.
func (b *browser) screenshot(ctx context.Context, path string) {
	var r struct{ Data string }
	if err := b.try(ctx, b.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &r); err != nil {
		b.t.Errorf("screenshot %s: %v", path, err)
		return
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		b.t.Errorf("screenshot %s: %v", path, err)
		return
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Errorf("screenshot: %v", err)
	}
}

// click clicks the centre of the element sel selects with real mouse
// events, after scrolling it into view.
func (b *browser) click(ctx context.Context, sel string) {
	b.t.Helper()
	var pt struct{ X, Y float64 }
	js := fmt.Sprintf(`(() => { const el = document.querySelector(%q); if (!el) throw new Error("no element " + %q);
		el.scrollIntoView({block: "center"}); const r = el.getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()`, sel, sel)
	if err := b.eval(ctx, js, &pt); err != nil {
		b.t.Fatalf("click %s: %v", sel, err)
	}
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		b.page(ctx, "Input.dispatchMouseEvent", map[string]any{"type": typ, "x": pt.X, "y": pt.Y, "button": "left", "clickCount": 1}, nil)
	}
}

// typeInto focuses sel and types text into it as the keyboard would
// insert it.
func (b *browser) typeInto(ctx context.Context, sel, text string) {
	b.t.Helper()
	if err := b.eval(ctx, fmt.Sprintf(`document.querySelector(%q).focus()`, sel), nil); err != nil {
		b.t.Fatalf("focus %s: %v", sel, err)
	}
	b.page(ctx, "Input.insertText", map[string]any{"text": text}, nil)
}

// press sends a key (Enter) to the focused element, down and up.
func (b *browser) pressEnter(ctx context.Context) {
	b.t.Helper()
	b.page(ctx, "Input.dispatchKeyEvent", map[string]any{"type": "keyDown", "key": "Enter", "code": "Enter",
		"windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13, "text": "\r", "unmodifiedText": "\r"}, nil)
	b.page(ctx, "Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": "Enter", "code": "Enter",
		"windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13}, nil)
}

// navigate loads url in the page (the load itself is waited for with
// waitFor on what the page shows).
func (b *browser) navigate(ctx context.Context, url string) {
	b.t.Helper()
	var r struct{ ErrorText string }
	b.page(ctx, "Page.navigate", map[string]any{"url": url}, &r)
	if r.ErrorText != "" {
		b.t.Fatalf("navigate %s: %s", url, r.ErrorText)
	}
}

// pageFaults returns what the page has reported as going wrong so far.
func (b *browser) pageFaults() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.faults...)
}

// clearFaults forgets the faults recorded so far (the expected ones).
func (b *browser) clearFaults() {
	b.mu.Lock()
	b.faults = nil
	b.mu.Unlock()
}

// artifactDir is where a test keeps its screenshots: $RUNG_ARTIFACTS/<test>
// when set (kept after the run), else the test's artifact directory
// (go test -artifacts keeps it; otherwise it is removed with the test).
func artifactDir(t testing.TB) string {
	if root := os.Getenv("RUNG_ARTIFACTS"); root != "" {
		dir := filepath.Join(root, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Errorf("artifacts: %v", err)
			return ""
		}
		return dir
	}
	if a, ok := t.(interface{ ArtifactDir() string }); ok {
		return a.ArtifactDir()
	}
	return ""
}
