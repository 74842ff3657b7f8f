// A small terminal renderer, written for rung's dashboard: enough of an
// xterm screen for a shell, readline and full-screen programs (less, vim,
// top). It understands printable text (wrapped at the width, the wrap
// deferred until the next character as xterm does; autowrap ?7 can turn
// it off), CR, LF (as CR LF unless opts.crlf is false: without a PTY no
// tty turns LF into CR LF for us; on a PTY LF moves down only), backspace,
// tab stops (HTS, TBC, CHT, CBT), the SGR colours and attributes (16 and
// 256 colours, truecolour, bold, dim, italic, underline, inverse,
// strikethrough, invisible), cursor moves (CUU, CUD, CUF, CUB, CNL, CPL,
// CUP, HVP, CHA, HPA, HPR, VPA, VPR, save and restore with the attributes),
// insert and delete characters (ICH, DCH, ECH, insert mode, REP), erase in
// line and in display (clear screen, clear scrollback), scroll regions
// (DECSTBM) with index, reverse index, next line, insert and delete lines
// and scroll up and down inside them, origin mode (?6), the alternate
// screen (?1049, ?1047, ?47, with ?1048's cursor save), the line-drawing
// character set (ESC ( 0), the cursor's visibility, application cursor
// keys (?1, for the caller's keys), bracketed paste mode (?2004, for the
// caller's paste), the mouse modes (?9, ?1000, ?1002, ?1003 and the
// encodings ?1005, ?1006, ?1015: mouseReport says what the caller sends
// for a mouse event, cellAt which cell it is over), and answers the cursor
// position report (CSI 6 n), the status report (CSI 5 n) and primary
// device attributes (CSI c) through opts.reply when given. Other escape
// sequences (OSC titles and queries, DCS strings, other private modes) are
// parsed and ignored.
// Output is put into the page as text nodes only, so nothing a program
// prints can become markup; the colours that have no class (256-colour
// beyond the first 16, truecolour) are set through the element's style
// object, which the page's CSP allows (it forbids style attributes in
// markup, not CSSOM).

const ESC = "\x1b";
const blank = Object.freeze({ c: " ", s: "" }); // cells are replaced, never changed in place

// The DEC special graphics set (ESC ( 0): line drawing, as ncurses uses
// it for boxes on xterm.
const graphics = {
  "`": "◆", a: "▒", f: "°", g: "±", j: "┘", k: "┐", l: "┌", m: "└", n: "┼", o: "⎺", p: "⎻", q: "─", r: "⎼",
  s: "⎽", t: "├", u: "┤", v: "┴", w: "┬", x: "│", y: "≤", z: "≥", "{": "π", "|": "≠", "}": "£", "~": "·",
};

// colour256 is colour n (16 to 255) of xterm's 256: a 6×6×6 cube, then 24 greys.
function colour256(n) {
  const hex = (v) => v.toString(16).padStart(2, "0");
  if (n >= 232) { const g = hex(8 + 10 * (n - 232)); return "#" + g + g + g; }
  const level = (v) => (v === 0 ? 0 : 55 + 40 * v);
  n -= 16;
  return "#" + hex(level(Math.floor(n / 36))) + hex(level(Math.floor(n / 6) % 6)) + hex(level(n % 6));
}

function rgb(r, g, b) {
  const hex = (v) => Math.max(0, Math.min(255, v | 0)).toString(16).padStart(2, "0");
  return "#" + hex(r) + hex(g) + hex(b);
}

const plain = () => ({ fg: -1, bg: -1, bold: false, dim: false, italic: false, under: false, inverse: false, strike: false, hidden: false });

export class Terminal {
  // el is the element to render into (its children are replaced).
  // opts: cols, rows, scrollback (lines kept above the main screen), crlf,
  // reply (a function given what the terminal answers a query with, to be
  // sent to the program as if typed; without it queries go unanswered).
  constructor(el, opts = {}) {
    this.el = el;
    this.cols = opts.cols || 120;
    this.rows = opts.rows || 32;
    this.scrollback = opts.scrollback || 5000;
    this.crlf = opts.crlf !== false;
    this.reply = opts.reply || null;
    this.reset();
  }

