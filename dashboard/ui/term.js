// A small terminal renderer, written for rung's dashboard: enough of a
// VT100/xterm screen for a shell's output. It understands printable text
// (wrapped at the width), CR, LF (as CR LF: without a PTY no tty turns LF
// into CR LF for us, and with one CR LF arrives and gives the same
// result), backspace, tab, the SGR colours and attributes (16 colours,
// the first 16 of the 256, bold, dim, italic, underline, inverse), cursor
// moves (CUU, CUD, CUF, CUB, CUP, CHA, VPA), erase in line and in display
// (clear screen, clear scrollback). Other escape sequences (OSC titles,
// private modes) are parsed and ignored. Output is put into the page as
// text nodes only, so nothing a program prints can become markup.

const ESC = "\x1b";

export class Terminal {
  // el is the element to render into (its children are replaced).
  constructor(el, opts = {}) {
    this.el = el;
    this.cols = opts.cols || 120;
    this.rows = opts.rows || 32;
    this.scrollback = opts.scrollback || 5000;
    this.reset();
  }

  reset() {
    this.lines = [[]]; // each line an array of cells {c, s}: character and class
    this.row = 0; // cursor, as an index into lines
    this.col = 0;
    this.attr = { fg: -1, bg: -1, bold: false, dim: false, italic: false, under: false, inverse: false };
    this.style = "";
    this.state = "text"; // parser: text, esc, csi, osc, oscEsc
    this.params = "";
    this.full = true; // redraw every line at the next render
    this.dirty = new Set();
    this.scheduled = false;
    this.schedule();
  }

  // write feeds the terminal a string of output (escape sequences may be
  // split across writes).
  write(str) {
    for (const ch of str) this.feed(ch);
    this.dirty.add(this.row);
    this.schedule();
  }

  feed(ch) {
    switch (this.state) {
      case "esc":
        if (ch === "[") { this.state = "csi"; this.params = ""; }
        else if (ch === "]") this.state = "osc";
        else if (ch === "c") { this.state = "text"; this.reset(); }
        else this.state = "text"; // two-character sequences we ignore (ESC =, ESC 7, …)
        return;
      case "csi":
        if (ch >= "@" && ch <= "~") { this.state = "text"; this.csi(ch, this.params); }
        else if (this.params.length < 64) this.params += ch;
        return;
      case "osc": // ends with BEL or ST (ESC \)
        if (ch === "\x07") this.state = "text";
        else if (ch === ESC) this.state = "oscEsc";
        return;
      case "oscEsc":
        this.state = ch === "\\" ? "text" : "osc";
        return;
    }
    switch (ch) {
      case ESC: this.state = "esc"; return;
      case "\r": this.col = 0; return;
      case "\n": this.newline(); return;
      case "\b": if (this.col > 0) this.col--; this.dirty.add(this.row); return;
      case "\t": {
        const next = Math.min(this.cols - 1, (Math.floor(this.col / 8) + 1) * 8);
        while (this.col < next) this.put(" ");
        return;
      }
    }
    if (ch < " " || ch === "\x7f") return; // other control characters: BEL and the like
    this.put(ch);
  }

  put(ch) {
    if (this.col >= this.cols) this.newline();
    const line = this.lines[this.row];
    while (line.length < this.col) line.push({ c: " ", s: "" });
    line[this.col] = { c: ch, s: this.style };
    this.col++;
    this.dirty.add(this.row);
  }

  newline() {
    this.dirty.add(this.row);
    this.row++;
    this.col = 0;
    this.ensure(this.row);
    const max = this.scrollback + this.rows;
    if (this.lines.length > max) {
      const drop = this.lines.length - max;
      this.lines.splice(0, drop);
      this.row -= drop;
      this.full = true;
    }
  }

  ensure(row) {
    while (this.lines.length <= row) this.lines.push([]);
  }

  // top is the index of the screen's first line (cursor addressing is
  // relative to it); lines above it are scrollback.
  top() { return Math.max(0, this.lines.length - this.rows); }

  csi(final, params) {
    const priv = params.startsWith("?");
    const ps = (priv ? params.slice(1) : params).split(";").map((p) => parseInt(p, 10));
    const n = (i, def) => (isNaN(ps[i]) || ps[i] === 0 ? def : ps[i]);
    if (priv) return; // private modes (cursor visibility, bracketed paste): nothing to do here
    this.dirty.add(this.row);
    switch (final) {
      case "m": this.sgr(ps); return;
      case "A": this.row = Math.max(this.top(), this.row - n(0, 1)); break;
      case "B": this.row += n(0, 1); this.ensure(this.row); break;
      case "C": this.col = Math.min(this.cols - 1, this.col + n(0, 1)); break;
      case "D": this.col = Math.max(0, this.col - n(0, 1)); break;
      case "G": this.col = Math.min(this.cols - 1, n(0, 1) - 1); break;
      case "d": this.row = this.top() + Math.min(this.rows, n(0, 1)) - 1; this.ensure(this.row); break;
      case "H": case "f":
        this.row = this.top() + Math.min(this.rows, n(0, 1)) - 1;
        this.col = Math.min(this.cols - 1, n(1, 1) - 1);
        this.ensure(this.row);
        break;
      case "K": this.eraseLine(isNaN(ps[0]) ? 0 : ps[0]); break;
      case "J": this.eraseDisplay(isNaN(ps[0]) ? 0 : ps[0]); break;
    }
    this.dirty.add(this.row);
  }

