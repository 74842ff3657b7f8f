// One sandbox's page: its summary and actions, and tabs for the live
// journal and events (the page opens on it), the terminal, files, background processes, snapshots
// with their lineage, the network policy with the egress log, and usage.
// One events stream (GET …/events?follow=true) feeds the journal, the
// egress log and the refresh of the other tabs and of the tier split
// (the sandbox's execs: {isolate, container}, which the server counts).

import { h, replace, route, bytes, when, clip, sizeText, tierText } from "./dom.js";
import * as api from "./api.js";
import { shell } from "./exec.js";
import { Terminal } from "./term.js";
import { stateClass } from "./list.js";

const tabs = ["journal", "terminal", "files", "processes", "snapshots", "network", "metrics"];
const maxRows = 2000; // journal rows kept in the page; older ones are dropped
const maxView = 1 << 20; // bytes of a file the viewer shows
const recountMS = 250; // how long the tier split waits for more execs to end before reading the counts

// latest wraps an async drawing function so that only the newest call's
// result is drawn: an older request that answers late (the tab's first
// load after a snapshot's refresh) is dropped.
function latest(fn) {
  let gen = 0;
  return async (...args) => {
    const mine = ++gen;
    return fn(() => mine === gen, ...args);
  };
}

function report(err) {
  if (err && err.name === "AbortError") return;
  window.dispatchEvent(new CustomEvent("rung:error", { detail: err }));
}

