// The sandboxes list: state, image, size, network, how many execs ran in
// each tier and the newest usage sample (CPU, memory, disk) of each, a
// page at a time, and the form that creates one.

import { h, replace, route, bytes, when, clip, sizeText, tierText } from "./dom.js";
import * as api from "./api.js";

const page = 50; // sandboxes per page; "Show more" adds the next page
const refreshMS = 5000; // the server samples usage every 5 s

// marked is set once the first page of the list is on screen, when the
// "rung:list" performance mark is made (the dashboard's load benchmark
// reads it).
let marked = false;

const presets = ["", "lite", "standard-1", "standard-2", "standard-3", "standard-4"];
const columns = ["sandbox", "state", "image", "size", "network", "execs by tier", "CPU", "memory", "disk", "created"];

export function listView(main) {
  // afters[i] is the cursor page i was fetched after ("" for the first).
  // A cursor is a position in the list's order, so each page shown is
  // fetched again after its own, whatever was created or deleted since.
  let afters = [""];
  let next = ""; // the cursor after the last page shown; "" at the end
  let state = "";
  let filter = 0; // counts changes of the state filter
  let loads = 0; // counts loads: only the newest one draws
  let timer = null;
  let closed = false;
  const tbody = h("tbody", { id: "sandbox-rows" });
  const count = h("span", { class: "count", id: "sandbox-count" });
  const more = h("button", { type: "button", id: "more", hidden: true, text: "Show more", onclick: showMore });
  const stateSel = h("select", { id: "state-filter", "aria-label": "state",
    onchange: () => { state = stateSel.value; filter++; afters = [""]; load(); } },
    ["", "ready", "running", "paused"].map((s) => h("option", { value: s, text: s || "any state" })));
  let shown = []; // the sandboxes listed, in the list's order
  let use = new Map(); // sandbox id -> its newest usage sample

  const form = createForm();
  replace(main,
    h("section", { class: "panel" },
      h("div", { class: "toolbar" }, h("h2", { text: "Sandboxes" }), count, h("span", { class: "grow" }), stateSel),
      h("table", { class: "list" },
        h("thead", {}, h("tr", {}, columns.map((t) => h("th", { text: t })))),
        tbody),
      more),
    form);

  function fetchPage(after) {
    const q = new URLSearchParams({ limit: String(page) });
    if (after) q.set("after", after);
    if (state) q.set("state", state);
    return api.call("GET", "/sandboxes?" + q);
  }

  // pagesOf joins pages in order. A page fetched again after a delete in
  // the page before it starts with the rows that page had: each is kept once.
  function pagesOf(lists) {
    const seen = new Set();
    const out = [];
    for (const l of lists) {
      for (const sb of l.sandboxes || []) {
        if (!seen.has(sb.id)) { seen.add(sb.id); out.push(sb); }
      }
    }
    return out;
  }

  function draw() {
    more.hidden = !next;
    count.textContent = next ? `first ${shown.length}` : `${shown.length}`;
    replace(tbody, shown.length ? shown.map((sb) => row(sb, use.get(sb.id)))
      : h("tr", {}, h("td", { colspan: String(columns.length), class: "empty", text: "No sandboxes yet: create one below." })));
    if (!marked) { marked = true; performance.mark("rung:list"); }
  }

  function again() {
    clearTimeout(timer);
    if (!closed) timer = setTimeout(load, refreshMS);
  }

  // load fetches every page shown again, together, and the usage samples.
  async function load() {
    clearTimeout(timer);
    const mine = ++loads;
    try {
      const [lists, usage] = await Promise.all([
        Promise.all(afters.map(fetchPage)),
        api.call("GET", "/usage").catch(() => ({ sandboxes: [] })),
      ]);
      if (closed || mine !== loads) return;
      shown = pagesOf(lists);
      next = lists[lists.length - 1].next || "";
      use = new Map((usage.sandboxes || []).map((u) => [u.sandbox, u.usage]));
      draw();
    } catch (err) {
      if (closed || mine !== loads) return;
      window.dispatchEvent(new CustomEvent("rung:error", { detail: err }));
    }
    again();
  }

  // showMore fetches the page after the last one shown and appends it.
  async function showMore() {
    const f = filter, after = next;
    more.disabled = true;
    try {
      const l = await fetchPage(after);
      if (closed || f !== filter) return;
      loads++; // a load in flight fetched the pages without this one: drop it
      afters.push(after);
      shown = pagesOf([{ sandboxes: shown }, l]);
      next = l.next || "";
      draw();
      again();
    } catch (err) {
      if (!closed) window.dispatchEvent(new CustomEvent("rung:error", { detail: err }));
    } finally {
      more.disabled = false;
    }
  }

  load();
  return { close() { closed = true; clearTimeout(timer); } };
}

function row(sb, u) {
  return h("tr", { dataset: { id: sb.id } },
    h("td", {}, h("a", { href: route("s", sb.id), class: "sbx" }, sb.name || sb.id), sb.name ? h("div", { class: "id", text: sb.id }) : null),
    h("td", {}, h("span", { class: "state " + stateClass(sb.state), text: sb.state })),
    h("td", { class: "mono", text: clip(sb.image || "", 40), title: sb.image || "" }),
    h("td", { text: sizeText(sb.size) }),
    h("td", { text: (sb.network && sb.network.mode) || "none" }),
    h("td", { class: "tiers", text: tierText(sb.execs) }),
    h("td", { class: "num", text: u ? u.cpu_percent.toFixed(1) + "%" : "–" }),
    h("td", { class: "num", text: u ? bytes(u.memory_bytes) : "–" }),
    h("td", { class: "num", text: u && u.disk_bytes >= 0 ? bytes(u.disk_bytes) : "–" }),
    h("td", { text: when(sb.created_at) }));
}

export function stateClass(s) {
  return ["ready", "running", "paused"].includes(s) ? "st-" + s : "st-other";
}

function createForm() {
  const name = h("input", { id: "new-name", placeholder: "name (optional)", "aria-label": "name" });
  const image = h("input", { id: "new-image", placeholder: "image (server default)", "aria-label": "image" });
  const preset = h("select", { id: "new-size", "aria-label": "size" },
    presets.map((p) => h("option", { value: p, text: p || "default size" })));
  const button = h("button", { type: "submit", id: "create", text: "Create sandbox" });
  const form = h("form", { class: "panel create", id: "create-form" },
    h("h2", { text: "New sandbox" }), name, image, preset, button);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = {};
    if (name.value.trim()) body.name = name.value.trim();
    if (image.value.trim()) body.image = image.value.trim();
    if (preset.value) body.size = { preset: preset.value };
    button.disabled = true;
    try {
      const sb = await api.call("POST", "/sandboxes", body);
      location.hash = route("s", sb.id);
    } catch (err) {
      window.dispatchEvent(new CustomEvent("rung:error", { detail: err }));
    } finally {
      button.disabled = false;
    }
  });
  return form;
}
