// The dashboard's terminal: a Terminal renderer fed by execs over the
// exec WebSocket. When the sandbox has a container tier it is an
// interactive login shell on a PTY (the shell `rung shell` runs), sized
// from the screen element, with keys sent as they are typed and window
// resizes sent as resize messages. When the PTY exec is refused
// (unavailable without a container tier, invalid_argument when the
// sandbox is held to the isolate tier) it falls back to line mode: the
// user types a command line, it runs as one exec (in /workspace, routed
// to a tier as any exec is), and its output streams into the screen;
// while it runs, Enter sends the line to its stdin, Ctrl-D closes stdin,
// Ctrl-C cancels it.

import { h } from "./dom.js";
import { socket, sbx } from "./api.js";
import { Terminal } from "./term.js";

// openExec runs request ({command, cwd, env, backend, pty, …}) in sandbox
// over the exec WebSocket. on.frame gets each frame ({type:
// "stdout"|"stderr", data}, then {type: "exit", exit_code, …} or {type:
// "error", error}); on.close is called once when the socket closes. It
// returns the session's controls.
export function openExec(sandbox, request, on) {
  const ws = socket(sbx(sandbox) + "/exec/ws");
  // Messages sent before the socket opens (keys typed at once) follow
  // the request when it does.
  let queued = [];
  const send = (msg) => {
    if (ws.readyState === WebSocket.CONNECTING) queued.push(msg);
    else if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
  };
  ws.onopen = () => {
    ws.send(JSON.stringify(request));
    for (const m of queued) ws.send(JSON.stringify(m));
    queued = [];
  };
  ws.onmessage = (m) => {
    let f;
    try { f = JSON.parse(m.data); } catch (_) { return; }
    on.frame(f);
  };
  ws.onclose = (e) => { queued = []; on.close(e); };
  return {
    stdin: (data) => send({ type: "stdin", data }),
    closeStdin: () => send({ type: "stdin_close" }),
    resize: (cols, rows) => send({ type: "resize", cols, rows }),
    cancel: () => ws.close(),
  };
}

// The shell `rung shell` runs (cmd/rung/term.go).
const loginShell = "if command -v bash >/dev/null; then exec bash -l; else exec sh -l; fi";
// Codes that refuse a PTY exec before it starts: no container tier, or
// the sandbox held to the isolate tier. Line mode takes over.
const refused = new Set(["unavailable", "invalid_argument"]);

// keys maps the keys that are not text to what xterm sends for them:
// [CSI final or "~" number, SS3 final] (the SS3 form in application
// cursor mode for the cursor keys, always for F1-F4).
const keys = {
  ArrowUp: ["A", "A"], ArrowDown: ["B", "B"], ArrowRight: ["C", "C"], ArrowLeft: ["D", "D"],
  Home: ["H", "H"], End: ["F", "F"], Insert: [2], Delete: [3], PageUp: [5], PageDown: [6],
  F1: [null, "P"], F2: [null, "Q"], F3: [null, "R"], F4: [null, "S"], F5: [15], F6: [17], F7: [18], F8: [19],
  F9: [20], F10: [21], F11: [23], F12: [24],
};
const plainKeys = { Enter: "\r", Backspace: "\x7f", Tab: "\t", Escape: "\x1b" };