export function sandboxView(main, crumbs, id, firstTab) {
  const ctl = new AbortController(); // ends every request and stream of the page
  const closers = [];
  let sb = null;
  let current = "";
  const egress = [];
  const forkedFrom = [];
  const forksMade = [];

  const summary = h("div", { class: "summary", id: "summary" });
  const tierEl = h("span", { id: "tier-split" });
  const nav = h("nav", { class: "tabs" }, tabs.map((t) => h("a", { href: route("s", id, t), id: "tab-" + t, text: t })));
  const panels = {};
  for (const t of tabs) panels[t] = h("section", { class: "panel tab", id: "panel-" + t, hidden: true });
  const actions = h("div", { class: "actions" },
    h("button", { type: "button", id: "snapshot", text: "Take snapshot", onclick: takeSnapshot }),
    h("button", { type: "button", id: "start", text: "Start container", onclick: () => act("POST", "/start") }),
    h("button", { type: "button", id: "stop", text: "Stop container", onclick: () => act("POST", "/stop") }),
    h("button", { type: "button", id: "delete", class: "danger", text: "Delete", onclick: del }));
  replace(main, h("div", { class: "sandbox" }, h("div", { class: "head" }, summary, actions), nav, Object.values(panels)));

  async function refresh() {
    try {
      sb = await api.call("GET", api.sbx(id), undefined, ctl.signal);
    } catch (err) { report(err); return; }
    replace(crumbs, " / ", h("a", { href: route("s", id), text: sb.name || sb.id }));
    replace(summary,
      h("h2", {}, sb.name || sb.id, " ", h("span", { class: "state " + stateClass(sb.state), id: "sandbox-state", text: sb.state })),
      h("dl", {},
        dt("id", sb.id), dt("image", sb.image || ""), dt("size", sizeText(sb.size)), dt("isolation", sb.isolation || ""),
        dt("network", (sb.network && sb.network.mode) || "none"), dt("user", sb.user), dt("created", when(sb.created_at)),
        h("dt", { text: "execs" }), h("dd", {}, tierEl)));
    drawTier();
    if (current === "network") drawNetwork();
    if (current === "processes") drawProcesses();
  }

  function drawTier() {
    tierEl.textContent = sb ? tierText(sb.execs) : "";
  }

  // recount reads the sandbox's exec counts again once its execs end:
  // once for a burst of them (the journal's history, replayed when the
  // stream opens, or a busy sandbox), not once each.
  let recounting = null;
  function recount() {
    if (recounting) return;
    recounting = setTimeout(async () => {
      recounting = null;
      try {
        const got = await api.call("GET", api.sbx(id), undefined, ctl.signal);
        if (sb) { sb.execs = got.execs; drawTier(); }
      } catch (err) { report(err); }
    }, recountMS);
  }
  closers.push(() => clearTimeout(recounting));

  async function act(method, path) {
    try { await api.call(method, api.sbx(id) + path, undefined, ctl.signal); } catch (err) { report(err); }
    refresh();
  }

  async function takeSnapshot() {
    try {
      await api.call("POST", api.sbx(id) + "/snapshots", {}, ctl.signal);
      if (current === "snapshots") drawSnapshots();
    } catch (err) { report(err); }
  }

  async function del() {
    if (!confirm(`Delete sandbox ${sb ? sb.name || sb.id : id}? Its files are removed.`)) return;
    try {
      await api.call("DELETE", api.sbx(id), undefined, ctl.signal);
      location.hash = "#/";
    } catch (err) { report(err); }
  }

  // The terminal.
  const sh = shell(id);
  closers.push(sh.close);
  panels.terminal.appendChild(sh.el);

  // The journal and events, followed.
  const jbody = h("tbody", { id: "journal-rows" });
  const showOutput = h("input", { type: "checkbox", id: "show-output" });
  const jstate = h("span", { class: "note", id: "journal-state", text: "connecting" });
  panels.journal.append(
    h("div", { class: "toolbar" }, h("h3", { text: "Journal and events" }), jstate, h("span", { class: "grow" }),
      h("label", {}, showOutput, " output events")),
    h("table", { class: "list journal" }, h("thead", {}, h("tr", {}, ["seq", "time", "type", "data"].map((t) => h("th", { text: t })))), jbody));
  showOutput.addEventListener("change", () => jbody.classList.toggle("with-output", showOutput.checked));

  let lastSeq = 0;
  function onEvent(e) {
    lastSeq = Math.max(lastSeq, e.seq);
    const d = e.data || {};
    const tr = h("tr", { class: e.journal ? "j" : "out", dataset: { seq: e.seq, type: e.type } },
      h("td", { class: "num", text: e.seq }), h("td", { text: when(e.time) }), h("td", { class: "mono", text: e.type }),
      h("td", { class: "mono data" }, e.type === "exec.output" ? clip(d.data || "", 2000) : clip(JSON.stringify(d), 2000)));
    jbody.appendChild(tr);
    while (jbody.childElementCount > maxRows) jbody.firstElementChild.remove();
    switch (e.type) {
      case "exec.ended": recount(); break;
      case "sandbox.forked": forkedFrom.push(d); break;
      case "sandbox.fork_made": forksMade.push(d); break;
      case "sandbox.snapshotted": case "snapshot.expired": case "sandbox.restored":
        if (current === "snapshots") drawSnapshots();
        break;
      case "process.started": case "process.exited": case "process.lost":
        if (current === "processes") drawProcesses();
        break;
      case "container.started": case "container.stopped": case "container.exited":
      case "sandbox.updated": case "network.updated": case "sandbox.idle_stopped":
        refresh();
        break;
    }
    if (e.type.startsWith("egress.")) {
      egress.push(e);
      if (egress.length > maxRows) egress.shift();
      if (current === "network") drawNetwork();
    }
  }

  async function follow() {
    let wait = 500;
    while (!ctl.signal.aborted) {
      jstate.textContent = "live";
      try {
        await api.stream(api.sbx(id) + "/events?follow=true&after=" + lastSeq, onEvent, ctl.signal);
        jstate.textContent = "stream ended";
        return; // the sandbox is gone
      } catch (err) {
        if (ctl.signal.aborted || (err instanceof api.ApiError && err.status < 500)) { report(err); return; }
        jstate.textContent = "reconnecting";
      }
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 2, 10000);
    }
  }

  // Files.
  let dir = "/workspace";
  const pathEl = h("div", { class: "crumbs mono", id: "files-path" });
  const fbody = h("tbody", { id: "file-rows" });
  const viewer = h("div", { class: "viewer", id: "file-viewer" });
  panels.files.append(pathEl, h("div", { class: "split" },
    h("table", { class: "list files" }, h("thead", {}, h("tr", {}, ["name", "size", "mode", "modified"].map((t) => h("th", { text: t })))), fbody),
    viewer));

  const drawFiles = latest(async (fresh) => {
    const parts = dir.split("/").filter(Boolean);
    replace(pathEl, parts.map((p, i) => [h("button", { type: "button", class: "link", text: "/" + p,
      onclick: () => { dir = "/" + parts.slice(0, i + 1).join("/"); drawFiles(); } })]),
      " ", h("button", { type: "button", class: "link", text: "/tmp", onclick: () => { dir = "/tmp"; drawFiles(); } }));
    try {
      const list = await api.call("GET", api.sbx(id) + "/files/list?path=" + encodeURIComponent(dir), undefined, ctl.signal);
      if (!fresh()) return;
      const files = list.files || [];
      const up = dir.split("/").slice(0, -1).join("/");
      replace(fbody,
        parts.length > 1 ? h("tr", {}, h("td", { colspan: "4" }, h("button", { type: "button", class: "link", text: "..", onclick: () => { dir = up; drawFiles(); } }))) : null,
        files.length ? files.map(fileRow) : h("tr", {}, h("td", { colspan: "4", class: "empty", text: "empty directory" })));
    } catch (err) { report(err); }
  });

  function fileRow(f) {
    const open = () => { if (f.type === "dir") { dir = f.path; drawFiles(); } else view(f); };
    return h("tr", { dataset: { path: f.path } },
      h("td", {}, h("button", { type: "button", class: "link file " + f.type, text: f.name + (f.type === "dir" ? "/" : ""), onclick: open }),
        f.target ? h("span", { class: "note", text: " → " + f.target }) : null),
      h("td", { class: "num", text: f.type === "file" ? bytes(f.size) : "" }),
      h("td", { class: "mono", text: f.mode }), h("td", { text: when(f.mod_time) }));
  }

  async function view(f) {
    replace(viewer, h("div", { class: "note", text: "loading " + f.path }));
    try {
      const r = await api.text(api.sbx(id) + "/files?path=" + encodeURIComponent(f.path), maxView, ctl.signal);
      replace(viewer, h("div", { class: "toolbar" }, h("strong", { class: "mono", text: f.path }), h("span", { class: "note", text: " " + bytes(f.size) })),
        r.binary ? h("p", { class: "note", text: "binary file: not shown" }) : h("pre", { class: "file-text", id: "file-text", text: r.text }),
        r.truncated ? h("p", { class: "note", text: `showing the first ${bytes(maxView)}` }) : null);
    } catch (err) { replace(viewer); report(err); }
  }

  // Background processes.
  const pcmd = h("input", { id: "proc-command", placeholder: "command to run in the background", "aria-label": "command" });
  const pform = h("form", { class: "toolbar" }, h("h3", { text: "Background processes" }), pcmd, h("button", { type: "submit", text: "Start" }));
  const pbody = h("tbody", { id: "proc-rows" });
  const pout = h("div", { class: "term small", id: "proc-output" });
  const pterm = new Terminal(pout, { cols: 120, rows: 20, scrollback: 5000 });
  let pctl = null;
  panels.processes.append(pform, h("table", { class: "list" }, h("thead", {}, h("tr", {}, ["id", "command", "state", "started", ""].map((t) => h("th", { text: t })))), pbody), pout);
  pform.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!pcmd.value.trim()) return;
    try {
      const p = await api.call("POST", api.sbx(id) + "/processes", { command: pcmd.value }, ctl.signal);
      pcmd.value = "";
      drawProcesses();
      output(p);
    } catch (err) { report(err); }
  });

  const drawProcesses = latest(async (fresh) => {
    // Processes live in the container: without one there are none to
    // list (the API answers conflict), and starting one starts it.
    // refresh() draws them again once the sandbox is known.
    const none = () => replace(pbody, h("tr", {}, h("td", { colspan: "5", class: "empty", text: "The container is not running: starting a process starts it." })));
    if (!sb) return;
    if (sb.state !== "running") return none();
    try {
      const list = await api.call("GET", api.sbx(id) + "/processes", undefined, ctl.signal);
      if (!fresh()) return;
      const ps = Array.isArray(list) ? list : [];
      replace(pbody, ps.length ? ps.map((p) => h("tr", {},
        h("td", { class: "mono" }, h("button", { type: "button", class: "link", text: p.id, onclick: () => output(p) })),
        h("td", { class: "mono", text: clip((p.argv || []).join(" "), 200) }),
        h("td", { text: p.running ? "running" : exitText(p.exit) }),
        h("td", { text: when(p.started) }),
        h("td", {}, p.running ? h("button", { type: "button", text: "SIGTERM", onclick: () => signal(p) }) : null)))
        : h("tr", {}, h("td", { colspan: "5", class: "empty", text: "no background processes" })));
    } catch (err) {
      if (err instanceof api.ApiError && err.code === "conflict") none(); // it stopped meanwhile
      else report(err);
    }
  });

  async function signal(p) {
    try { await api.call("POST", api.sbx(id) + "/processes/" + encodeURIComponent(p.id) + "/signal?signal=SIGTERM", undefined, ctl.signal); }
    catch (err) { report(err); }
  }

  async function output(p) {
    if (pctl) pctl.abort();
    pctl = new AbortController();
    const sig = AbortSignal.any([pctl.signal, ctl.signal]);
    pterm.reset();
    pterm.write(`\x1b[2m${p.id}: ${(p.argv || []).join(" ")}\x1b[0m\n`);
    try {
      await api.stream(api.sbx(id) + "/processes/" + encodeURIComponent(p.id) + "/output?follow=true", (f) => {
        if (f.data) pterm.write(f.data);
        if (f.exit) { pterm.write(`\x1b[2m[${exitText(f.exit)}]\x1b[0m\n`); drawProcesses(); }
      }, sig);
    } catch (err) { report(err); }
  }
  closers.push(() => pctl && pctl.abort());

  // Snapshots and lineage. A snapshot's parent is the snapshot its
  // sandbox was restored or forked from, so the tenant's snapshots form a
  // forest across sandboxes; the tab shows the trees that hold one of
  // this sandbox's snapshots, with the others' sandboxes linked.
  const drawSnapshots = latest(async (fresh) => {
    try {
      const list = await api.call("GET", "/snapshots?limit=1000", undefined, ctl.signal);
      if (!fresh()) return;
      const all = list.snapshots || [];
      const me = sb ? sb.id : id;
      const mine = all.filter((s) => s.sandbox === me);
      replace(panels.snapshots,
        h("div", { class: "toolbar" }, h("h3", { text: "Snapshots" }), h("span", { class: "count", id: "snapshot-count", text: String(mine.length) }),
          list.next ? h("span", { class: "note", text: "(lineage from the tenant's first 1,000 snapshots)" }) : null),
        lineage(),
        mine.length ? h("ul", { class: "tree", id: "snapshot-tree" }, tree(all, me)) : h("p", { class: "empty", text: "no snapshots yet" }));
    } catch (err) { report(err); }
  });

  function lineage() {
    const items = [];
    for (const f of forkedFrom) {
      items.push(h("li", {}, "forked from ", h("a", { href: route("s", f.parent || ""), class: "mono", text: f.parent || "?" }),
        f.snapshot ? [" at snapshot ", h("span", { class: "mono", text: f.snapshot })] : null));
    }
    for (const m of forksMade) {
      for (const c of m.forks || []) items.push(h("li", {}, "fork ", h("a", { href: route("s", c), class: "mono", text: c })));
    }
    return items.length ? h("ul", { class: "lineage", id: "lineage" }, items) : null;
  }

  // tree nests snapshots under their parent; one whose parent is not in
  // the list is a root. Only trees holding one of me's snapshots are shown.
  function tree(snaps, me) {
    const ids = new Set(snaps.map((s) => s.id));
    const kids = new Map();
    for (const s of snaps) {
      const p = s.parent && ids.has(s.parent) ? s.parent : "";
      if (!kids.has(p)) kids.set(p, []);
      kids.get(p).push(s);
    }
    const holds = new Map(); // id -> whether its subtree has one of me's
    const seen = new Set();
    const walk = (s) => {
      if (seen.has(s.id)) return false; // a cycle would be a server bug: never loop on it
      seen.add(s.id);
      let v = s.sandbox === me;
      for (const k of kids.get(s.id) || []) v = walk(k) || v;
      holds.set(s.id, v);
      return v;
    };
    const roots = kids.get("") || [];
    roots.forEach(walk);
    const node = (s) => {
      if (!holds.get(s.id)) return null;
      const children = (kids.get(s.id) || []).map(node).filter(Boolean);
      const other = s.sandbox !== me;
      return h("li", { class: other ? "other" : "mine", dataset: { id: s.id } },
        h("span", { class: "mono snap", text: s.name ? `${s.name} (${s.id})` : s.id }),
        other ? [" of ", s.sandbox ? h("a", { href: route("s", s.sandbox), class: "mono", text: s.sandbox }) : "an import"] : null,
        h("span", { class: "note", text: ` ${when(s.created_at)} · ${bytes(s.size_bytes)} · ${s.consistency || ""}${s.pinned ? " · pinned" : ""}` }),
        " ", h("button", { type: "button", class: "small", text: "Fork", onclick: () => fork(s) }),
        other ? null : h("button", { type: "button", class: "small", text: "Roll back", onclick: () => rollback(s) }),
        children.length ? h("ul", {}, children) : null);
    };
    return roots.map(node).filter(Boolean);
  }

  async function fork(s) {
    try {
      const res = await api.call("POST", "/snapshots/" + encodeURIComponent(s.id) + "/fork", { count: 1 }, ctl.signal);
      const f = (res.forks || [])[0];
      if (f && f.sandbox) location.hash = route("s", f.sandbox.id);
      else if (f && f.error) report(new api.ApiError(0, f.error.code, f.error.message));
    } catch (err) { report(err); }
  }

  async function rollback(s) {
    if (!confirm(`Roll ${sb ? sb.name || sb.id : id} back to ${s.name || s.id}? Its files since then are lost.`)) return;
    try { await api.call("POST", api.sbx(id) + "/restore", { snapshot: s.id }, ctl.signal); } catch (err) { report(err); }
  }

  // Network policy and egress log.
  function drawNetwork() {
    const n = (sb && sb.network) || { mode: "none" };
    replace(panels.network,
      h("h3", { text: "Network policy" }),
      h("p", {}, "mode ", h("strong", { id: "net-mode", text: n.mode || "none" })),
      (n.rules || []).length ? h("table", { class: "list" },
        h("thead", {}, h("tr", {}, ["action", "domain", "cidr", "ports", "methods", "path"].map((t) => h("th", { text: t })))),
        h("tbody", {}, n.rules.map((r) => h("tr", {}, [r.action, r.domain, r.cidr, r.ports, (r.methods || []).join(","), r.path_prefix]
          .map((v) => h("td", { class: "mono", text: v || "" })))))) : h("p", { class: "note", text: "no rules" }),
      (n.headers || []).length ? h("p", { class: "note", text: "header rules: " + n.headers.map((x) => `${x.header} on ${x.domain}`).join(", ") }) : null,
      h("h3", { text: "Egress log" }),
      egress.length ? h("table", { class: "list", id: "egress" },
        h("thead", {}, h("tr", {}, ["time", "decision", "kind", "host", "port", "detail"].map((t) => h("th", { text: t })))),
        h("tbody", {}, egress.slice().reverse().map(egressRow))) : h("p", { class: "note", text: n.mode === "none" ? "mode none: the sandbox reaches nothing" : "no egress yet" }));
  }

  // Usage.
  let mtimer = null;
  async function drawMetrics() {
    clearTimeout(mtimer);
    try {
      const m = await api.call("GET", api.sbx(id) + "/metrics", undefined, ctl.signal);
      const s = m.samples || [];
      const last = s[s.length - 1];
      replace(panels.metrics, h("h3", { text: "Usage" }),
        last ? h("dl", { id: "usage" }, dt("CPU", last.cpu_percent.toFixed(1) + "% (" + last.cpu_seconds.toFixed(1) + " s)"),
          dt("memory", bytes(last.memory_bytes) + " (peak " + bytes(last.memory_peak_bytes) + ")"),
          dt("disk", last.disk_bytes >= 0 ? bytes(last.disk_bytes) : "no quota"), dt("sampled", when(last.time)))
          : h("p", { class: "note", text: "No samples: the server samples a sandbox's container while it runs (isolate-tier execs run in the daemon)." }),
        s.length > 1 ? [h("h4", { text: "CPU %" }), spark(s.map((x) => x.cpu_percent)), h("h4", { text: "memory" }), spark(s.map((x) => x.memory_bytes))] : null);
    } catch (err) { report(err); }
    if (current === "metrics" && !ctl.signal.aborted) mtimer = setTimeout(drawMetrics, metricsMS);
  }
  const metricsMS = 5000;
  closers.push(() => clearTimeout(mtimer));

  function tab(name) {
    // The terminal starts a login shell, and with it the sandbox's
    // container: only when asked for, never by opening the page.
    if (!tabs.includes(name)) name = "journal";
    current = name;
    for (const t of tabs) {
      panels[t].hidden = t !== name;
      document.getElementById("tab-" + t).classList.toggle("on", t === name);
    }
    if (name === "terminal") sh.show();
    else if (name === "files") drawFiles();
    else if (name === "processes") drawProcesses();
    else if (name === "snapshots") drawSnapshots();
    else if (name === "network") drawNetwork();
    else if (name === "metrics") drawMetrics();
  }

  refresh();
  follow();
  tab(firstTab);
  return {
    sandbox: id,
    tab,
    close() { ctl.abort(); for (const c of closers) c(); },
  };
}

