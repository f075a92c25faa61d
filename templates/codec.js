/* reportgen result.html: reading the page's embedded data (inlined before report.js, in the
 * same script block; report.js takes what it needs from window.__rgCodec).
 *
 * Block readers: base64 and text7 text to bytes (b7ToBytes mirrors
 * reportgen.writers.html.text7; twin reportgen.testing.html_page.text7_decode), gzip inflation,
 * the lazy block's merge (writers/html/lazy.py; twin html_page._merge_into). The timeline
 * payload: decodeItems() mirrors reportgen.writers.html.payload.encode_items (twin
 * reportgen.testing.html_page.decode_items). Keep them in step.
 */
window.__rgCodec = (function () {
  'use strict';

  const CTOR = {i1: Int8Array, u1: Uint8Array, i2: Int16Array, u2: Uint16Array,
                i4: Int32Array, u4: Uint32Array, f4: Float32Array, f8: Float64Array};

  function b64ToBytes(text) {
    text = text.trim();
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(text);
    const bin = atob(text);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  /* The n bytes of a block written by reportgen.writers.html.text7 (7 bits per character;
   * from U+0080 on, one of the unsafe chunks NUL, CR, '<' and the chunk after it). */
  const TEXT7_UNSAFE = [0x00, 0x0D, 0x3C];
  function b7ToBytes(text, n) {
    const out = new Uint8Array(n);
    let acc = 0, bits = 0, o = 0;
    for (let i = 0; i < text.length && o < n; i++) {
      const c = text.charCodeAt(i);
      const pair = c >= 0x80;
      acc = (acc << 7) | (pair ? TEXT7_UNSAFE[(c - 0x80) >> 7] : c);
      bits += 7;
      if (bits >= 8) { bits -= 8; out[o++] = acc >> bits; acc &= (1 << bits) - 1; }
      if (pair && o < n) {
        acc = (acc << 7) | ((c - 0x80) & 0x7F);
        bits += 7;
        if (bits >= 8) { bits -= 8; out[o++] = acc >> bits; acc &= (1 << bits) - 1; }
      }
    }
    return out;
  }
  async function gunzip(bytes) {
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  /* The lazy block's values back in their places (an object merges key by key, anything else replaces). */
  function mergeInto(target, part) {
    for (const [k, v] of Object.entries(part)) {
      const plain = (x) => x && typeof x === 'object' && !Array.isArray(x);
      if (plain(v) && plain(target[k])) mergeInto(target[k], v); else target[k] = v;
    }
  }
  /* Take the text of an embedded script block and drop it from the DOM (frees the memory). */
  function takeBlock(id) {
    const node = document.getElementById(id);
    const text = node.textContent;
    node.textContent = '';
    return text;
  }

  // ---------------------------------------------------------------------------------- payload
  function unshuffle(raw, offset, n, Ctor) {
    const k = Ctor.BYTES_PER_ELEMENT;
    if (k === 1) return new Ctor(raw.buffer.slice(raw.byteOffset + offset, raw.byteOffset + offset + n));
    const out = new Uint8Array(n * k);
    for (let j = 0; j < k; j++) {
      const base = offset + j * n;
      for (let i = 0; i < n; i++) out[i * k + j] = raw[base + i];
    }
    return new Ctor(out.buffer);
  }

  /* Item indices in the stable order of ``key`` (non-negative integers): LSD radix sort, 16 bits
   * a pass (one pass for a previous op, two for byte counts below 2^32). */
  function stableOrder(key, n) {
    let max = 0;
    for (let i = 0; i < n; i++) if (key[i] > max) max = key[i];
    let order = new Int32Array(n), tmp = new Int32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    const count = new Float64Array(65537);
    for (let div = 1; max >= div; div *= 65536) {
      count.fill(0);
      for (let j = 0; j < n; j++) count[Math.floor(key[order[j]] / div) % 65536 + 1]++;
      for (let k = 0; k < 65536; k++) count[k + 1] += count[k];
      for (let j = 0; j < n; j++) { const i = order[j]; tmp[count[Math.floor(key[i] / div) % 65536]++] = i; }
      [order, tmp] = [tmp, order];
    }
    return order;
  }
  /* Where each item's value sits in a column stored grouped by op, and within an op by ``then``
   * (or in item order): counting sort by op over the items in ``then`` order, stable. */
  function groupPositions(op, then, n, nOps) {
    const order = then ? stableOrder(then, n) : null;
    const next = new Float64Array(nOps + 1);
    for (let i = 0; i < n; i++) next[op[i] + 1]++;
    for (let k = 0; k < nOps; k++) next[k + 1] += next[k];
    const at = new Int32Array(n);
    for (let j = 0; j < n; j++) { const i = order ? order[j] : j; at[i] = next[op[i]]++; }
    return at;
  }
  /* Columns stored grouped by op (payload.BY_OP: all items of op 0, then op 1, ...; within an
   * op by the head's ``then``, payload.THEN_BY, else in item order) back in item order. A
   * column that is another one's ``then`` is put back first. */
  function ungroupByOp(columns, cols, n, off) {
    const grouped = columns.filter((c) => c.by_op);
    if (!grouped.length) return;
    const op = cols.op;
    let nOps = 0;
    for (let i = 0; i < n; i++) if (op[i] >= nOps) nOps = op[i] + 1;
    const isKey = (c) => grouped.some((g) => g.name === c.then);
    const positions = new Map();
    for (const c of [...grouped.filter((c) => !isKey(c)), ...grouped.filter(isKey)]) {
      const then = c.then || '';
      if (!positions.has(then)) {
        let key = null;
        if (then === 'prev_op') {
          key = new Int32Array(n);
          for (let i = 1; i < n; i++) key[i] = op[i - 1] + 1;
          for (let l = 0; l + 1 < off.length; l++) if (off[l] < off[l + 1]) key[off[l]] = 0;
        } else if (then) {
          key = cols[then];
        }
        positions.set(then, groupPositions(op, key, n, nOps));
      }
      const at = positions.get(then), stored = cols[c.name], out = new stored.constructor(n);
      for (let i = 0; i < n; i++) out[i] = stored[at[i]];
      cols[c.name] = out;
    }
  }

  /* Items sorted by lane then start: start/end ns relative to t0, names by index. */
  function decodeItems(header, raw) {
    const cols = {};
    for (const c of header.columns) cols[c.name] = unshuffle(raw, c.offset, c.n, CTOR[c.dtype]);
    const n = header.n, off = header.lane_off;
    ungroupByOp(header.columns, cols, n, off);
    const start = new Float64Array(n), end = new Float64Array(n), endMax = new Float64Array(n);
    const gidx = new Float64Array(n), cmd = new Float64Array(n);
    for (let l = 0; l + 1 < off.length; l++) {
      let t = 0, g = 0, c = 0, m = -Infinity;
      for (let i = off[l]; i < off[l + 1]; i++) {
        const s = t + cols.gap[i], e = s + cols.dur[i];
        start[i] = s; end[i] = e; t = e;
        if (e > m) m = e;
        endMax[i] = m;               // running max: binary search for the first item ending after x
        g += cols.gidx[i]; gidx[i] = g;
        c += cols.cmd[i]; cmd[i] = c;
      }
    }
    const bwExplicit = new Map();
    let p = 0;
    for (let j = 0; j < cols.bwx_pos.length; j++) {
      p += cols.bwx_pos[j];
      bwExplicit.set(p, cols.bwx_val[j]);
    }
    return {n, off, start, end, endMax, gidx, cmd, op: cols.op, kernel: cols.kernel,
            bytesPlus1: cols.bytes, urateQ: cols.urate, bwExplicit, layer: cols.layer || null,
            launch: cols.launch || null};
  }

  return {CTOR, b64ToBytes, b7ToBytes, gunzip, mergeInto, takeBlock, unshuffle, decodeItems};
})();