// keyData says what key event e sends to a terminal, or "" when the key
// is text left to the input event (or nothing a terminal gets).
// appCursor is the terminal's application cursor keys mode (?1).
export function keyData(e, appCursor = false) {
  if (e.isComposing || e.metaKey) return "";
  if (e.shiftKey && e.key === "Insert") return ""; // paste
  if (e.ctrlKey && !e.altKey && e.key.length === 1) {
    const c = e.key.toLowerCase();
    if (e.shiftKey && (c === "c" || c === "v")) return ""; // the browser's copy and paste
    if (c >= "a" && c <= "z") return String.fromCharCode(c.charCodeAt(0) - 96); // ^A … ^Z
    const more = { "@": "\x00", " ": "\x00", "[": "\x1b", "\\": "\x1c", "]": "\x1d", "^": "\x1e", "_": "\x1f", "/": "\x1f" };
    return more[e.key] || "";
  }
  if (e.altKey && !e.ctrlKey && e.key.length === 1) return "\x1b" + e.key; // Meta as ESC prefix
  if (e.shiftKey && e.key === "Tab") return "\x1b[Z";
  if (plainKeys[e.key]) return plainKeys[e.key];
  const k = keys[e.key];
  if (!k) return "";
  // With Shift, Alt or Ctrl held xterm adds the modifiers as a parameter
  // (1 + Shift 1 + Alt 2 + Ctrl 4): Ctrl+Left is CSI 1;5D.
  const mod = 1 + (e.shiftKey ? 1 : 0) + (e.altKey ? 2 : 0) + (e.ctrlKey ? 4 : 0);
  const [csi, ss3] = k;
  if (typeof csi === "number") return "\x1b[" + csi + (mod > 1 ? ";" + mod : "") + "~";
  if (mod > 1) return "\x1b[1;" + mod + (csi || ss3);
  return csi && !appCursor ? "\x1b[" + csi : "\x1bO" + ss3;
}

// cellSize measures one character cell of the terminal's font in el.
function cellSize(el) {
  const probe = h("div", { class: "ln probe" }, h("span", { text: "0".repeat(50) }));
  el.appendChild(probe);
  const w = probe.firstChild.getBoundingClientRect().width / 50;
  const ht = probe.getBoundingClientRect().height;
  probe.remove();
  return { w: w || 8, h: ht || 17 };
}

// fit says the cols and rows of the terminal that fill el.
function fit(el) {
  const cs = getComputedStyle(el);
  const cell = cellSize(el);
  const w = el.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  const ht = el.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
  const clamp = (v) => Math.max(1, Math.min(1000, Math.floor(v)));
  return { cols: clamp(w / cell.w), rows: clamp(ht / cell.h), cell };
}

// shell builds the terminal panel for sandbox. It returns {el, show(),
// close()}: show() starts the shell the first time and focuses it.
export function shell(sandbox) {
  const screen = h("div", { class: "term", id: "term-screen", "aria-live": "polite" });
  const status = h("span", { class: "term-status", id: "term-status", text: "connecting" });
  const note = h("span", { class: "term-note", id: "term-note" });
  const again = h("button", { type: "button", class: "small", id: "term-reconnect", text: "New session", hidden: true });
  const bar = h("div", { class: "term-line" }, note, h("span", { class: "grow" }), status, again);
  const el = h("div", { class: "shell" }, screen, bar);
  let mode = null; // {focus(), close()} of the PTY session or line mode
  let started = false;

  function show() {
    if (!started) {
      started = true;
      mode = pty(sandbox, screen, bar, status, note, again, (term) => { mode = lines(sandbox, term, bar, status, note); mode.focus(); });
    }
    mode.focus();
  }

  return {
    el,
    show,
    close: () => { if (mode) mode.close(); },
  };
}

