// The sandboxes list: state, image, size, network and the newest usage
// sample (CPU, memory, disk) of each, a page at a time, and the form that
// creates one.

import { h, replace, route, bytes, when, clip, sizeText } from "./dom.js";
import * as api from "./api.js";

const page = 50; // sandboxes per page; "Show more" adds a page
const refreshMS = 5000; // the server samples usage every 5 s

// marked is set once the first page of the list is on screen, when the
// "rung:list" performance mark is made (the dashboard's load benchmark
// reads it).
let marked = false;

const presets = ["", "lite", "standard-1", "standard-2", "standard-3", "standard-4"];

export function listView(main) {
  let limit = page;
  let state = "";
  let timer = null;
  let closed = false;
  const tbody = h("tbody", { id: "sandbox-rows" });
  const count = h("span", { class: "count", id: "sandbox-count" });
  const more = h("button", { type: "button", id: "more", hidden: true, text: "Show more",
    onclick: () => { limit += page; load(); } });
  const stateSel = h("select", { id: "state-filter", "aria-label": "state",
    onchange: () => { state = stateSel.value; limit = page; load(); } },
    ["", "ready", "running", "paused"].map((s) => h("option", { value: s, text: s || "any state" })));

  const form = createForm();
  replace(main,
    h("section", { class: "panel" },
      h("div", { class: "toolbar" }, h("h2", { text: "Sandboxes" }), count, h("span", { class: "grow" }), stateSel),
      h("table", { class: "list" },
        h("thead", {}, h("tr", {}, ["sandbox", "state", "image", "size", "network", "CPU", "memory", "disk", "created"]
          .map((t) => h("th", { text: t })))),
        tbody),
      more),
    form);

  async function load() {
    clearTimeout(timer);
    const q = new URLSearchParams({ limit: String(limit + 1) });
    if (state) q.set("state", state);
    try {
      const [list, usage] = await Promise.all([
        api.call("GET", "/sandboxes?" + q),
        api.call("GET", "/usage").catch(() => ({ sandboxes: [] })),
      ]);
      if (closed) return;
      const sbs = list.sandboxes || [];
      const use = new Map((usage.sandboxes || []).map((u) => [u.sandbox, u.usage]));
      more.hidden = sbs.length <= limit;
      const shown = sbs.slice(0, limit);
      count.textContent = more.hidden ? `${shown.length}` : `first ${shown.length}`;
      replace(tbody, shown.length ? shown.map((sb) => row(sb, use.get(sb.id)))
        : h("tr", {}, h("td", { colspan: "9", class: "empty", text: "No sandboxes yet: create one below." })));
      if (!marked) { marked = true; performance.mark("rung:list"); }
    } catch (err) {
      if (!closed) window.dispatchEvent(new CustomEvent("rung:error", { detail: err }));
    }
    if (!closed) timer = setTimeout(load, refreshMS);
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
