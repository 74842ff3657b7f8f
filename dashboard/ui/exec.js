// The dashboard's terminal: a Terminal renderer fed by commands run over
// the exec WebSocket. Without a PTY it is line-based: the user types a
// command line, it runs as one exec (in /workspace, routed to a tier as
// any exec is), and its output streams into the screen; while it runs,
// Enter sends the line to its stdin, Ctrl-D closes stdin, Ctrl-C cancels
// it. openExec is the whole transport, so a PTY (a "pty" start option and
// resize messages) changes that function and the key handling only.

import { h } from "./dom.js";
import { socket, sbx } from "./api.js";
import { Terminal } from "./term.js";

// openExec runs request ({command, cwd, env, backend, …}) in sandbox over
// the exec WebSocket. on.frame gets each frame ({type: "stdout"|"stderr",
// data}, then {type: "exit", exit_code, …} or {type: "error", error});
// on.close is called once when the socket closes. It returns the
// session's controls.
export function openExec(sandbox, request, on) {
  const ws = socket(sbx(sandbox) + "/exec/ws");
  const send = (msg) => { if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg)); };
  ws.onopen = () => ws.send(JSON.stringify(request));
  ws.onmessage = (m) => {
    let f;
    try { f = JSON.parse(m.data); } catch (_) { return; }
    on.frame(f);
  };
  ws.onclose = (e) => on.close(e);
  return {
    stdin: (data) => send({ type: "stdin", data }),
    closeStdin: () => send({ type: "stdin_close" }),
    cancel: () => ws.close(),
  };
}

const historyMax = 200;

// shell builds the terminal panel for sandbox: the screen and its input
// line. It returns {el, focus(), close()}.
export function shell(sandbox) {
  const screen = h("div", { class: "term", id: "term-screen", "aria-live": "polite" });
  const term = new Terminal(screen, { cols: 120, rows: 30 });
  const prompt = h("span", { class: "prompt", text: "$" });
  const input = h("input", { class: "term-in", id: "term-input", autocomplete: "off", spellcheck: "false",
    "aria-label": "command line", placeholder: "type a command and press Enter" });
  const status = h("span", { class: "term-status", id: "term-status", text: "idle" });
  const el = h("div", { class: "shell" }, screen, h("div", { class: "term-line" }, prompt, input, status));
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
  screen.addEventListener("click", () => input.focus());

  return {
    el,
    focus: () => input.focus(),
    close: () => { if (running) running.cancel(); },
  };
}
