// The dashboard's entry: login, the hash router ("#/" the sandboxes,
// "#/s/ID/TAB" one sandbox) and the error banner.

import { h, replace } from "./dom.js";
import * as api from "./api.js";
import { listView } from "./list.js";

const main = document.getElementById("main");
const crumbs = document.getElementById("crumbs");
const banner = document.getElementById("error");
const logout = document.getElementById("logout");

let view = null; // the view shown: {close(), sandbox?, tab?(name)}
let renders = 0; // counts navigations, so a late module load is not shown over a newer page

// showError puts err in the banner until the next navigation or dismissal.
export function showError(err) {
  const msg = err instanceof api.ApiError ? `${err.code}: ${err.message}` : String(err && err.message || err);
  replace(banner, h("span", { text: msg }), h("button", { type: "button", class: "link", text: "dismiss", onclick: () => { banner.hidden = true; } }));
  banner.hidden = false;
}
window.addEventListener("rung:error", (e) => showError(e.detail));
window.addEventListener("unhandledrejection", (e) => {
  if (e.reason && e.reason.name === "AbortError") return;
  showError(e.reason);
});

function login(message) {
  logout.hidden = true;
  replace(crumbs);
  const input = h("input", { type: "password", id: "token", name: "token", autocomplete: "current-password",
    placeholder: "rung_…", required: true, "aria-label": "API token" });
  const note = h("p", { class: "note", id: "login-note", text: message || "" });
  const form = h("form", { class: "login", id: "login" },
    h("h1", { text: "rung" }),
    h("label", { for: "token", text: "API token" }),
    input,
    h("button", { type: "submit", text: "Log in" }),
    note,
    h("p", { class: "hint", text: "The admin token of `rung serve` is in <data>/token; `rung token create` makes others. " +
      "It is kept in this tab's session storage only." }));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    api.setToken(input.value.trim());
    try {
      await api.call("GET", "/sandboxes?limit=1");
    } catch (err) {
      api.clearToken();
      note.textContent = err instanceof api.ApiError ? `${err.code}: ${err.message}` : String(err);
      return;
    }
    render();
  });
  replace(main, form);
  input.focus();
}

async function render() {
  banner.hidden = true;
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map((p) => {
    try { return decodeURIComponent(p); } catch (_) { return ""; }
  });
  if (!api.token()) {
    renders++;
    if (view) { view.close(); view = null; }
    return login();
  }
  logout.hidden = false;
  if (parts[0] === "s" && parts[1]) {
    const tab = parts[2] || "journal";
    if (view && view.sandbox === parts[1]) return view.tab(tab);
    if (view) { view.close(); view = null; }
    // Loaded on first use: the sandboxes list, the first page, needs
    // none of it.
    const gen = ++renders;
    const { sandboxView } = await import("./sandbox.js");
    if (gen !== renders) return; // another navigation came meanwhile
    view = sandboxView(main, crumbs, parts[1], tab);
    return;
  }
  renders++;
  if (view) view.close();
  replace(crumbs);
  view = listView(main);
}

logout.addEventListener("click", () => {
  api.clearToken();
  location.hash = "#/";
  render();
});
window.addEventListener("rung:unauthenticated", () => {
  // On the login form (no view) the form itself says why.
  if (!api.token() || !view) return;
  api.clearToken();
  if (view) { view.close(); view = null; }
  login("Your token was refused: log in again.");
});
window.addEventListener("hashchange", render);
render();