// pty runs the login shell on a PTY the size of screen. fallback is
// called when the server refuses the PTY exec.
function pty(sandbox, screen, bar, status, note, again, fallback) {
  // Queries the terminal answers (the cursor's position and the like) go
  // to the program as keys would.
  const term = new Terminal(screen, { crlf: false, scrollback: 5000, reply: (data) => send(data) });
  // Keys are read from a textarea, as typed text, composed text and paste
  // arrive there; it is kept out of sight under the screen.
  const input = h("textarea", { class: "term-keys", id: "term-input", autocomplete: "off", autocorrect: "off",
    autocapitalize: "off", spellcheck: "false", "aria-label": "terminal input" });
  screen.before(input);
  let session = null;
  let size = fit(screen);
  term.resize(size.cols, size.rows);
  note.textContent = "login shell on a PTY in the container";

  function connect() {
    again.hidden = true;
    status.textContent = "connecting";
    let output = false; // any output yet: an error after it is the session's, not a refusal
    let ended = false;
    const s = openExec(sandbox, { command: loginShell, pty: { cols: size.cols, rows: size.rows } }, {
      frame(f) {
        if (ended) return;
        if (f.type === "stdout" || f.type === "stderr") {
          if (!output) { output = true; status.textContent = `${size.cols}×${size.rows}`; }
          term.write(f.data || "");
        } else if (f.type === "exit") {
          const why = f.exit_reason && f.exit_reason !== "exit" ? " " + f.exit_reason : "";
          end(`session ended: exit ${f.exit_code}${why}`);
        } else if (f.type === "error" && f.error) {
          if (!output && refused.has(f.error.code)) {
            ended = true;
            session = null;
            input.remove();
            window.removeEventListener("resize", onResize);
            term.write(`\x1b[2m[no terminal: ${f.error.message}]\x1b[0m\r\n`);
            fallback(term);
            return;
          }
          end(`${f.error.code}: ${f.error.message}`);
        }
      },
      close() { end("connection closed"); },
    });
    const end = (why) => {
      if (ended) return;
      ended = true;
      if (session === s) session = null;
      term.write(`\r\n\x1b[2m[${why}]\x1b[0m\r\n`);
      status.textContent = "session ended";
      again.hidden = false;
    };
    session = s;
  }

  const send = (data) => { if (session && data) session.stdin(data); };
  input.addEventListener("keydown", (e) => {
    const data = keyData(e, term.appCursor);
    if (!data) return; // text: the input event sends it
    // Ctrl+C with text selected on the page copies it.
    if (data === "\x03" && String(getSelection())) return;
    e.preventDefault();
    send(data);
  });
  input.addEventListener("input", (e) => {
    if (e.isComposing) return;
    let text = input.value;
    input.value = "";
    if (!text) return;
    text = text.replace(/\r?\n/g, "\r"); // a pasted newline is Enter
    if (e.inputType === "insertFromPaste" && term.bracketedPaste) text = "\x1b[200~" + text + "\x1b[201~";
    send(text);
  });
  input.addEventListener("compositionend", () => { send(input.value); input.value = ""; });
  // A click on the screen focuses the keys, unless it made a selection.
  screen.addEventListener("mouseup", () => { if (!String(getSelection())) input.focus(); });
  const stopMouse = reportMouse(term, screen, () => size.cell, send);

  function onResize() {
    if (!screen.clientWidth) return; // hidden (another tab): sized when shown
    const next = fit(screen);
    if (next.cols === size.cols && next.rows === size.rows) { size.cell = next.cell; return; }
    size = next;
    term.resize(size.cols, size.rows);
    if (session) { session.resize(size.cols, size.rows); status.textContent = `${size.cols}×${size.rows}`; }
  }
  window.addEventListener("resize", onResize);
  again.addEventListener("click", () => { term.write("\r\n"); connect(); input.focus(); });
  connect();

  return {
    focus: () => { onResize(); input.focus({ preventScroll: true }); },
    close: () => { window.removeEventListener("resize", onResize); stopMouse(); if (session) session.cancel(); },
  };
}

// reportMouse sends the mouse's presses, releases, wheel turns and moves
// over screen to the program, as term says it asked for them (?1000 and
// the rest; see Terminal.mouseReport), while it does: then the mouse no
// longer selects text there, except with Shift held (as in xterm). cell
// says a cell's size. It returns a function that stops it.
function reportMouse(term, screen, cell, send) {
  let held = -1; // the button held down over the screen, or -1
  let last = ""; // the cell of the last move reported
  const report = (action, e, button, up) => {
    const at = term.cellAt(e.clientX, e.clientY, cell());
    if (action === "move") {
      const key = at.col + "," + at.row;
      if (key === last) return; // moves within a cell are one
      last = key;
    }
    send(term.mouseReport({ action, button, up, col: at.col, row: at.row, shift: e.shiftKey, alt: e.altKey, ctrl: e.ctrlKey }));
  };
  const on = (e) => term.mouseTracking && !e.shiftKey;
  const down = (e) => {
    if (!on(e) || e.button > 2) return;
    e.preventDefault(); // no selection, and the keys keep the focus
    held = e.button; // the DOM's numbers are xterm's: 0 left, 1 middle, 2 right
    report("press", e, held);
  };
  const up = (e) => { // on the window: a release off the screen still ends the press
    if (held < 0 || e.button !== held) return;
    held = -1;
    if (term.mouseTracking) report("release", e, e.button);
  };
  const move = (e) => { if (on(e) && term.mouseTracking >= 1002) report("move", e, held); };
  const wheel = (e) => {
    if (!on(e) || !e.deltaY) return;
    e.preventDefault(); // the program scrolls, not the page
    report("wheel", e, -1, e.deltaY < 0);
  };
  const menu = (e) => { if (on(e)) e.preventDefault(); }; // the right button is the program's
  screen.addEventListener("mousedown", down);
  window.addEventListener("mouseup", up);
  screen.addEventListener("mousemove", move);
  screen.addEventListener("wheel", wheel, { passive: false });
  screen.addEventListener("contextmenu", menu);
  return () => window.removeEventListener("mouseup", up);
}