  eraseLine(mode) {
    const line = this.lines[this.row];
    if (mode === 0) line.length = Math.min(line.length, this.col);
    else if (mode === 1) for (let i = 0; i <= this.col && i < line.length; i++) line[i] = { c: " ", s: "" };
    else line.length = 0;
  }

  eraseDisplay(mode) {
    if (mode === 0) {
      this.eraseLine(0);
      this.lines.length = this.row + 1;
    } else if (mode === 1) {
      for (let r = this.top(); r < this.row; r++) this.lines[r] = [];
      this.eraseLine(1);
    } else if (mode === 2) {
      // The screen scrolls up into the scrollback, as xterm's does; the
      // cursor stays where it was on the now empty screen.
      const at = this.row - this.top();
      const keep = this.lines.length;
      for (let i = 0; i < this.rows; i++) this.lines.push([]);
      this.row = keep + at;
      this.trim();
    } else if (mode === 3) {
      const at = this.row - this.top();
      this.lines.splice(0, this.top());
      this.row = at;
    }
    this.full = true;
  }

  trim() {
    const max = this.scrollback + this.rows;
    if (this.lines.length > max) {
      const drop = this.lines.length - max;
      this.lines.splice(0, drop);
      this.row = Math.max(0, this.row - drop);
    }
  }

  sgr(ps) {
    const a = this.attr;
    for (let i = 0; i < ps.length; i++) {
      const p = isNaN(ps[i]) ? 0 : ps[i];
      if (p === 0) Object.assign(a, { fg: -1, bg: -1, bold: false, dim: false, italic: false, under: false, inverse: false });
      else if (p === 1) a.bold = true;
      else if (p === 2) a.dim = true;
      else if (p === 3) a.italic = true;
      else if (p === 4) a.under = true;
      else if (p === 7) a.inverse = true;
      else if (p === 22) { a.bold = false; a.dim = false; }
      else if (p === 23) a.italic = false;
      else if (p === 24) a.under = false;
      else if (p === 27) a.inverse = false;
      else if (p >= 30 && p <= 37) a.fg = p - 30;
      else if (p === 39) a.fg = -1;
      else if (p >= 40 && p <= 47) a.bg = p - 40;
      else if (p === 49) a.bg = -1;
      else if (p >= 90 && p <= 97) a.fg = p - 90 + 8;
      else if (p >= 100 && p <= 107) a.bg = p - 100 + 8;
      else if (p === 38 || p === 48) {
        // 256 colours (5;n): the first 16 are the palette's; the cube and
        // greys are left at the default. Truecolour (2;r;g;b) likewise.
        let c = -1;
        if (ps[i + 1] === 5) { if (ps[i + 2] < 16) c = ps[i + 2]; i += 2; }
        else if (ps[i + 1] === 2) i += 4;
        if (p === 38) a.fg = c; else a.bg = c;
      }
    }
    let fg = a.fg, bg = a.bg;
    if (a.inverse) { fg = a.bg < 0 ? "d" : a.bg; bg = a.fg < 0 ? "d" : a.fg; }
    const cls = [];
    if (fg !== -1) cls.push("f" + fg);
    if (bg !== -1) cls.push("b" + bg);
    if (a.bold) cls.push("tb");
    if (a.dim) cls.push("td");
    if (a.italic) cls.push("ti");
    if (a.under) cls.push("tu");
    this.style = cls.join(" ");
  }

  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    // A timer rather than requestAnimationFrame: a tab in the background
    // (or a headless browser) gets no frames, and output must not pile up.
    setTimeout(() => { this.scheduled = false; this.render(); }, 0);
  }

  // text returns the terminal's content as plain text, one line each.
  text() {
    return this.lines.map((l) => l.map((c) => c.c).join("").replace(/\s+$/, "")).join("\n").replace(/\n+$/, "");
  }

  render() {
    // Blank lines below the cursor (a cleared screen) are not drawn.
    let last = this.lines.length - 1;
    while (last > this.row && this.lines[last].length === 0) last--;
    const el = this.el;
    if (this.full) {
      el.replaceChildren();
      this.full = false;
      this.dirty = new Set(this.lines.keys());
    }
    while (el.childElementCount > last + 1) el.lastElementChild.remove();
    while (el.childElementCount < last + 1) {
      this.dirty.add(el.childElementCount);
      el.appendChild(document.createElement("div")).className = "ln";
    }
    if (this.cursorAt !== undefined) this.dirty.add(this.cursorAt);
    this.cursorAt = this.row;
    this.dirty.add(this.row);
    for (const r of this.dirty) {
      if (r > last) continue;
      this.renderLine(el.children[r], this.lines[r], r === this.row ? this.col : -1);
    }
    this.dirty.clear();
    el.scrollTop = el.scrollHeight;
  }

  renderLine(div, line, cursor) {
    div.replaceChildren();
    const cells = cursor >= line.length ? line.concat(Array(cursor - line.length + 1).fill({ c: " ", s: "" })) : line;
    let i = 0;
    while (i < cells.length) {
      const s = cells[i].s;
      let j = i;
      let txt = "";
      while (j < cells.length && cells[j].s === s && j !== cursor) txt += cells[j++].c;
      if (txt) {
        const span = document.createElement("span");
        if (s) span.className = s;
        span.textContent = txt;
        div.appendChild(span);
      }
      if (j === cursor) {
        const cur = document.createElement("span");
        cur.className = "cur" + (cells[j].s ? " " + cells[j].s : "");
        cur.textContent = cells[j].c;
        div.appendChild(cur);
        j++;
      }
      i = j;
    }
  }
}