// egressRow is one egress.request (an HTTP request, allowed), egress.connection
// (a connection, allowed, with its bytes) or egress.denied entry.
function egressRow(e) {
  const d = e.data || {};
  const denied = e.type === "egress.denied";
  const detail = e.type === "egress.request" ? `${d.method || ""} ${d.path || ""} → ${d.status || ""}`
    : denied ? d.message || "" : `in ${bytes(d.bytes_in)} out ${bytes(d.bytes_out)}`;
  return h("tr", { class: denied ? "denied" : "", dataset: { type: e.type } }, h("td", { text: when(e.time) }),
    h("td", { class: "decision", text: denied ? "denied" : "allowed" }),
    h("td", { class: "mono", text: d.protocol || e.type.slice(7) }),
    h("td", { class: "mono host", text: d.host || d.ip || "" }),
    h("td", { class: "num", text: d.port ? String(d.port) : "" }),
    h("td", { class: "mono", text: clip(detail, 300), title: d.rule ? "rule: " + d.rule : undefined }));
}

function dt(k, v) {
  return [h("dt", { text: k }), h("dd", { text: v })];
}

function exitText(x) {
  if (!x) return "exited";
  if (x.error) return "failed: " + x.error;
  return x.reason === "signal" ? "killed by " + x.signal : `exit ${x.code}${x.reason && x.reason !== "exit" ? " " + x.reason : ""}`;
}

// spark draws values as a small SVG line (no library, no inline style).
function spark(values) {
  const ns = "http://www.w3.org/2000/svg";
  const w = 300, ht = 40;
  const max = Math.max(...values, 1e-9);
  const pts = values.map((v, i) => `${(i / (values.length - 1)) * w},${ht - (v / max) * ht}`).join(" ");
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${w} ${ht}`);
  svg.setAttribute("class", "spark");
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", pts);
  svg.appendChild(line);
  return svg;
}
