// Building the page from untrusted data. Everything the API returns
// (names, labels, file names, journal text, command output) reaches the
// page through h() and text() only, which make text nodes: nothing here
// parses a string as HTML, so no API value can become markup or script.

// h makes an element. props: "class", "text" (its text), "on<event>"
// (a listener), "dataset" (an object), anything else an attribute (names
// are ours, values may be untrusted: setAttribute never runs script, and
// href/src values are checked by safeHref). Children are nodes, strings
// (as text), arrays of those, or null/undefined/false (skipped).
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = String(v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "href") el.setAttribute("href", safeHref(v));
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// safeHref allows the dashboard's own routes only ("#/…"): a link built
// from API data can never be javascript: or point elsewhere.
export function safeHref(v) {
  const s = String(v);
  return s.startsWith("#/") ? s : "#/";
}

// route builds a "#/…" link from parts, each encoded.
export function route(...parts) {
  return "#/" + parts.map((p) => encodeURIComponent(String(p))).join("/");
}

// replace empties el and appends children.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const units = ["B", "KiB", "MiB", "GiB", "TiB"];

export function bytes(n) {
  if (typeof n !== "number" || !isFinite(n) || n < 0) return "–";
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? String(n) : n.toFixed(n < 10 ? 1 : 0)) + " " + units[i];
}

export function when(t) {
  if (!t) return "";
  const d = new Date(t);
  if (isNaN(d)) return String(t);
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

export function clip(s, n) {
  s = String(s);
  return s.length > n ? s.slice(0, n) + "…" : s;
}

// sizeText says a sandbox's size: its preset, or its CPU, memory and disk.
export function sizeText(sz) {
  if (!sz) return "";
  const parts = [];
  if (sz.milli_cpu) parts.push((sz.milli_cpu / 1000).toFixed(sz.milli_cpu % 1000 ? 2 : 0) + " vCPU");
  if (sz.memory_bytes) parts.push(bytes(sz.memory_bytes));
  if (sz.disk_bytes) parts.push(bytes(sz.disk_bytes) + " disk");
  return (sz.preset ? sz.preset + ": " : "") + parts.join(", ");
}

// tierText says how many of a sandbox's execs ran in each tier (the
// API's execs: {isolate, container}).
export function tierText(execs) {
  const e = execs || {};
  return `isolate ${e.isolate || 0} · container ${e.container || 0}`;
}