  reset() {
    // The buffer shown: each line an array of cells {c, s}, character and
    // style (classes, then ";fg;bg" colours when some have no class). On
    // the main screen lines[top] is the screen's first line, those above
    // it scrollback; lines below the cursor are made when first reached,
    // so lines.length <= top + rows. The alternate screen has exactly rows
    // lines and top 0.
    this.lines = [[]];
    this.top = 0;
    this.saved = null; // the saved cursor (ESC 7, CSI s, ?1048), per screen
    this.alt = false; // the alternate screen is shown
    this.other = null; // the screen not shown: {lines, top, saved}, or null before the first switch
    this.row = 0; // cursor, as an index into lines
    this.col = 0; // cols is the pending wrap
    this.attr = plain();
    this.style = "";
    this.state = "text"; // parser: text, esc, escInter, csi, osc, oscEsc, str, strEsc
    this.inter = "";
    this.cursorVisible = true;
    this.bracketedPaste = false;
    this.appCursor = false; // ?1: cursor keys send ESC O A, not ESC [ A
    // Mouse reporting, as the program asked for it: which events
    // (0 none, 9 presses, 1000 presses and releases, 1002 and motion
    // while a button is held, 1003 and all motion) and their encoding
    // ("" xterm's bytes, "utf8" ?1005, "sgr" ?1006, "urxvt" ?1015).
    this.mouseTracking = 0;
    this.mouseEncoding = "";
    this.insertMode = false;
    this.autowrap = true;
    this.origin = false; // ?6: rows count from the scroll region's top
    this.marginTop = 0; // the scroll region, screen rows, inclusive
    this.marginBottom = this.rows - 1;
    this.tabs = new Set();
    for (let c = 8; c < this.cols; c += 8) this.tabs.add(c);
    this.charsets = ["B", "B"]; // G0 and G1: B ASCII, 0 line drawing
    this.shift = 0; // SO selects G1, SI G0
    this.last = ""; // the last character put, for REP
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
      case "esc": this.escape(ch); return;
      case "escInter":
        if (ch >= " " && ch <= "/") return;
        this.state = "text";
        if (ch < " ") return;
        if (this.inter === "(" || this.inter === ")") this.charsets[this.inter === "(" ? 0 : 1] = ch === "0" ? "0" : "B";
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
      case "str": // DCS, SOS, PM, APC: ignored up to ST
        if (ch === ESC) this.state = "strEsc";
        return;
      case "strEsc":
        this.state = ch === "\\" ? "text" : "str";
        return;
    }
    switch (ch) {
      case ESC: this.state = "esc"; return;
      case "\r": this.col = 0; return;
      case "\n": case "\v": case "\f":
        if (this.crlf) this.newline(); else this.lineFeed();
        return;
      case "\b": this.col = Math.min(this.col, this.cols - 1); if (this.col > 0) this.col--; this.dirty.add(this.row); return;
      case "\t": this.tab(1); return;
      case "\x0e": this.shift = 1; return;
      case "\x0f": this.shift = 0; return;
    }
    if (ch < " " || ch === "\x7f") return; // other control characters: BEL and the like
    this.put(ch);
  }

  escape(ch) {
    this.state = "text";
    if (ch === "[") { this.state = "csi"; this.params = ""; }
    else if (ch === "]") this.state = "osc";
    else if (ch === "P" || ch === "X" || ch === "^" || ch === "_") this.state = "str";
    else if (ch === "c") this.reset();
    else if (ch >= " " && ch <= "/") { this.state = "escInter"; this.inter = ch; } // ESC ( B and the like
    else if (ch === "7") this.save();
    else if (ch === "8") this.restore();
    else if (ch === "D") this.lineFeed();
    else if (ch === "E") this.newline();
    else if (ch === "M") this.reverseIndex();
    else if (ch === "H") this.tabs.add(Math.min(this.col, this.cols - 1));
    // other two-character sequences are ignored (ESC =, ESC >, …)
  }

  // put writes ch at the cursor. col === cols is xterm's pending wrap:
  // the line is full and the next character goes to the next line (or,
  // with autowrap off, overwrites the last column).
  put(ch) {
    if (this.charsets[this.shift] === "0" && graphics[ch]) ch = graphics[ch];
    if (this.col >= this.cols) {
      if (this.autowrap) this.newline();
      else this.col = this.cols - 1;
    }
    const line = this.lines[this.row];
    while (line.length < this.col) line.push(blank);
    if (this.insertMode) {
      line.splice(this.col, 0, { c: ch, s: this.style });
      if (line.length > this.cols) line.length = this.cols;
    } else line[this.col] = { c: ch, s: this.style };
    this.col++;
    this.last = ch;
    this.dirty.add(this.row);
  }

  tab(k) {
    let c = Math.min(this.col, this.cols - 1);
    for (; k > 0; k--) {
      c++;
      while (c < this.cols - 1 && !this.tabs.has(c)) c++;
    }
    this.cursorTo(this.row, Math.min(c, this.cols - 1));
  }

  backTab(k) {
    let c = Math.min(this.col, this.cols - 1);
    for (; k > 0 && c > 0; k--) {
      c--;
      while (c > 0 && !this.tabs.has(c)) c--;
    }
    this.col = c;
  }

  // cursorTo moves the cursor to col on row (an index into lines); the
  // cells it passes on a short line become blanks, as a tab leaves them.
  cursorTo(row, col) {
    const line = this.lines[row];
    while (line.length < col) line.push(blank);
    this.col = col;
  }

  newline() {
    this.lineFeed();
    this.col = 0;
  }

  // lineFeed moves the cursor down a line, keeping its column; on the
  // scroll region's last line the region scrolls up (on the main screen,
  // a region that is the whole screen sends its top line to the
  // scrollback); below the region, at the screen's last line, it stays.
  lineFeed() {
    this.dirty.add(this.row);
    if (this.col >= this.cols) this.col = this.cols - 1;
    const at = this.row - this.top;
    if (at === this.marginBottom) this.scrollUp(1);
    else if (at < this.rows - 1) { this.row++; this.ensure(this.row); }
  }

  // reverseIndex moves the cursor up a line; on the scroll region's first
  // line the region scrolls down.
  reverseIndex() {
    this.dirty.add(this.row);
    const at = this.row - this.top;
    if (at === this.marginTop) this.scrollDown(1);
    else if (at > 0) this.row--;
  }

  ensure(row) {
    while (this.lines.length <= row) this.lines.push([]);
  }

  blankLines(k) { return Array.from({ length: k }, () => []); }

  markRows(from, to) { for (let r = from; r <= to; r++) this.dirty.add(this.top + r); }

  // scrollUp moves the scroll region's lines up by k, blank lines coming
  // in at its bottom; the cursor stays.
  scrollUp(k) {
    const t = this.marginTop, b = this.marginBottom;
    k = Math.min(k, b - t + 1);
    this.ensure(this.top + this.rows - 1);
    if (!this.alt && t === 0 && b === this.rows - 1) {
      // The whole main screen: its top lines go to the scrollback.
      for (let i = 0; i < k; i++) this.lines.push([]);
      this.top += k;
      this.row += k;
      this.trim();
      return;
    }
    this.lines.splice(this.top + t, k);
    this.lines.splice(this.top + b - k + 1, 0, ...this.blankLines(k));
    this.markRows(t, b);
  }

  // scrollDown moves the scroll region's lines down by k, blank lines
  // coming in at its top; the cursor stays.
  scrollDown(k) {
    const t = this.marginTop, b = this.marginBottom;
    k = Math.min(k, b - t + 1);
    this.ensure(this.top + this.rows - 1);
    this.lines.splice(this.top + b - k + 1, k);
    this.lines.splice(this.top + t, 0, ...this.blankLines(k));
    this.markRows(t, b);
  }

  // insertLines (IL) and deleteLines (DL) act from the cursor's line to
  // the scroll region's bottom, when the cursor is inside the region.
  insertLines(k) {
    const at = this.row - this.top, b = this.marginBottom;
    if (at < this.marginTop || at > b) return;
    k = Math.min(k, b - at + 1);
    this.ensure(this.top + this.rows - 1);
    this.lines.splice(this.top + b - k + 1, k);
    this.lines.splice(this.row, 0, ...this.blankLines(k));
    this.markRows(at, b);
    this.col = 0;
  }

  deleteLines(k) {
    const at = this.row - this.top, b = this.marginBottom;
    if (at < this.marginTop || at > b) return;
    k = Math.min(k, b - at + 1);
    this.ensure(this.top + this.rows - 1);
    this.lines.splice(this.row, k);
    this.lines.splice(this.top + b - k + 1, 0, ...this.blankLines(k));
    this.markRows(at, b);
    this.col = 0;
  }

  // setMargins sets the scroll region (DECSTBM, 1-based rows; nothing or
  // 0 for the screen's edges) and homes the cursor.
  setMargins(t, b) {
    t = Math.max(1, t || 1) - 1;
    b = Math.min(this.rows, b || this.rows) - 1;
    if (t >= b) return;
    this.marginTop = t;
    this.marginBottom = b;
    this.goTo(1, 1);
  }

  // goTo moves the cursor to 1-based row and col, counted from the scroll
  // region's top in origin mode.
  goTo(row, col) {
    if (this.origin) row = this.marginTop + Math.min(row, this.marginBottom - this.marginTop + 1);
    this.row = this.top + Math.min(this.rows, Math.max(1, row)) - 1;
    this.col = Math.min(this.cols, Math.max(1, col)) - 1;
    this.ensure(this.row);
  }

  // The lines the cursor moves up and down within: the scroll region's if
  // the cursor is inside it, the screen's otherwise.
  upLimit() { return this.top + (this.row - this.top >= this.marginTop ? this.marginTop : 0); }
  downLimit() { return this.top + (this.row - this.top <= this.marginBottom ? this.marginBottom : this.rows - 1); }

  save() {
    this.saved = { row: this.row - this.top, col: this.col, attr: { ...this.attr }, style: this.style,
      origin: this.origin, charsets: [...this.charsets], shift: this.shift };
  }

  restore() {
    const s = this.saved;
    if (!s) return;
    this.dirty.add(this.row);
    this.row = this.top + Math.min(this.rows - 1, s.row);
    this.col = Math.min(this.cols, s.col);
    this.ensure(this.row);
    Object.assign(this, { attr: { ...s.attr }, style: s.style, origin: s.origin, charsets: [...s.charsets], shift: s.shift });
  }

  // switchScreen shows the alternate screen (on) or the main one; the
  // cursor keeps its place on the screen. clear empties the alternate
  // screen first.
  switchScreen(on, clear) {
    if (on === this.alt) {
      if (on && clear) this.lines = this.blankLines(this.rows);
      return;
    }
    const at = this.row - this.top;
    const shown = { lines: this.lines, top: this.top, saved: this.saved };
    const next = this.other || { lines: this.blankLines(this.rows), top: 0, saved: null };
    this.other = shown;
    Object.assign(this, next);
    this.alt = on;
    if (on && clear) this.lines = this.blankLines(this.rows);
    this.row = this.top + at;
    this.ensure(this.row);
    this.full = true;
  }

  // mode sets the private mode p (CSI ? p h when on, CSI ? p l when not).
  mode(p, on) {
    switch (p) {
      case 1: this.appCursor = on; break;
      case 6: this.origin = on; this.goTo(1, 1); break;
      case 7: this.autowrap = on; break;
      case 25: this.cursorVisible = on; break;
      case 47: this.switchScreen(on, false); break;
      case 1047: // leaving clears the alternate screen
        if (!on && this.alt) this.lines = this.blankLines(this.rows);
        this.switchScreen(on, false);
        break;
      case 1048: if (on) this.save(); else this.restore(); break;
      case 1049: // the cursor saved on the main screen, the alternate one cleared
        if (on) { if (!this.alt) this.save(); this.switchScreen(true, true); }
        else if (this.alt) { this.switchScreen(false, false); this.restore(); }
        break;
      case 2004: this.bracketedPaste = on; break;
      // One mode says which mouse events are reported: setting one
      // replaces another, and resetting any turns reporting off (as in xterm).
      case 9: case 1000: case 1002: case 1003: this.mouseTracking = on ? p : 0; break;
      case 1005: case 1006: case 1015: {
        const enc = { 1005: "utf8", 1006: "sgr", 1015: "urxvt" }[p];
        if (on) this.mouseEncoding = enc;
        else if (this.mouseEncoding === enc) this.mouseEncoding = "";
        break;
      }
    }
  }

  // mouseReport returns what the terminal sends the program for a mouse
  // event m, or "" when its mode does not report it: m.action is "press",
  // "release", "move" or "wheel"; m.button the button pressed, released or
  // held while moving (0 left, 1 middle, 2 right; -1 none); m.up a wheel
  // turned up; m.col and m.row the cell, from 0 at the screen's top left;
  // m.shift, m.alt and m.ctrl the modifiers held.
  mouseReport(m) {
    const mode = this.mouseTracking;
    if (!mode) return "";
    let cb;
    if (m.action === "wheel") {
      if (mode === 9) return ""; // X10 reports presses of the three buttons only
      cb = m.up ? 64 : 65;
    } else if (m.action === "move") {
      if (mode === 9 || mode === 1000 || (mode === 1002 && m.button < 0)) return "";
      cb = 32 + (m.button < 0 ? 3 : m.button);
    } else if (m.button < 0 || m.button > 2 || (mode === 9 && m.action === "release")) {
      return "";
    } else {
      // Only SGR says which button was released; the others say 3.
      cb = m.action === "release" && this.mouseEncoding !== "sgr" ? 3 : m.button;
    }
    if (mode !== 9) cb += (m.shift ? 4 : 0) + (m.alt ? 8 : 0) + (m.ctrl ? 16 : 0);
    const x = m.col + 1, y = m.row + 1;
    switch (this.mouseEncoding) {
      case "sgr": return `\x1b[<${cb};${x};${y}${m.action === "release" ? "m" : "M"}`;
      case "urxvt": return `\x1b[${32 + cb};${x};${y}M`;
      case "utf8": // each value a character, which the input's UTF-8 encodes
        if (x > 2015 || y > 2015) return "";
        return "\x1b[M" + String.fromCharCode(32 + cb, 32 + x, 32 + y);
    }
    // xterm's bytes are 32 + each value, up to 255; the stdin this goes
    // to is text, sent as UTF-8, where bytes past 127 would become two:
    // a cell past column or row 95 is not reported (xterm stops at 223).
    if (x > 95 || y > 95) return "";
    return "\x1b[M" + String.fromCharCode(32 + cb, 32 + x, 32 + y);
  }

  // cellAt says which cell of the screen the point (x, y), in the page's
  // client coordinates, is over, given a cell's size in pixels ({w, h});
  // points off the screen give the nearest cell.
  cellAt(x, y, cell) {
    const first = this.el.children[this.top]; // the screen's top line, as drawn
    const box = (first || this.el).getBoundingClientRect();
    const clamp = (v, n) => Math.max(0, Math.min(n - 1, Math.floor(v)));
    return { col: clamp((x - box.left) / cell.w, this.cols), row: clamp((y - box.top) / cell.h, this.rows) };
  }

  csi(final, params) {
    const lead = params[0];
    const priv = lead === "?" || lead === ">" || lead === "<" || lead === "=";
    if (params === "!" && final === "p") { this.softReset(); return; }
    if (/[ -\/]/.test(params)) return; // intermediate bytes (CSI 2 SP q, cursor shape …): ignored
    const body = priv ? params.slice(1) : params;
    const ps = body.split(";").map((p) => parseInt(p, 10));
    const n = (i, def) => (isNaN(ps[i]) || ps[i] === 0 ? def : ps[i]);
    this.dirty.add(this.row);
    if (priv) {
      if (lead === "?" && (final === "h" || final === "l")) for (const p of ps) this.mode(p, final === "h");
      this.dirty.add(this.row);
      return; // other private sequences: nothing to do here
    }
    // At the pending wrap an erase to the end of the line keeps the last
    // column (top writes whole lines, then CSI K); any other sequence
    // starts from the last column.
    if (final === "K" && (ps[0] || 0) === 0 && this.col >= this.cols) return;
    if (final !== "m" && this.col >= this.cols) this.col = this.cols - 1;
    switch (final) {
      case "m": this.sgr(body); return;
      case "A": this.row = Math.max(this.upLimit(), this.row - n(0, 1)); break;
      case "B": case "e": this.row = Math.min(this.downLimit(), this.row + n(0, 1)); this.ensure(this.row); break;
      case "C": case "a": this.col = Math.min(this.cols - 1, this.col + n(0, 1)); break;
      case "D": this.col = Math.max(0, this.col - n(0, 1)); break;
      case "E": this.row = Math.min(this.downLimit(), this.row + n(0, 1)); this.col = 0; this.ensure(this.row); break;
      case "F": this.row = Math.max(this.upLimit(), this.row - n(0, 1)); this.col = 0; break;
      case "G": case "`": this.col = Math.min(this.cols - 1, n(0, 1) - 1); break;
      case "d": this.goTo(n(0, 1), this.col + 1); break;
      case "H": case "f": this.goTo(n(0, 1), n(1, 1)); break;
      case "I": this.tab(n(0, 1)); break;
      case "Z": this.backTab(n(0, 1)); break;
      case "g":
        if ((ps[0] || 0) === 0) this.tabs.delete(this.col);
        else if (ps[0] === 3) this.tabs.clear();
        break;
      case "K": this.eraseLine(isNaN(ps[0]) ? 0 : ps[0]); break;
      case "J": this.eraseDisplay(isNaN(ps[0]) ? 0 : ps[0]); break;
      case "@": this.insertChars(n(0, 1)); break;
      case "P": this.deleteChars(n(0, 1)); break;
      case "X": this.eraseChars(n(0, 1)); break;
      case "L": this.insertLines(n(0, 1)); break;
      case "M": this.deleteLines(n(0, 1)); break;
      case "S": this.scrollUp(n(0, 1)); break;
      case "T": if (ps.length <= 1) this.scrollDown(n(0, 1)); break; // with more, mouse tracking's
      case "r": this.setMargins(ps[0], ps[1]); break;
      case "b": for (let k = Math.min(n(0, 1), this.cols * this.rows); k > 0 && this.last; k--) this.put(this.last); break;
      case "h": case "l": if (ps.includes(4)) this.insertMode = final === "h"; break;
      case "s": this.save(); break;
      case "u": this.restore(); break;
      case "n": this.report(ps[0]); break;
      case "c": if ((ps[0] || 0) === 0 && this.reply) this.reply("\x1b[?1;2c"); break; // a VT100 with advanced video
    }
    this.dirty.add(this.row);
  }

  // report answers a device status report: 5 (status: fine) and 6 (the
  // cursor's position, 1-based, from the region's top in origin mode).
  report(p) {
    if (!this.reply) return;
    if (p === 5) this.reply("\x1b[0n");
    else if (p === 6) {
      const row = this.row - this.top + 1 - (this.origin ? this.marginTop : 0);
      this.reply(`\x1b[${row};${Math.min(this.col, this.cols - 1) + 1}R`);
    }
  }

  // softReset is DECSTR (CSI ! p): modes, the scroll region, attributes
  // and the saved cursor back to their defaults; the screens stay.
  softReset() {
    Object.assign(this, { insertMode: false, origin: false, autowrap: true, appCursor: false, cursorVisible: true,
      marginTop: 0, marginBottom: this.rows - 1, attr: plain(), style: "", saved: null, charsets: ["B", "B"], shift: 0 });
  }

  // insertChars moves the rest of the line right by k blanks (what is
  // pushed past the width is lost).
  insertChars(k) {
    const line = this.lines[this.row];
    if (this.col >= line.length) return;
    line.splice(this.col, 0, ...Array(Math.min(k, this.cols)).fill(blank));
    if (line.length > this.cols) line.length = this.cols;
  }

  // deleteChars removes k characters at the cursor; the rest moves left.
  deleteChars(k) {
    const line = this.lines[this.row];
    if (this.col < line.length) line.splice(this.col, k);
  }

  // eraseChars blanks k characters from the cursor.
  eraseChars(k) {
    const line = this.lines[this.row];
    for (let i = this.col; i < this.col + k && i < line.length; i++) line[i] = blank;
  }

  // resize sets the screen's size (a PTY's, after a window resize). Lines
  // are not reflowed; the cursor stays on its line, which stays on the
  // screen (the main screen's top lines go to the scrollback if need be,
  // lines below the cursor are dropped). The scroll region becomes the
  // whole screen, as xterm's does.
  resize(cols, rows) {
    for (let c = Math.ceil(this.cols / 8) * 8; c < cols; c += 8) this.tabs.add(c);
    this.cols = cols;
    this.rows = rows;
    if (this.col > cols) this.col = cols;
    this.marginTop = 0;
    this.marginBottom = rows - 1;
    const fit = (buf, row) => {
      if (row - buf.top >= rows) buf.top = row - rows + 1;
      if (buf.lines.length > buf.top + rows) buf.lines.length = buf.top + rows;
    };
    if (this.alt) {
      this.row = Math.min(this.row, rows - 1);
      this.lines.length = Math.min(this.lines.length, rows);
      this.ensure(rows - 1);
      if (this.other) fit(this.other, this.other.lines.length - 1);
    } else {
      fit(this, this.row);
      if (this.other) this.other = null; // the alternate screen is cleared when next shown
    }
    this.full = true;
    this.schedule();
  }

  eraseLine(mode) {
    const line = this.lines[this.row];
    if (mode === 0) line.length = Math.min(line.length, this.col);
    else if (mode === 1) for (let i = 0; i <= this.col && i < line.length; i++) line[i] = blank;
    else line.length = 0;
  }

  eraseDisplay(mode) {
    const end = this.top + this.rows;
    if (mode === 0) {
      this.eraseLine(0);
      if (this.alt) for (let r = this.row + 1; r < end; r++) this.lines[r] = [];
      else this.lines.length = this.row + 1;
    } else if (mode === 1) {
      for (let r = this.top; r < this.row; r++) this.lines[r] = [];
      this.eraseLine(1);
    } else if (mode === 2 && this.alt) {
      this.lines = this.blankLines(this.rows);
    } else if (mode === 2) {
      // The screen scrolls up into the scrollback, as xterm's does; the
      // cursor stays where it was on the now empty screen.
      const at = this.row - this.top;
      this.top = this.lines.length;
      this.row = this.top + at;
      this.ensure(this.row);
      this.trim();
    } else if (mode === 3 && !this.alt) {
      this.lines.splice(0, this.top);
      this.row -= this.top;
      this.top = 0;
    }
    this.full = true;
  }

  // trim drops the oldest scrollback past opts.scrollback lines.
  trim() {
    const drop = this.lines.length - (this.scrollback + this.rows);
    if (drop <= 0) return;
    this.lines.splice(0, drop);
    this.top -= drop;
    this.row -= drop;
    this.full = true;
  }

  // sgr sets the attributes from SGR's parameters (";"-separated, a
  // colour's parts also ":"-separated, as ITU T.416 writes them).
  sgr(body) {
    const a = this.attr;
    const ps = body.split(";");
    const num = (i) => { const v = parseInt(ps[i], 10); return isNaN(v) ? 0 : v; };
    // colour reads an extended colour (5;n or 2;r;g;b) from parts,
    // returning it and how many parts it took.
    const colour = (parts) => {
      if (parts[0] === 5) return [parts[1] < 16 ? parts[1] : parts[1] < 256 ? colour256(parts[1]) : -1, 2];
      if (parts[0] === 2) return [rgb(parts[1], parts[2], parts[3]), 4];
      return [-1, 0];
    };
    for (let i = 0; i < ps.length; i++) {
      if (ps[i].includes(":")) {
        const sub = ps[i].split(":").map((v) => parseInt(v, 10) || 0);
        if (sub[0] === 38 || sub[0] === 48) {
          // 38:2:r:g:b, or 38:2:id:r:g:b with a colour space id.
          const rest = sub[1] === 2 && sub.length > 5 ? [2, ...sub.slice(3)] : sub.slice(1);
          const [c] = colour(rest);
          if (sub[0] === 38) a.fg = c; else a.bg = c;
        } else if (sub[0] === 4) a.under = sub[1] !== 0; // underline styles: any is an underline
        continue;
      }
      const p = num(i);
      if (p === 0) Object.assign(a, plain());
      else if (p === 1) a.bold = true;
      else if (p === 2) a.dim = true;
      else if (p === 3) a.italic = true;
      else if (p === 4 || p === 21) a.under = true;
      else if (p === 7) a.inverse = true;
      else if (p === 8) a.hidden = true;
      else if (p === 9) a.strike = true;
      else if (p === 22) { a.bold = false; a.dim = false; }
      else if (p === 23) a.italic = false;
      else if (p === 24) a.under = false;
      else if (p === 27) a.inverse = false;
      else if (p === 28) a.hidden = false;
      else if (p === 29) a.strike = false;
      else if (p >= 30 && p <= 37) a.fg = p - 30;
      else if (p === 39) a.fg = -1;
      else if (p >= 40 && p <= 47) a.bg = p - 40;
      else if (p === 49) a.bg = -1;
      else if (p >= 90 && p <= 97) a.fg = p - 90 + 8;
      else if (p >= 100 && p <= 107) a.bg = p - 100 + 8;
      else if (p === 38 || p === 48) {
        const [c, used] = colour([num(i + 1), num(i + 2), num(i + 3), num(i + 4), num(i + 5)]);
        if (p === 38) a.fg = c; else a.bg = c;
        i += used;
      }
    }
    this.style = styleOf(a);
  }

  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    // A timer rather than requestAnimationFrame: a tab in the background
    // (or a headless browser) gets no frames, and output must not pile up.
    setTimeout(() => { this.scheduled = false; this.render(); }, 0);
  }

  // text returns the buffer shown (the main screen with its scrollback,
  // or the alternate screen) as plain text, one line each.
  text() {
    return this.lines.map(lineText).join("\n").replace(/\n+$/, "");
  }

  // screen returns the screen's rows lines as plain text.
  screen() {
    return Array.from({ length: this.rows }, (_, r) => lineText(this.lines[this.top + r] || []));
  }

  render() {
    // On the main screen blank lines below the cursor (a cleared screen)
    // are not drawn; the alternate screen is drawn whole.
    let last = this.lines.length - 1;
    while (!this.alt && last > this.row && this.lines[last].length === 0) last--;
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
    const col = this.cursorVisible ? Math.min(this.col, this.cols - 1) : -1;
    for (const r of this.dirty) {
      if (r > last) continue;
      this.renderLine(el.children[r], this.lines[r], r === this.row ? col : -1);
    }
    this.dirty.clear();
    el.scrollTop = el.scrollHeight;
  }

  renderLine(div, line, cursor) {
    div.replaceChildren();
    const cells = cursor >= line.length ? line.concat(Array(cursor - line.length + 1).fill(blank)) : line;
    let i = 0;
    while (i < cells.length) {
      const s = cells[i].s;
      let j = i;
      let txt = "";
      while (j < cells.length && cells[j].s === s && j !== cursor) txt += cells[j++].c;
      if (txt) div.appendChild(span(s, txt));
      if (j === cursor) {
        // The cursor shows in the screen's colours, whatever the cell's.
        const cls = cells[j].s.split(";")[0];
        div.appendChild(span("cur" + (cls ? " " + cls : ""), cells[j].c));
        j++;
      }
      i = j;
    }
  }
}