const historyMax = 200;

// lines is line mode on term: each line typed into the input line below
// the screen runs as one exec.
function lines(sandbox, term, bar, status, note) {
  term.crlf = true;
  const prompt = h("span", { class: "prompt", text: "$" });
  const input = h("input", { class: "term-in", id: "term-input", autocomplete: "off", spellcheck: "false",
    "aria-label": "command line", placeholder: "type a command and press Enter" });
  bar.prepend(prompt, input);
  note.textContent = "";
  status.textContent = "idle";
  const history = [];
  let at = 0;
  let running = null; // the exec in flight: {stdin, closeStdin, cancel}

  term.write("\x1b[2mEach line runs as one command in /workspace (no PTY: cd and variables do not carry over).\x1b[0m\n");

  function run(line) {
    term.write("\x1b[1;32m$\x1b[0m " + line + "\n");
    if (line.trim() === "") return;
    if (history[history.length - 1] !== line) history.push(line);
    if (history.length > historyMax) history.shift();
    at = history.length;
    status.textContent = "running";
    prompt.textContent = ">";
    input.placeholder = "stdin: Enter sends a line, Ctrl-D closes it, Ctrl-C cancels";
    // The command is over at its exit (or error) frame: the next line is
    // a new command even if the socket has not closed yet.
    let ended = false;
    let session = null;
    const finish = () => {
      ended = true;
      if (running !== session) return;
      running = null;
      status.textContent = "idle";
      prompt.textContent = "$";
      input.placeholder = "type a command and press Enter";
    };
    session = running = openExec(sandbox, { command: line }, {
      frame(f) {
        if (ended) return;
        if (f.type === "stdout" || f.type === "stderr") term.write(f.data || "");
        else if (f.type === "exit") {
          const why = f.exit_reason && f.exit_reason !== "exit" ? " " + f.exit_reason : "";
          term.write(`\x1b[2m[exit ${f.exit_code}${why} · ${f.backend} · ${Math.round(f.duration_ms)} ms]\x1b[0m\n`);
          finish();
        } else if (f.type === "error" && f.error) {
          term.write(`\x1b[31m[${f.error.code}: ${f.error.message}]\x1b[0m\n`);
          finish();
        }
      },
      close() {
        if (!ended) term.write("\x1b[31m[connection closed]\x1b[0m\n");
        finish();
      },
    });
  }

  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      const line = input.value;
      input.value = "";
      if (running) { term.write(line + "\n"); running.stdin(line + "\n"); }
      else run(line);
    } else if (e.ctrlKey && e.key === "c" && running && input.selectionStart === input.selectionEnd) {
      e.preventDefault();
      term.write("^C\n");
      running.cancel();
    } else if (e.ctrlKey && e.key === "d" && running) {
      e.preventDefault();
      running.closeStdin();
    } else if (e.ctrlKey && e.key === "l") {
      e.preventDefault();
      term.write("\x1b[H\x1b[2J");
    } else if (e.key === "ArrowUp" && !running && at > 0) {
      e.preventDefault();
      input.value = history[--at];
    } else if (e.key === "ArrowDown" && !running) {
      e.preventDefault();
      at = Math.min(history.length, at + 1);
      input.value = history[at] || "";
    }
  });
  term.el.addEventListener("click", () => { if (!String(getSelection())) input.focus(); });

  return {
    focus: () => input.focus(),
    close: () => { if (running) running.cancel(); },
  };
}
