// The dashboard's client of rung's /v1 API: the same endpoints the CLI
// and the SDK call, with the bearer token the user logged in with. The
// token lives in sessionStorage (this tab only, gone when it closes) and
// is sent in the Authorization header; the exec WebSocket, whose
// handshake a browser cannot give headers, carries it as a subprotocol
// (see docs/API.md, "Dashboard").

const tokenKey = "rung.token";

export function token() { return sessionStorage.getItem(tokenKey) || ""; }
export function setToken(t) { sessionStorage.setItem(tokenKey, t); }
export function clearToken() { sessionStorage.removeItem(tokenKey); }

// ApiError is an error answer: code is rung's wire code ("not_found").
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function fail(res) {
  let code = "http_" + res.status, msg = res.statusText || "request failed";
  try {
    const body = await res.json();
    if (body && body.error) { code = body.error.code; msg = body.error.message; }
  } catch (_) { /* not rung's error body */ }
  if (res.status === 401) window.dispatchEvent(new CustomEvent("rung:unauthenticated"));
  return new ApiError(res.status, code, msg);
}

function headers(extra) {
  return Object.assign({ "Authorization": "Bearer " + token() }, extra || {});
}

// call sends one request and returns its JSON body (null for 204).
export async function call(method, path, body, signal) {
  const init = { method, headers: headers(), signal };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch("/v1" + path, init);
  if (!res.ok) throw await fail(res);
  if (res.status === 204) return null;
  return res.json();
}

// text reads a file-like body as text, at most max bytes: the rest is not
// downloaded. It returns {text, truncated, binary}.
export async function text(path, max, signal) {
  const res = await fetch("/v1" + path, { headers: headers(), signal });
  if (!res.ok) throw await fail(res);
  const reader = res.body.getReader();
  const chunks = [];
  let n = 0, truncated = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    n += value.length;
    if (n > max) { truncated = true; reader.cancel(); break; }
  }
  const all = new Uint8Array(Math.min(n, max));
  let off = 0;
  for (const c of chunks) {
    const part = c.subarray(0, Math.min(c.length, all.length - off));
    all.set(part, off);
    off += part.length;
    if (off >= all.length) break;
  }
  const binary = all.subarray(0, 8000).includes(0);
  return { text: new TextDecoder().decode(all), truncated, binary, mode: res.headers.get("X-Rung-Mode") };
}

// stream reads an NDJSON response, calling onValue for each value (blank
// heartbeat lines are skipped), until it ends or signal aborts.
export async function stream(path, onValue, signal) {
  const res = await fetch("/v1" + path, { headers: headers(), signal });
  if (!res.ok) throw await fail(res);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += value;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) onValue(JSON.parse(line));
    }
  }
  if (buf.trim()) onValue(JSON.parse(buf));
}

// socket opens a WebSocket to an API path, authenticated by subprotocol.
export function socket(path) {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return new WebSocket(scheme + "//" + location.host + "/v1" + path, ["rung", "rung.bearer." + token()]);
}

export const sbx = (id) => "/sandboxes/" + encodeURIComponent(id);