function lineText(l) {
  return l.map((c) => c.c).join("").replace(/\s+$/, "");
}

// styleOf is the cells' style for attributes a: classes (f0…f15 and b0…b15
// for the 16 colours, fd and bd for the default ones inverted, tb bold, td
// dim, ti italic, tu underline, ts strikethrough, th invisible), then, if a
// colour has no class, ";fg;bg" with the colours as #rrggbb.
function styleOf(a) {
  let fg = a.fg, bg = a.bg;
  if (a.inverse) { fg = a.bg === -1 ? "d" : a.bg; bg = a.fg === -1 ? "d" : a.fg; }
  const cls = [];
  let fgCSS = "", bgCSS = "";
  if (typeof fg === "string" && fg[0] === "#") fgCSS = fg;
  else if (fg !== -1) cls.push("f" + fg);
  if (typeof bg === "string" && bg[0] === "#") bgCSS = bg;
  else if (bg !== -1) cls.push("b" + bg);
  if (a.bold) cls.push("tb");
  if (a.dim) cls.push("td");
  if (a.italic) cls.push("ti");
  if (a.under) cls.push("tu");
  if (a.strike) cls.push("ts");
  if (a.hidden) cls.push("th");
  return cls.join(" ") + (fgCSS || bgCSS ? ";" + fgCSS + ";" + bgCSS : "");
}

// span is a span of text in style s (see styleOf); colours without a
// class are set on its style object (CSSOM, which the CSP allows).
function span(s, text) {
  const el = document.createElement("span");
  const [cls, fg, bg] = s.split(";");
  if (cls) el.className = cls;
  if (fg) el.style.color = fg;
  if (bg) el.style.backgroundColor = bg;
  el.textContent = text;
  return el;
}
