/* reportgen result.html runtime.
 *
 * Unpacks plotly.js and the item payload embedded in the page, then draws the overview charts
 * and, when their tab is opened, the timelines. A timeline draws an occupancy heatmap (one cell
 * per lane and pixel column) while more than BAR_LIMIT commands are visible and real bars with
 * hover when fewer are, so a million commands stay interactive.
 *
 * The Tables tab (framework traces) draws every analysis table from its own gzip'd JSON block,
 * 500 rows at a time, sortable over all embedded rows.
 *
 * The embedded blocks are read by templates/codec.js (decodeItems() and the block readers);
 * occupancy() mirrors reportgen.analysis.timeline.occupancy(). Keep them in step.
 */
(function () {
  'use strict';

  const timing = {start: performance.now()};   // ms since navigation start
  const DATA = JSON.parse(document.getElementById('rg-data').textContent);
  const BAR_LIMIT = DATA.bar_limit;
  const TYPES = DATA.types;
  const OPS = DATA.ops;
  const KERNELS = DATA.kernels;
  const LANES = DATA.lanes;
  const SPAN = DATA.span_ns;
  const PMU = DATA.pmu;
  const {CTOR, b64ToBytes, b7ToBytes, gunzip, mergeInto, takeBlock, unshuffle, decodeItems} = window.__rgCodec;

  // ---------------------------------------------------------------------------------- helpers
  // Input text inside Plotly's label/hover markup: '<' escaped means no tag (and so no attribute)
  // can start; Plotly decodes &amp; &lt; &gt; only (not &quot;), so '"' stays as typed.
  const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const k of kids) e.append(k);   // strings become text nodes: never parsed as HTML
    return e;
  };
  const group3 = (x) => Math.round(x).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  /* Adaptive time units, the rule of reportgen.writers.html.units: the largest unit in which
   * the value is still >= 1. */
  const TIME_UNITS = [['ns', 1], ['µs', 1e3], ['ms', 1e6], ['s', 1e9]];
  function timeUnit(ns) {
    let u = TIME_UNITS[0];
    for (const t of TIME_UNITS) if (Math.abs(ns) >= t[1]) u = t;
    return u;
  }
  function fmtDur(ns) {
    const [name, scale] = timeUnit(ns);
    return scale === 1 ? group3(ns) + ' ns' : (ns / scale).toFixed(3) + ' ' + name;
  }
  /* Tick values (µs, the axes' data unit) and labels in one adaptive unit for a window [a, b)
   * in ns: "0.2 s", "1.20015 s" (as many decimals as the step needs). */
  function timeTicks(a, b, count) {
    const raw = Math.max((b - a) / Math.max(count, 1), 1e-3);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((v) => v >= raw);
    const [name, scale] = timeUnit(Math.max(Math.abs(a), Math.abs(b)));
    const decimals = Math.max(0, Math.ceil(-Math.log10(step / scale) - 1e-9));
    const tickvals = [], ticktext = [];
    for (let t = Math.ceil(a / step) * step; t <= b + 1e-9 && tickvals.length < 50; t += step) {
      tickvals.push(t / 1e3);
      const v = t / scale;
      ticktext.push((Math.abs(v) < 1e-12 ? '0' : v.toLocaleString('en-US', {minimumFractionDigits: decimals,
        maximumFractionDigits: decimals})) + ' ' + name);
    }
    return {tickmode: 'array', tickvals, ticktext};
  }

  async function loadPlotly() {
    const n = +document.getElementById('rg-plotly').dataset.bytes;
    const code = new TextDecoder().decode(await gunzip(b7ToBytes(takeBlock('rg-plotly'), n)));
    timing.plotly_inflated_ms = performance.now();
    // an inline classic script runs at global scope and defines window.Plotly; unlike a blob:
    // URL it is allowed by a Content-Security-Policy that allows inline scripts only
    const s = document.createElement('script');
    s.textContent = code;
    document.head.append(s);
    if (typeof window.Plotly === 'undefined') {
      throw new Error('plotly.js did not run (a Content-Security-Policy that blocks inline scripts?)');
    }
  }

  /* A long lane name (framework thread names) shortened for the axis, start and end kept. */
  const shortLane = (name) => (name.length <= 28 ? name : name.slice(0, 18) + '…' + name.slice(-9));

  let IT = null;   // the decoded items
  const opType = (i) => OPS[IT.op[i]][0];
  function bytesOf(i) { const b = IT.bytesPlus1[i]; return b > 0 ? b - 1 : NaN; }
  function bwOf(i) {
    if (!OPS[IT.op[i]][3]) return NaN;
    if (IT.bwExplicit.has(i)) return IT.bwExplicit.get(i);
    return bytesOf(i) / (IT.end[i] - IT.start[i] + DATA.payload.bw_pad_ns);
  }
  function urateOf(i) { const q = IT.urateQ[i]; return q > 0 ? (q - 1) / DATA.urate_scale : NaN; }
  function laneOf(i) {
    let lo = 0, hi = IT.off.length - 2;
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (IT.off[mid] <= i) lo = mid; else hi = mid - 1; }
    return lo;
  }

  /* The hover text of one item (HTML for Plotly: every input string escaped). */
  function hoverText(i) {
    const lane = LANES[laneOf(i)], op = OPS[IT.op[i]], type = TYPES[op[0]];
    const s = IT.start[i], e = IT.end[i];
    if (lane.layer) return layerHover(i, lane);
    if (lane.overlap) {     // Ascend Overlap Analysis (writers/html/overlap.py): interval, no launch
      return `<b>${esc(op[1] ?? '(unnamed)')}</b><br>${esc(lane.name)}` +
        `<br>start ${fmtDur(s)} · duration ${fmtDur(e - s)}`;
    }
    if (lane.host) {
      return `<b>${esc(op[1] ?? '(unnamed)')}</b><br>${esc(type.name)} · ${esc(lane.name)}` +
        `<br>start ${fmtDur(s)} · duration ${fmtDur(e - s)}`;
    }
    if (!PMU) {     // a framework device slice: the kernel is its name, the operator launched it
      const k = IT.kernel[i];
      return [`<b>${esc(op[1] ?? '(unnamed)')}</b>`, `${esc(type.name)} · ${esc(lane.name)}`,
        'launched by ' + (k > 0 ? esc(KERNELS[k - 1]) : '(unknown operator)'),
        `start ${fmtDur(s)} · duration ${fmtDur(e - s)}`,
        ...(IT.launch && IT.launch[i] > 0 ? ['<i>click: show its launch</i>'] : [])].join('<br>');
    }
    const lines = [`<b>${esc(lane.name)} #${IT.gidx[i]}</b>  cmd id ${IT.cmd[i]}`,
      `op ${esc(type.name)} / ${esc(op[1] ?? '(unknown)')}`];
    const k = IT.kernel[i];
    lines.push('kernel ' + (k > 0 ? esc(KERNELS[k - 1]) : '(unknown)'));
    lines.push(`start ${fmtDur(s)} · duration ${fmtDur(e - s)}`);
    const b = bytesOf(i);
    if (!Number.isNaN(b)) {
      let line = `bytes ${group3(b)}`;
      const bw = bwOf(i);
      if (!Number.isNaN(bw)) line += ` · ${op[3]} bandwidth ${bw.toFixed(2)} GB/s`;
      if (op[2]) line += ` · ${esc(op[2])}`;
      lines.push(line);
    }
    const u = urateOf(i);
    if (!Number.isNaN(u)) lines.push(`uArch rate ${(u * 100).toFixed(2)}%`);
    if (IT.layer && (lane.engine === 'TIU' || lane.engine === 'GDMA')) lines.push('layer ' + layerLabel(IT.layer[i] - 1));
    return lines.join('<br>');
  }

  // ------------------------------------------------------------------------------ filters
  // Function Types switched off (shared by all timelines). System (send/wait) types are waiting,
  // not work: one legend entry for all of them, off until it is clicked.
  const WAITING = TYPES.map((t, k) => (t.sys ? k : -1)).filter((k) => k >= 0);
  const typeOff = new Set(WAITING);
  const typeListeners = [];
  function setTypeOff(t, off) {
    if (off) typeOff.add(t); else typeOff.delete(t);
    for (const f of typeListeners) f();
  }

  // ------------------------------------------------------------------------------ occupancy
  /* Per lane row and bucket of [a, b): summed overlap / bucket width (clipped to 1), the type of
   * the longest piece in the bucket and the number of items touching it. Same rule as
   * analysis.timeline.occupancy. */
  function occupancy(rows, ranges, a, b, W) {
    const w = (b - a) / W;
    const R = rows.length;
    const cov = new Float64Array(R * W), best = new Float64Array(R * W);
    const btype = new Int32Array(R * W).fill(-1), count = new Uint32Array(R * W);
    const put = (idx, amount, t) => {
      cov[idx] += amount; count[idx] += 1;
      if (amount > best[idx]) { best[idx] = amount; btype[idx] = t; }
    };
    for (let r = 0; r < R; r++) {
      const [lo, hi] = ranges[r];
      const base = r * W;
      for (let i = lo; i < hi; i++) {
        let s = IT.start[i], e = IT.end[i];
        if (e <= a || s >= b || e <= s) continue;
        const t = opType(i);
        if (typeOff.has(t)) continue;
        if (s < a) s = a;
        if (e > b) e = b;
        const b0 = Math.min(Math.floor((s - a) / w), W - 1), b1 = Math.min(Math.floor((e - a) / w), W - 1);
        if (b0 === b1) { put(base + b0, e - s, t); continue; }
        put(base + b0, a + (b0 + 1) * w - s, t);
        for (let k = b0 + 1; k < b1; k++) put(base + k, w, t);
        put(base + b1, e - (a + b1 * w), t);
      }
    }
    for (let j = 0; j < cov.length; j++) cov[j] = Math.min(cov[j] / w, 1);
    return {frac: cov, btype, count, w};
  }

  function lowerBound(arr, lo, hi, x) {   // first index in [lo, hi) with arr[idx] > x
    while (lo < hi) { const mid = (lo + hi) >> 1; if (arr[mid] > x) hi = mid; else lo = mid + 1; }
    return lo;
  }
  function firstAtOrAfter(arr, lo, hi, x) {   // first index in [lo, hi) with arr[idx] >= x
    while (lo < hi) { const mid = (lo + hi) >> 1; if (arr[mid] >= x) hi = mid; else lo = mid + 1; }
    return lo;
  }

  /* Piecewise colour scale: type k spans [k, k+1) in z, from a light tint (little busy) to the
   * type's colour (fully busy); a heatmap cell's z is type + busy fraction. */
  function mix(hex, f) {
    const v = parseInt(hex.slice(1), 16);
    const ch = [(v >> 16) & 255, (v >> 8) & 255, v & 255].map((c) => Math.round(c + (255 - c) * f));
    return `rgb(${ch.join(',')})`;
  }
  const TYPE_SCALE = (() => {
    const K = Math.max(TYPES.length, 1), scale = [];
    TYPES.forEach((t, k) => {
      scale.push([k / K, mix(t.color, 0.8)], [(k + 1) / K, t.color]);
    });
    if (!scale.length) scale.push([0, '#fff'], [1, '#fff']);
    return scale;
  })();
  const OVERVIEW_SCALE = [[0, '#ffffff'], [1, '#37474f']];

  // ------------------------------------------------------------------------------ timeline
  const views = {};

  class Timeline {
    constructor(spec, host) {
      this.spec = spec;
      this.host = host;
      this.range = [0, Math.max(SPAN, 1)];
      this.engineOff = new Set();
      this.highlight = null;
      this.rendering = null;
      this.pending = false;
      this.dirty = true;
      this.last = null;
      this.linked = [];            // other plots that follow this view's x range
      this.build();
    }

    engines() {
      const seen = [];
      for (const l of this.spec.lanes) { const e = LANES[l].engine; if (!seen.includes(e)) seen.push(e); }
      return seen;
    }
    rows() { return this.spec.lanes.filter((l) => !this.engineOff.has(LANES[l].engine)); }

    build() {
      const bar = el('div', {class: 'toolbar'});
      const engines = el('span', {class: 'group'}, el('span', {class: 'label'}, 'Engines'));
      for (const e of this.engines()) {
        const box = el('input', {type: 'checkbox', checked: '', 'data-engine': e});
        box.addEventListener('change', () => {
          if (box.checked) this.engineOff.delete(e); else this.engineOff.add(e);
          this.schedule();
        });
        engines.append(el('label', {class: 'engine', style: `--c:${LANES.find((l) => l.engine === e).color}`}, box, e));
      }
      const sheets = el('select', {class: 'jump-sheet', 'aria-label': 'sheet'});
      for (const l of this.spec.lanes) if (!LANES[l].host) sheets.append(el('option', {value: String(l)}, LANES[l].name));
      const idx = el('input', {type: 'number', min: '0', step: '1', class: 'jump-idx', placeholder: 'global_idx',
                               'aria-label': 'global_idx'});
      const note = el('span', {class: 'jump-note'});
      const go = () => {
        const lane = Number(sheets.value), g = Number(idx.value);
        const i = findItem(lane, g);
        note.textContent = i < 0 ? `${LANES[lane].name} has no global_idx ${idx.value}` : '';
        if (i >= 0) this.jumpTo(i);
      };
      idx.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') go(); });
      const jump = el('span', {class: 'group'}, el('span', {class: 'label'}, 'Jump to'), sheets, idx,
                      el('button', {type: 'button', onclick: go}, 'Go'), note);
      // name search: Enter or the arrows step through the matches in time order
      this.searchBox = el('input', {type: 'search', class: 'search', 'aria-label': 'find by name',
                                    placeholder: PMU ? 'find Function / kernel name' : 'find kernel / operator name'});
      this.searchNote = el('span', {class: 'search-note', 'aria-live': 'polite'});
      this.searchBox.addEventListener('keydown', (ev) => {
        if (ev.key === 'Enter') { ev.preventDefault(); this.step(ev.shiftKey ? -1 : 1); }
      });
      this.searchBox.addEventListener('input', () => { this.matches = null; this.searchNote.textContent = ''; });
      const find = el('span', {class: 'group'}, el('span', {class: 'label'}, 'Find'), this.searchBox,
                      el('button', {type: 'button', title: 'previous match (Shift+Enter)', onclick: () => this.step(-1)}, '◀'),
                      el('button', {type: 'button', title: 'next match (Enter)', onclick: () => this.step(1)}, '▶'),
                      this.searchNote);
      const reset = el('button', {type: 'button', class: 'reset', onclick: () => this.reset(),
                                  title: 'or double-click the plot; keys: W/S zoom, A/D pan'}, 'Reset zoom');
      bar.append(engines, jump, find, reset);
      this.status = el('div', {class: 'status'});
      this.legend = el('div', {class: 'legend'});
      this.plot = el('div', {class: 'timeline-plot'});
      this.host.append(bar, this.legend, this.plot, this.status);
      this.plot.addEventListener('mouseenter', () => { keyTarget = this; });
      this.buildLegend();
      this.syncLegend();
      typeListeners.push(() => { this.syncLegend(); this.dirty = true; if (this.visible()) this.schedule(); });
    }

    buildLegend() {
      const present = new Uint8Array(TYPES.length);
      for (const l of this.spec.lanes) for (let i = IT.off[l]; i < IT.off[l + 1]; i++) present[opType(i)] = 1;
      this.legend.append(el('span', {class: 'label'}, 'Function Type'));
      // device types before host categories, each alphabetically
      const order = TYPES.map((t, k) => k).filter((k) => present[k]).sort((p, q) =>
        (TYPES[p].group === 'host') - (TYPES[q].group === 'host') ||
        TYPES[p].name.localeCompare(TYPES[q].name, undefined, {sensitivity: 'base'}));
      for (const k of order.filter((j) => !TYPES[j].sys)) {
        const t = TYPES[k];
        const chip = el('button', {type: 'button', class: 'chip', 'data-type': String(k),
                                   style: `--c:${t.color}`, title: 'click to hide / show'},
                        el('i'), (t.group === 'host' ? 'host: ' : '') + t.name);
        chip.addEventListener('click', () => setTypeOff(k, !typeOff.has(k)));
        this.legend.append(chip);
      }
      const waiting = order.filter((j) => TYPES[j].sys);
      if (waiting.length) {
        const chip = el('button', {type: 'button', class: 'chip waiting', 'data-type': 'waiting',
                                   style: `--c:${TYPES[waiting[0]].color}`,
                                   title: 'system commands (send/wait: ' + waiting.map((j) => TYPES[j].name).join(', ') +
                                          '): waiting, not work; click to show / hide'},
                        el('i'), 'waiting (system)');
        chip.addEventListener('click', () => {
          const off = !typeOff.has(waiting[0]);
          for (const j of waiting) { if (off) typeOff.add(j); else typeOff.delete(j); }
          for (const f of typeListeners) f();
        });
        this.legend.append(chip);
      }
      const all = el('button', {type: 'button', class: 'chip-all', onclick: () => {
        typeOff.clear(); for (const f of typeListeners) f();
      }}, 'show all');
      this.legend.append(all);
    }
    syncLegend() {
      for (const chip of this.legend.querySelectorAll('.chip')) {
        const k = chip.dataset.type === 'waiting' ? WAITING[0] : Number(chip.dataset.type);
        chip.classList.toggle('off', typeOff.has(k));
      }
    }

    visible() { return this.host.offsetParent !== null; }

    reset() { this.highlight = null; this.setRange(0, Math.max(SPAN, 1)); }
    setRange(a, b) {
      const full = Math.max(SPAN, 1);
      if (!(b > a)) return this.rendering || Promise.resolve(this.last);
      const w = Math.min(b - a, full);
      a = Math.max(0, Math.min(a, full - w));
      this.range = [a, a + w];
      return this.schedule();
    }

    jumpTo(i) {
      const s = IT.start[i], e = IT.end[i], pad = Math.max((e - s) * 10, 2000);
      this.highlight = i;
      const lane = laneOf(i);
      if (this.engineOff.has(LANES[lane].engine)) {
        this.engineOff.delete(LANES[lane].engine);
        const box = this.host.querySelector(`input[data-engine="${CSS.escape(LANES[lane].engine)}"]`);
        if (box) box.checked = true;
      }
      return this.setRange(s - pad, e + pad).then((result) => { this.revealLane(lane); return result; });
    }

    /* Scroll the window so the lane's row is in view (a trace with many host lanes puts device
     * lanes far below) and flash the plot; the row itself is highlighted by layout(). */
    revealLane(lane) {
      const r = this.rows().indexOf(lane), ya = this.plot._fullLayout && this.plot._fullLayout.yaxis;
      if (r < 0 || !ya) return;
      const box = this.plot.getBoundingClientRect();
      const y = box.top + ya._offset + ya.l2p(r);
      if (y < 40 || y > window.innerHeight - 40) window.scrollBy({top: y - window.innerHeight / 2, behavior: 'instant'});
      this.host.classList.add('lane-flash');
      setTimeout(() => this.host.classList.remove('lane-flash'), 1200);
    }

    /* Items of this view's lanes whose Function Type / Name (host: category / name) or kernel
     * (framework: launching operator) contains the search text, in time order. */
    findMatches(text) {
      const q = text.trim().toLowerCase();
      if (!q) return new Int32Array(0);
      const opHit = new Uint8Array(OPS.length), kernelHit = new Uint8Array(KERNELS.length + 1);
      OPS.forEach((op, k) => {
        opHit[k] = (op[1] ?? '').toLowerCase().includes(q) || TYPES[op[0]].name.toLowerCase().includes(q) ? 1 : 0;
      });
      KERNELS.forEach((name, k) => { kernelHit[k + 1] = name.toLowerCase().includes(q) ? 1 : 0; });
      const found = [];
      for (const l of this.spec.lanes) {
        for (let i = IT.off[l]; i < IT.off[l + 1]; i++) if (opHit[IT.op[i]] || kernelHit[IT.kernel[i]]) found.push(i);
      }
      const out = Int32Array.from(found);
      return out.sort((p, q2) => IT.start[p] - IT.start[q2] || p - q2);
    }

    step(direction) {
      if (!this.matches) { this.matches = this.findMatches(this.searchBox.value); this.matchAt = -1; }
      const n = this.matches.length;
      if (!n) {
        this.searchNote.textContent = this.searchBox.value.trim() ? 'no match' : '';
        return Promise.resolve(null);
      }
      this.matchAt = ((this.matchAt < 0 && direction < 0 ? 0 : this.matchAt + direction) % n + n) % n;
      this.searchNote.textContent = `${group3(this.matchAt + 1)} / ${group3(n)}`;
      return this.jumpTo(this.matches[this.matchAt]);
    }

    /* Coalesce render requests: one render at a time, the latest range wins. */
    schedule() {
      this.dirty = true;
      if (this.rendering) { this.pending = true; return this.rendering; }
      this.rendering = (async () => {
        let result;
        do {
          this.pending = false;
          result = await this.render();
        } while (this.pending);
        this.rendering = null;
        return result;
      })();
      return this.rendering;
    }

    async render() {
      const t0 = performance.now();
      const [a, b] = this.range;
      const rows = this.rows();
      const ranges = rows.map((l) => [lowerBound(IT.endMax, IT.off[l], IT.off[l + 1], a),
                                      firstAtOrAfter(IT.start, IT.off[l], IT.off[l + 1], b)]);
      let visible = 0;
      for (const [lo, hi] of ranges) {
        for (let i = lo; i < hi; i++) {
          if (IT.end[i] > a && IT.start[i] < b && !typeOff.has(opType(i))) visible++;
        }
      }
      const traces = [];
      let tier;
      if (visible > BAR_LIMIT) {
        tier = 'heatmap';
        traces.push(this.heatmapTrace(rows, ranges, a, b));
      } else {
        tier = 'bars';
        traces.push(...this.barTraces(rows, ranges, a, b));
      }
      if (rows.length) traces.push(this.overviewTrace(rows));
      const computeMs = performance.now() - t0;
      this.applying = true;
      try {
        await Plotly.react(this.plot, traces, this.layout(rows, a, b), {
          scrollZoom: true, displaylogo: false, responsive: true, doubleClick: false,
          modeBarButtonsToRemove: ['select2d', 'lasso2d', 'autoScale2d', 'toggleSpikelines'],
        });
      } finally {
        this.applying = false;
      }
      if (!this.wired) this.wire();
      for (const other of this.linked) other(a, b);
      document.dispatchEvent(new CustomEvent('rg-range', {detail: {view: this.spec.id, a, b}}));
      this.dirty = false;
      const barCount = tier === 'bars' ? traces.reduce((n, t) => n + (t.type === 'bar' ? t.x.length : 0), 0) : 0;
      this.status.textContent = !rows.length ? 'No lanes: every engine is switched off above.' :
        `${group3(visible)} commands in view (${fmtDur(a)} – ${fmtDur(b)}) · ` +
        (tier === 'bars' ? 'hover a bar for details'
          : `occupancy view, 1 column = ${fmtDur((b - a) / this.columns())}; zoom in to under ` +
            `${group3(BAR_LIMIT)} commands for individual bars (wheel, drag, the slider below, ` +
            'or the W/S and A/D keys)');
      this.last = {tier, visible, bars: barCount, compute_ms: computeMs,
                   plot_ms: performance.now() - t0 - computeMs, range: [a, b]};
      this.plot.dataset.tier = tier;
      this.plot.dataset.visible = String(visible);
      return this.last;
    }

    columns() {
      const w = this.plot.clientWidth || 1200;
      return Math.max(200, Math.min(2400, Math.round(w - 160)));
    }

    heatmapTrace(rows, ranges, a, b) {
      const W = this.columns();
      const occ = occupancy(rows, ranges, a, b, W);
      const z = [], text = [];
      const x = new Float64Array(W);
      for (let k = 0; k < W; k++) x[k] = (a + (k + 0.5) * occ.w) / 1e3;
      for (let r = 0; r < rows.length; r++) {
        const zr = new Array(W), tr = new Array(W);
        const name = esc(LANES[rows[r]].name);
        for (let k = 0; k < W; k++) {
          const j = r * W + k, f = occ.frac[j];
          if (occ.count[j] === 0) { zr[k] = null; tr[k] = ''; continue; }
          const t = occ.btype[j];
          zr[k] = t + 0.02 + 0.97 * f;
          tr[k] = `${name} · ${fmtDur(a + k * occ.w)} – ${fmtDur(a + (k + 1) * occ.w)}` +
            `<br>${group3(occ.count[j])} command${occ.count[j] > 1 ? 's' : ''}, busy ${(f * 100).toFixed(1)}%` +
            `<br>mostly ${esc(TYPES[t].name)}`;
        }
        z.push(zr); text.push(tr);
      }
      return {type: 'heatmap', x, y: rows.map((_, r) => r), z, text, hoverinfo: 'text',
              colorscale: TYPE_SCALE, zmin: 0, zmax: Math.max(TYPES.length, 1), showscale: false,
              zsmooth: false, xgap: 0, ygap: 3, name: 'occupancy'};
    }

    barTraces(rows, ranges, a, b) {
      const byType = new Map();
      // a bar is drawn at least one pixel wide (its hover keeps the real duration)
      const minUs = (b - a) / 1e3 / Math.max(this.plot.clientWidth - 170, 100);
      rows.forEach((l, r) => {
        const [lo, hi] = ranges[r];
        for (let i = lo; i < hi; i++) {
          if (!(IT.end[i] > a && IT.start[i] < b)) continue;
          const t = opType(i);
          if (typeOff.has(t)) continue;
          if (!byType.has(t)) byType.set(t, {y: [], base: [], x: [], hovertext: [], customdata: []});
          const g = byType.get(t);
          g.y.push(r); g.base.push(IT.start[i] / 1e3); g.x.push(Math.max((IT.end[i] - IT.start[i]) / 1e3, minUs));
          g.hovertext.push(hoverText(i)); g.customdata.push(i);
        }
      });
      const traces = [];
      for (const [t, g] of [...byType.entries()].sort((p, q) => p[0] - q[0])) {
        traces.push({type: 'bar', orientation: 'h', name: esc(TYPES[t].name), ...g, hoverinfo: 'text',
                     width: 0.72, marker: {color: TYPES[t].color, line: {width: 0}}, showlegend: false});
      }
      if (!traces.length) traces.push({type: 'bar', orientation: 'h', x: [], y: [], base: [], showlegend: false});
      return traces;
    }

    /* The full-span occupancy strip shown only in the range slider (rows below the lanes, outside
     * the main y range). */
    overviewTrace(rows) {
      const B = DATA.overview.buckets, z = [];
      for (const l of rows) {
        const zr = new Array(B);
        for (let k = 0; k < B; k++) zr[k] = OVERVIEW[l * B + k] / 255;
        z.push(zr);
      }
      const w = Math.max(SPAN, 1) / B, x = [];
      for (let k = 0; k < B; k++) x.push(((k + 0.5) * w) / 1e3);
      return {type: 'heatmap', x, y: rows.map((_, r) => rows.length + 1 + r), z,
              colorscale: OVERVIEW_SCALE, zmin: 0, zmax: 1, showscale: false, hoverinfo: 'skip',
              zsmooth: false, name: 'overview'};
    }

    layout(rows, a, b) {
      const R = Math.max(rows.length, 1);   // an empty view keeps one (blank) row
      const shapes = [];
      // separators between cores in multi-core views, between host and device lanes, and
      // between the levels of an Ascend trace view (host PTA / CANN, Ascend Hardware / HCCL)
      for (let r = 1; r < rows.length; r++) {
        const p = LANES[rows[r - 1]], q = LANES[rows[r]];
        if (p.host !== q.host || p.group !== q.group) {
          shapes.push({type: 'line', xref: 'paper', x0: 0, x1: 1, yref: 'y', y0: r - 0.5, y1: r - 0.5,
                       line: {color: '#90a4ae', width: 1, dash: 'dot'}});
        }
      }
      if (this.highlight !== null) {
        const i = this.highlight, r = rows.indexOf(laneOf(i));
        if (r >= 0) {
          shapes.push({type: 'rect', xref: 'paper', yref: 'y', x0: 0, x1: 1, y0: r - 0.5, y1: r + 0.5,
                       fillcolor: 'rgba(255, 213, 79, 0.25)', line: {width: 0}, layer: 'below'});
          shapes.push({type: 'rect', xref: 'x', yref: 'y', x0: IT.start[i] / 1e3, x1: IT.end[i] / 1e3,
                       y0: r - 0.5, y1: r + 0.5, line: {color: '#d50000', width: 2}, fillcolor: 'rgba(0,0,0,0)'});
        }
      }
      for (const hook of timelineHooks.shapes) shapes.push(...hook(rows, a, b));
      const hl = this.highlight !== null ? laneOf(this.highlight) : -1;
      const ticktext = rows.map((l) => `<span style="color:${LANES[l].color}">${l === hl ? '<b>▶ ' : ''}` +
                                       `${esc(shortLane(LANES[l].name))}${l === hl ? '</b>' : ''}</span>`);
      const width = this.plot.clientWidth || 1200;
      const rowPx = Math.max(12, Math.min(26, Math.floor(900 / Math.max(R, 1))));   // many lanes: thinner
      return {
        height: Math.max(220, 90 + R * rowPx + 70),
        margin: {l: Math.min(150, Math.round(width * 0.25)), r: width < 600 ? 6 : 20, t: 10, b: 40},
        uirevision: this.spec.id,
        dragmode: 'zoom',
        hovermode: 'closest',
        hoverlabel: {align: 'left', bgcolor: '#fff', font: {size: 12}},
        barmode: 'overlay',
        plot_bgcolor: '#fafbfc',
        shapes,
        xaxis: {range: [a / 1e3, b / 1e3], title: {text: 'time since first event', standoff: 4},
                ...timeTicks(a, b, Math.max(3, Math.floor(width / 130))),
                showgrid: true, gridcolor: '#e3e7ea', zeroline: false, ticksuffix: '',
                rangeslider: {visible: true, thickness: 0.09, range: [0, Math.max(SPAN, 1) / 1e3],
                              bgcolor: '#f5f5f5', yaxis: {rangemode: 'fixed', range: [2 * R + 0.5, R + 0.5]}}},
        yaxis: {range: [R - 0.5, -0.5], tickvals: rows.map((_, r) => r), ticktext, fixedrange: true,
                showgrid: false, zeroline: false, automargin: true},
      };
    }

    wire() {
      this.wired = true;
      this.plot.on('plotly_relayout', (ev) => {
        if (this.applying) return;
        let a = null, b = null;
        if (ev['xaxis.autorange']) { this.reset(); return; }
        if (Array.isArray(ev['xaxis.range'])) [a, b] = ev['xaxis.range'];
        else if ('xaxis.range[0]' in ev) { a = ev['xaxis.range[0]']; b = ev['xaxis.range[1]']; }
        if (a === null || b === null) return;
        this.setRange(Number(a) * 1e3, Number(b) * 1e3);
      });
      this.plot.on('plotly_doubleclick', () => { this.reset(); return false; });
      for (const hook of timelineHooks.wired) hook(this);
    }
  }

  let OVERVIEW = null;

  /* Keyboard, as in Perfetto: W/S zoom in/out around the middle, A/D pan, for the timeline the
   * mouse was last over (never while typing in a field). */
  let keyTarget = null;
  window.addEventListener('keydown', (ev) => {
    const v = keyTarget;
    if (!v || !v.visible() || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement) return;
    const [a, b] = v.range, w = b - a, mid = (a + b) / 2;
    const key = ev.key.toLowerCase();
    if (key === 'w') v.setRange(mid - w / 4, mid + w / 4);
    else if (key === 's') v.setRange(mid - w, mid + w);
    else if (key === 'a') v.setRange(a - w / 5, b - w / 5);
    else if (key === 'd') v.setRange(a + w / 5, b + w / 5);
    else return;
    ev.preventDefault();
  });

  /* The item of a sheet lane with this global_idx, or -1. */
  function findItem(lane, g) {
    if (!Number.isInteger(g) || lane < 0 || lane >= LANES.length) return -1;
    const lo = IT.off[lane], hi = IT.off[lane + 1];
    const guess = lo + g;   // commands usually sit in global_idx order
    if (guess < hi && IT.gidx[guess] === g) return guess;
    for (let i = lo; i < hi; i++) if (IT.gidx[i] === g) return i;
    return -1;
  }

  // ------------------------------------------------------------------------------ bandwidth
  /* "DMA bandwidth over time", binned again for every window it shows (the rule of
   * analysis.timeline.bandwidth_over_time: each command's bytes spread evenly over its duration,
   * bytes per bucket / bucket width = GB/s), so zooming in shows the bursts. One engine at a time
   * (a selector), one line per core (CDMA: per port), DDR above and L2M below, the chip's peak
   * as a dashed line. */
  const DDR_COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf',
                      '#bcbd22', '#7f7f7f', '#393b79', '#637939'];
  const L2M_COLORS = ['#aec7e8', '#ffbb78', '#98df8a', '#ff9896', '#c5b0d5', '#c49c94', '#f7b6d2', '#9edae5',
                      '#dbdb8d', '#c7c7c7', '#6b6ecf', '#b5cf6b'];
  const BW_BUCKETS = 1000;

  function bandwidthSeries(engine, a, b, W) {
    const w = (b - a) / W, series = new Map();
    LANES.forEach((lane, l) => {
      if (lane.host || lane.engine !== engine) return;
      const name = engine === 'CDMA' ? lane.name : `core ${lane.cores[0]}`;
      const lo = lowerBound(IT.endMax, IT.off[l], IT.off[l + 1], a);
      const hi = firstAtOrAfter(IT.start, IT.off[l], IT.off[l + 1], b);
      for (let i = lo; i < hi; i++) {
        const kind = OPS[IT.op[i]][3], bytes = bytesOf(i);
        if (!kind || !(bytes > 0)) continue;
        const key = name + '\u0000' + kind;
        if (!series.has(key)) series.set(key, {name, kind, bytes: new Float64Array(W)});
        const acc = series.get(key).bytes;
        const s0 = IT.start[i], e0 = IT.end[i];
        if (e0 <= s0) {                               // instantaneous: all at its start
          if (s0 >= a && s0 < b) acc[Math.min(Math.floor((s0 - a) / w), W - 1)] += bytes;
          continue;
        }
        const rate = bytes / (e0 - s0), s = Math.max(s0, a), e = Math.min(e0, b);
        if (e <= s) continue;
        const b0 = Math.min(Math.floor((s - a) / w), W - 1), b1 = Math.min(Math.floor((e - a) / w), W - 1);
        if (b0 === b1) { acc[b0] += rate * (e - s); continue; }
        acc[b0] += rate * (a + (b0 + 1) * w - s);
        for (let k = b0 + 1; k < b1; k++) acc[k] += rate * w;
        acc[b1] += rate * (e - (a + b1 * w));
      }
    });
    const out = [...series.values()];
    for (const sr of out) { sr.gbps = sr.bytes.map((v) => v / w); delete sr.bytes; }
    const num = (n) => Number((/\d+$/.exec(n) || ['0'])[0]);
    return out.sort((p, q) => num(p.name) - num(q.name) || p.name.localeCompare(q.name));
  }

  class BandwidthChart {
    constructor(node, spec) {
      this.node = node; this.spec = spec; this.range = [0, Math.max(SPAN, 1)];
      this.engine = spec.engines.includes('GDMA') ? 'GDMA' : spec.engines[0];
      this.onRange = null;
      const select = el('select', {'aria-label': 'DMA engine'});
      for (const e of spec.engines) select.append(el('option', {value: e}, e));
      select.value = this.engine;
      select.addEventListener('change', () => { this.engine = select.value; this.draw(); });
      node.before(el('div', {class: 'bw-controls'}, el('span', {class: 'label'}, 'Engine'), select));
      this.select = select;
    }
    async draw() {
      const [a, b] = this.range, names = [];
      const series = bandwidthSeries(this.engine, a, b, BW_BUCKETS);
      const kinds = ['DDR', 'L2M'].filter((k) => series.some((sr) => sr.kind === k));
      const x = new Float64Array(BW_BUCKETS), w = (b - a) / BW_BUCKETS;
      for (let k = 0; k < BW_BUCKETS; k++) x[k] = (a + (k + 0.5) * w) / 1e3;
      const data = series.map((sr) => {
        if (!names.includes(sr.name)) names.push(sr.name);
        const n = names.indexOf(sr.name), colours = sr.kind === 'DDR' ? DDR_COLORS : L2M_COLORS;
        return {type: 'scatter', mode: 'lines', x, y: sr.gbps, name: `${esc(sr.name)} ${sr.kind}`,
                yaxis: kinds.indexOf(sr.kind) === 1 ? 'y2' : 'y',
                line: {shape: 'hv', width: 1.2, color: colours[n % colours.length]},
                hovertemplate: `${esc(sr.name)} ${sr.kind}: %{y:.2f} GB/s<extra></extra>`};
      });
      const shapes = [], annotations = [];
      kinds.forEach((k, j) => {
        const peak = this.spec.peaks[k];
        if (!peak) return;
        const yref = j === 0 ? 'y' : 'y2';
        shapes.push({type: 'line', xref: 'paper', x0: 0, x1: 1, yref, y0: peak.gbps, y1: peak.gbps,
                     line: {color: '#b42318', width: 1.2, dash: 'dash'}});
        annotations.push({xref: 'paper', x: 1, xanchor: 'right', yref, y: peak.gbps, yanchor: 'bottom',
                          text: `${peak.label} ${peak.gbps} GB/s`, showarrow: false, font: {size: 11, color: '#b42318'}});
      });
      const width = this.node.clientWidth || 1200;
      const axis = (k) => ({title: {text: `${k} GB/s`}, rangemode: 'tozero', gridcolor: '#e3e7ea',
                            range: this.spec.peaks[k] ? [0, Math.max(this.spec.peaks[k].gbps * 1.08,
                              ...series.filter((sr) => sr.kind === k).map((sr) => Math.max(...sr.gbps) * 1.05))] : undefined});
      const layout = {height: 200 + 160 * Math.max(kinds.length, 1), hovermode: 'x', plot_bgcolor: '#fafbfc',
                      margin: {l: 60, r: width < 600 ? 6 : 20, t: 10, b: 50}, font: {size: 12},
                      legend: {orientation: 'h', x: 0, xanchor: 'left', y: 1.02, yanchor: 'bottom'},
                      shapes, annotations, uirevision: 'bandwidth',
                      xaxis: {range: [a / 1e3, b / 1e3], title: {text: 'time since first event'}, gridcolor: '#e3e7ea',
                              ...timeTicks(a, b, Math.max(3, Math.floor(width / 130)))}};
      if (kinds.length === 2) {
        layout.yaxis = {...axis(kinds[0]), domain: [0.55, 1]};
        layout.yaxis2 = {...axis(kinds[1]), domain: [0, 0.45]};
        layout.xaxis.anchor = 'y2';
      } else {
        layout.yaxis = axis(kinds[0] || 'DDR');
      }
      this.applying = true;
      try {
        await Plotly.react(this.node, data, layout, {displaylogo: false, responsive: true});
      } finally { this.applying = false; }
      if (!this.wired) {
        this.wired = true;
        this.node.on('plotly_relayout', (ev) => {
          if (this.applying || !this.onRange) return;
          if (ev['xaxis.autorange']) this.onRange(0, Math.max(SPAN, 1));
          else if ('xaxis.range[0]' in ev) this.onRange(ev['xaxis.range[0]'] * 1e3, ev['xaxis.range[1]'] * 1e3);
        });
      }
      this.node.dataset.distinct = String(new Set(series.flatMap((sr) => Array.from(sr.gbps))).size);
      return series;
    }
  }

  // ------------------------------------------------------------------------------ charts & tabs
  const dynamicCharts = {};
  async function drawChart(id) {
    const spec = DATA.charts[id];
    const node = document.getElementById('chart-' + id);
    if (!spec || !node) return;
    if (spec.empty) {
      node.classList.add('empty');
      node.textContent = spec.empty;
      return;
    }
    if (spec.dynamic === 'bandwidth') {
      await itemsReady;
      dynamicCharts[id] = new BandwidthChart(node, spec);
      await dynamicCharts[id].draw();
      return;
    }
    await Plotly.newPlot(node, spec.data, fitLegend(spec.layout, spec.data, node.clientWidth || 600),
                         {displaylogo: false, responsive: true});
  }

  /* Room above the plot for a legend on top (charts.LEGEND_ON_TOP): as many rows as the width
   * needs, so a narrow window gets a taller chart instead of a legend over the plot. */
  function fitLegend(layout, data, width) {
    const legend = layout.legend;
    if (layout.showlegend === false || !legend || legend.yanchor !== 'bottom') return layout;
    const names = data.filter((t) => t.showlegend !== false && t.name).map((t) => String(t.name));
    const widest = Math.max(60, ...names.map((n) => 40 + 7 * n.length));
    const perRow = Math.max(1, Math.floor((width - 20) / widest));
    const room = 12 + 21 * Math.ceil(names.length / perRow);
    const margin = {...(layout.margin || {}), t: room};
    return {...layout, margin, height: (layout.height || 340) + room};
  }

  // ------------------------------------------------------------------------------ tables
  /* The Tables tab: every profile table from the rg-tables block (gzip'd JSON, column by column;
   * reportgen.writers.html.read_tables() is the Python twin). Numbers keep their stored value for
   * sorting and are only formatted for display, with the decimals the writer chose per column. */
  let tablesReady = null;
  function loadTables() {
    if (!tablesReady) {
      tablesReady = (async () => {
        const raw = await gunzip(b64ToBytes(takeBlock('rg-tables')));
        return JSON.parse(new TextDecoder().decode(raw));
      })();
    }
    return tablesReady;
  }

  const NUMBER_FORMATS = new Map();
  function fmtCell(v, col) {
    if (v === null || v === undefined) return null;
    if (col.kind === 'text') return String(v);
    if (col.kind === 'bigint') return BigInt(v).toLocaleString('en-US');   // digits sent as text
    const d = col.decimals;
    if (!NUMBER_FORMATS.has(d)) {
      NUMBER_FORMATS.set(d, new Intl.NumberFormat('en-US', {minimumFractionDigits: d, maximumFractionDigits: d}));
    }
    const f = NUMBER_FORMATS.get(d);
    if (col.kind === 'time') return f.format(v * col.factor);      // one unit per column, named in its header
    return col.kind === 'frac' ? f.format(v * 100) + '%' : f.format(v);
  }
  const COLLATOR = new Intl.Collator('en', {numeric: true});

  class DataTable {
    constructor(card, head, body) {
      this.card = card; this.head = head; this.cols = head.columns; this.values = body.columns;
      this.n = head.embedded;
      this.order = null;          // null = the table's own order
      this.sortCol = -1; this.desc = false;
      this.limit = DATA.table_rows_shown;
      this.status = card.querySelector('.table-status');
      this.filter = '';
      this.textCols = this.cols.map((c, j) => (c.kind === 'text' ? j : -1)).filter((j) => j >= 0);
      if (this.textCols.length) {
        const box = el('input', {type: 'search', class: 'table-filter', 'aria-label': 'filter rows',
                                 placeholder: 'filter rows: text in ' + this.textCols.map((j) => this.cols[j].name).join(' / ')});
        box.addEventListener('input', () => { this.filter = box.value.trim().toLowerCase(); this.limit = DATA.table_rows_shown; this.draw(); });
        this.status.before(box);
      }
      const table = el('table', {class: 'grid data'});
      const tr = el('tr');
      this.ths = this.cols.map((c, j) => {
        const th = el('th', {class: c.kind === 'text' ? 'text sortable' : 'sortable', 'aria-sort': 'none',
                             title: 'sort by ' + c.name}, c.name, el('span', {class: 'arrow'}));
        th.tabIndex = 0;
        th.addEventListener('click', () => this.sortBy(j));
        th.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); this.sortBy(j); } });
        tr.append(th);
        return th;
      });
      table.append(el('thead', {}, tr));
      this.tbody = el('tbody');
      table.append(this.tbody);
      card.querySelector('.table-wrap').append(table);
      this.draw();
    }

    /* First click: numbers largest first, text A to Z; the next click reverses. Missing values
     * stay last; equal values keep the table's order. */
    sortBy(j) {
      if (this.sortCol === j) this.desc = !this.desc;
      else { this.sortCol = j; this.desc = this.cols[j].kind !== 'text'; }
      const kind = this.cols[j].kind, text = kind === 'text', sign = this.desc ? -1 : 1;
      const v = kind === 'bigint' ? this.values[j].map((s) => (s === null ? null : BigInt(s))) : this.values[j];
      const idx = new Array(this.n);
      for (let i = 0; i < this.n; i++) idx[i] = i;
      idx.sort((a, b) => {
        const x = v[a], y = v[b];
        if (x === null || y === null) return x === null ? (y === null ? a - b : 1) : -1;
        const c = text ? COLLATOR.compare(x, y) : kind === 'bigint' ? (x < y ? -1 : x > y ? 1 : 0) : x - y;
        return c ? sign * c : a - b;
      });
      this.order = idx;
      this.ths.forEach((th, k) => {
        th.setAttribute('aria-sort', k === j ? (this.desc ? 'descending' : 'ascending') : 'none');
        th.querySelector('.arrow').textContent = k === j ? (this.desc ? ' ▼' : ' ▲') : '';
      });
      this.draw();
    }

    /* Row indices in display order (sorted or not) that contain the filter text in a text
     * column; null = every row in the table's order. */
    rows() {
      if (!this.filter) return this.order;
      if (!this.lower) this.lower = this.textCols.map((j) => this.values[j].map((v) => (v === null ? '' : v.toLowerCase())));
      const out = [];
      for (let r = 0; r < this.n; r++) {
        const i = this.order ? this.order[r] : r;
        if (this.lower.some((col) => col[i].includes(this.filter))) out.push(i);
      }
      return out;
    }

    draw() {
      const rows = this.rows(), total = rows ? rows.length : this.n;
      const shown = Math.min(this.limit, total), frag = document.createDocumentFragment();
      for (let r = 0; r < shown; r++) {
        const i = rows ? rows[r] : r;
        const tr = document.createElement('tr');
        for (let j = 0; j < this.cols.length; j++) {
          const td = document.createElement('td');
          const text = fmtCell(this.values[j][i], this.cols[j]);
          if (text === null) { td.textContent = 'n/a'; td.className = this.cols[j].kind === 'text' ? 'na text' : 'na'; }
          else {
            td.textContent = text;       // a text node: markup in names shows as typed
            if (this.cols[j].kind === 'text') td.className = 'text';
          }
          tr.append(td);
        }
        frag.append(tr);
      }
      this.tbody.replaceChildren(frag);
      const head = this.head, parts = [];
      parts.push(`Showing ${group3(shown)} of ` +
        (this.filter ? `${group3(total)} rows containing "${this.filter}" (${group3(head.rows)} in the table), `
          : `${group3(head.rows)} rows, `) +
        (this.order ? `sorted by ${this.cols[this.sortCol].name} ${this.desc ? '(largest first)' : '(smallest first)'}`
          : 'in the table\'s own order') + '.');
      if (head.embedded < head.rows) {
        parts.push(`This page holds the first ${group3(head.embedded)} rows (sorting covers those); ` +
                   'the workbook and CSV have them all.');
      }
      this.status.replaceChildren(parts.join(' '));
      if (shown < total) {
        const more = Math.min(DATA.table_rows_shown, total - shown);
        this.status.append(' ', el('button', {type: 'button', class: 'more',
          onclick: () => { this.limit += DATA.table_rows_shown; this.draw(); }}, `show ${group3(more)} more`));
      }
      this.card.dataset.shown = String(shown);
    }
  }

  /* Operators by Stack: a click on a row opens its call tree below it, the rows of Call Stacks
   * with its Stack Id (analysis/call_stacks.py): frames outermost first, with their calls and
   * CPU time where the trace has them; a second click closes it. Open rows stay open across
   * sorting and filtering. */
  class StackTable extends DataTable {
    constructor(card, head, body, frames) {
      super(card, head, body);
      this.frames = frames;
      this.open = new Set();
      this.card.classList.add('stack-table');
      this.draw();     // DataTable's constructor drew the rows before the frames were known
      this.tbody.addEventListener('click', (ev) => {
        const tr = ev.target.closest('tr[data-stack]');
        if (!tr) return;
        const id = tr.dataset.stack;
        if (this.open.has(id)) this.open.delete(id); else this.open.add(id);
        this.draw();
      });
    }
    /* stack id -> indices of its frame rows (built once) */
    index() {
      if (!this.byStack) {
        this.byStack = new Map();
        const ids = this.frames.col['Stack Id'];
        ids.forEach((v, i) => { if (v !== null) (this.byStack.get(String(v)) || this.byStack.set(String(v), []).get(String(v))).push(i); });
      }
      return this.byStack;
    }
    draw() {
      if (!this.frames) { super.draw(); return; }
      super.draw();
      const idCol = this.cols.findIndex((c) => c.stored_name === 'Stack Id');
      const rows = this.rows();
      Array.from(this.tbody.children).forEach((tr, r) => {
        const v = this.values[idCol][rows ? rows[r] : r];
        if (v === null) return;
        const id = String(v);
        tr.dataset.stack = id;
        tr.classList.add('has-stack');
        tr.setAttribute('aria-expanded', this.open.has(id) ? 'true' : 'false');
        if (this.open.has(id)) tr.after(this.tree(id));
      });
    }
    /* The call tree row of stack ``id``: a small table of its frames. */
    tree(id) {
      const f = this.frames, show = ['Level', 'Frame', 'Frame Calls', 'Frame CPU total (us)'];
      const specs = show.map((name) => f.head.columns.find((c) => c.stored_name === name));
      const table = el('table', {class: 'grid call-tree'});
      table.append(el('thead', {}, el('tr', {}, ...specs.map((c) => el('th', {class: c.kind === 'text' ? 'text' : ''}, c.name)))));
      const body = el('tbody'), mine = this.index().get(id) || [];
      if (!mine.length) {      // past the Call Stacks rows this page holds
        body.append(el('tr', {}, el('td', {colspan: String(specs.length), class: 'na text'},
          `Stack ${id}: its frames are not in this page (it holds the first ${group3(f.head.embedded)} ` +
          'Call Stacks rows); the workbook and tables/Call_Stacks.csv have them.')));
      }
      for (const i of mine) {
        body.append(el('tr', {}, ...specs.map((c) => {
          const text = fmtCell(f.col[c.stored_name][i], c);
          const td = el('td', {class: c.kind === 'text' ? 'text' : ''});
          td.textContent = text === null ? 'n/a' : text;
          if (c.stored_name === 'Frame') td.style.paddingLeft = (f.col.Level[i] - 1) * 1.2 + 'em';
          return td;
        })));
      }
      table.append(body);
      return el('tr', {class: 'stack-frames', 'data-frames-of': id}, el('td', {colspan: String(this.cols.length)}, table));
    }
  }

  const tables = {};
  async function drawTables() {
    const bodies = await loadTables();
    const stackK = DATA.tables.findIndex((h) => h.name === 'Call Stacks');
    DATA.tables.forEach((head, k) => {
      if (tables[head.id]) return;
      const card = document.getElementById('table-' + head.id);
      if (head.name === 'Operators by Stack' && stackK >= 0) {
        const fh = DATA.tables[stackK], col = {};
        fh.columns.forEach((c, j) => { col[c.stored_name] = bodies[stackK].columns[j]; });
        tables[head.id] = new StackTable(card, head, bodies[k], {head: fh, col});
      } else {
        tables[head.id] = new DataTable(card, head, bodies[k]);
      }
    });
    for (const a of document.querySelectorAll('.toc a[data-target]')) {
      a.addEventListener('click', (ev) => {
        ev.preventDefault();
        document.getElementById('table-' + a.dataset.target).scrollIntoView({behavior: 'smooth'});
      });
    }
  }

  // ------------------------------------------------------------------------------ layers
  /* The layer view of a bmodel capture (reportgen.writers.html.layers): per core, layer-group and
   * layer lanes on the timelines, and the Layers tab's table, linked both ways with its timeline.
   * A layer bar carries its record in gidx and its command count in cmd; every item carries its
   * layer + 1 in IT.layer (0: none). The table's values are Profile.layer_view's, as in
   * summary.json "layers"; hovers print them with the table's own formats. */
  const LAYER_DATA = DATA.layers || null;
  const timelineHooks = {shapes: [], wired: []};   // called by Timeline.layout() and wire()
  let layerTable = null;       // {head, body, col / spec: stored column name -> values / format}
  let layerTableView = null;   // the Layers tab's table
  let layerBars = null;        // layer -> item indices of its bars (built on first use)
  let selectedLayer = -1;

  const layerTableReady = LAYER_DATA ? (async () => {
    const raw = await gunzip(b64ToBytes(takeBlock('rg-layers')));
    const body = JSON.parse(new TextDecoder().decode(raw)), col = {}, spec = {};
    LAYER_DATA.table.columns.forEach((c, j) => { col[c.stored_name] = body.columns[j]; spec[c.stored_name] = c; });
    layerTable = {head: LAYER_DATA.table, body, col, spec};
    return layerTable;
  })() : null;

  /* A cell of layer k as the table shows it ('n/a' when missing), escaped for a hover. */
  function layerCell(k, name) {
    if (!layerTable) return '…';
    return esc(fmtCell(layerTable.col[name][k], layerTable.spec[name]) ?? 'n/a');
  }
  function layerLabel(k) {
    if (!layerTable) return '…';
    if (k < 0) return esc(layerTable.col.name[layerTable.head.rows - 1]);   // the unattributed row
    const line = layerTable.col.file_line[k], group = layerTable.col.group_line[k];
    return `${esc(layerTable.col.name[k])} · line ${line}` + (group === null ? '' : ` (group line ${group})`);
  }
  function layerIndex() {
    if (layerBars) return layerBars;
    layerBars = new Map();
    LANES.forEach((lane, l) => {
      if (lane.layer !== 'layers') return;
      for (let i = IT.off[l]; i < IT.off[l + 1]; i++) {
        const k = IT.layer[i] - 1;
        if (!layerBars.has(k)) layerBars.set(k, []);
        layerBars.get(k).push(i);
      }
    });
    return layerBars;
  }
  let membersOfGroup = null;
  /* group line -> "Op · line N" of its member layers (built once the table is in). */
  function groupMembers() {
    if (membersOfGroup || !layerTable) return membersOfGroup || new Map();
    membersOfGroup = new Map();
    layerTable.col.group_line.forEach((g, k) => {
      if (g === null) return;
      if (!membersOfGroup.has(g)) membersOfGroup.set(g, []);
      membersOfGroup.get(g).push(`${esc(layerTable.col.name[k])} · line ${layerTable.col.file_line[k]}`);
    });
    return membersOfGroup;
  }
  /* [first start, last end] of layer k's bars over every core, or null (no commands). */
  function layerExtent(k) {
    const bars = layerIndex().get(k);
    if (!bars) return null;
    let a = Infinity, b = -Infinity;
    for (const i of bars) { a = Math.min(a, IT.start[i]); b = Math.max(b, IT.end[i]); }
    return [a, b];
  }

  function layerHover(i, lane) {
    const s = IT.start[i], e = IT.end[i], when = `start ${fmtDur(s)} · duration ${fmtDur(e - s)}`;
    if (lane.layer === 'groups') {
      const g = IT.gidx[i], members = groupMembers().get(g) || [];
      return [`<b>Group · line ${g}</b>  core ${lane.cores[0]}`, when,
        `${group3(IT.cmd[i])} records of its ${group3(members.length)} members on this core`,
        ...members.slice(0, 8), ...(members.length > 8 ? [`… ${members.length - 8} more`] : [])].join('<br>');
    }
    const k = IT.layer[i] - 1, c = (name) => layerCell(k, name);
    return [`<b>${layerLabel(k)}</b>`,
      `core ${lane.cores[0]} · record ${IT.gidx[i]} · ${group3(IT.cmd[i])} commands · ${when}`,
      `layer (all cores): rank ${c('rank')} · busy ${c('busy_ns')} ns · share ${c('time_share')}`,
      `TIU ${c('tiu_cmds')} cmds, busy ${c('tiu_busy_ns')} ns · uArch rate ${c('uarch_rate')}`,
      `GDMA ${c('gdma_cmds')} cmds, busy ${c('gdma_busy_ns')} ns · ${c('gdma_bytes')} bytes · ${c('gdma_gbps')} GB/s`,
      `${c('dtype')} · ${c('in_shape')} → ${c('out_shape')}`,
      '<i>click: its row in the Layers table</i>'].join('<br>');
  }

  /* The selected layer's bars outlined in every timeline. */
  timelineHooks.shapes.push((rows) => {
    if (selectedLayer < 0 || !IT.layer) return [];
    const out = [];
    for (const i of layerIndex().get(selectedLayer) || []) {
      const r = rows.indexOf(laneOf(i));
      if (r >= 0) {
        out.push({type: 'rect', xref: 'x', yref: 'y', x0: IT.start[i] / 1e3, x1: IT.end[i] / 1e3, y0: r - 0.5,
                  y1: r + 0.5, line: {color: '#d50000', width: 2}, fillcolor: 'rgba(213, 0, 0, 0.1)'});
      }
    }
    return out;
  });
  /* Framework traces: clicking a device slice links it to the host slice that launched it (a
   * connector and outlines in every timeline showing both lanes, and a line under the plot). */
  let launchPair = null;        // [host item, device item]
  timelineHooks.wired.push((view) => {
    if (PMU) return;
    view.plot.on('plotly_click', (ev) => {
      const i = ev && ev.points && ev.points[0] ? ev.points[0].customdata : undefined;
      if (typeof i !== 'number' || !IT.launch || !(IT.launch[i] > 0)) return;
      const h = IT.launch[i] - 1;
      launchPair = [h, i];
      const name = (j) => OPS[IT.op[j]][1] ?? '(unnamed)';
      const text = `launch: ${name(h)} (${LANES[laneOf(h)].name}, start ${fmtDur(IT.start[h])}) → ` +
        `${name(i)} (${LANES[laneOf(i)].name}, start ${fmtDur(IT.start[i])}), ` +
        `launch delay ${fmtDur(IT.start[i] - IT.start[h])}`;
      for (const v of Object.values(views)) {
        v.dirty = true;
        if (v.visible()) v.schedule();
        let line = v.host.querySelector('.launch-link');
        if (!line) { line = el('div', {class: 'launch-link'}); v.host.append(line); }
        line.textContent = text;
      }
    });
  });
  timelineHooks.shapes.push((rows) => {
    if (!launchPair) return [];
    const [h, d] = launchPair, rh = rows.indexOf(laneOf(h)), rd = rows.indexOf(laneOf(d));
    const out = [];
    for (const [i, r] of [[h, rh], [d, rd]]) {
      if (r >= 0) out.push({type: 'rect', xref: 'x', yref: 'y', x0: IT.start[i] / 1e3, x1: IT.end[i] / 1e3,
                            y0: r - 0.5, y1: r + 0.5, line: {color: '#6a1b9a', width: 2},
                            fillcolor: 'rgba(106, 27, 154, 0.12)', name: 'launch'});
    }
    if (rh >= 0 && rd >= 0) {
      out.push({type: 'line', xref: 'x', yref: 'y', x0: IT.start[h] / 1e3, y0: rh, x1: IT.start[d] / 1e3,
                y1: rd, line: {color: '#6a1b9a', width: 2, dash: 'dot'}, name: 'launch-flow'});
    }
    return out;
  });

  /* Clicking a layer bar selects its layer and shows its row. */
  timelineHooks.wired.push((view) => {
    if (!LAYER_DATA) return;
    view.plot.on('plotly_click', (ev) => {
      const i = ev && ev.points && ev.points[0] ? ev.points[0].customdata : undefined;
      if (typeof i === 'number' && LANES[laneOf(i)].layer === 'layers') selectLayer(IT.layer[i] - 1, {row: true});
    });
  });

  /* Select layer k everywhere; {row: true} brings its table row into view, {zoom: true} zooms
   * the Layers timeline to the layer's span and scrolls its first lane into view. */
  async function selectLayer(k, how = {}) {
    selectedLayer = k;
    if (layerTableView) layerTableView.mark(k, !!how.row);
    const zoomed = how.zoom ? views[LAYER_DATA.view] : null;
    for (const v of Object.values(views)) {
      v.dirty = true;
      if (v !== zoomed && v.visible()) v.schedule();
    }
    const ext = layerExtent(k);
    if (!zoomed || !ext) return null;
    if (zoomed.engineOff.has('Layers')) {
      zoomed.engineOff.delete('Layers');
      const box = zoomed.host.querySelector('input[data-engine="Layers"]');
      if (box) box.checked = true;
    }
    const pad = Math.max((ext[1] - ext[0]) * 0.05, 20);
    const result = await zoomed.setRange(ext[0] - pad, ext[1] + pad);
    zoomed.revealLane(laneOf(layerIndex().get(k)[0]));
    return result;
  }

  /* The Tables tab's sortable, filterable table with rows that select (and zoom to) a layer. */
  class LayerTable extends DataTable {
    constructor(card, head, body) {
      super(card, head, body);
      this.tbody.addEventListener('click', (ev) => {
        const tr = ev.target.closest('tr[data-layer]');
        if (tr) selectLayer(Number(tr.dataset.layer), {zoom: true});
      });
    }
    draw() {
      super.draw();
      const rows = this.rows();
      Array.from(this.tbody.children).forEach((tr, r) => {
        const k = rows ? rows[r] : r;
        tr.dataset.layer = String(k);
        tr.classList.toggle('selected', k === selectedLayer);
      });
    }
    /* Mark row k; with scroll, draw it first if it is filtered out or beyond the rows shown. */
    mark(k, scroll) {
      let tr = this.tbody.querySelector(`tr[data-layer="${k}"]`);
      if (!tr && scroll) {
        let rows = this.rows();
        if (rows && !rows.includes(k)) {
          this.filter = '';
          const box = this.card.querySelector('input.table-filter');
          if (box) box.value = '';
          rows = this.rows();
        }
        this.limit = Math.max(this.limit, (rows ? rows.indexOf(k) : k) + 1);
        this.draw();
        tr = this.tbody.querySelector(`tr[data-layer="${k}"]`);
      }
      for (const row of this.tbody.querySelectorAll('tr.selected')) row.classList.remove('selected');
      if (tr) {
        tr.classList.add('selected');
        if (scroll) tr.scrollIntoView({block: 'nearest'});
      }
    }
  }
  async function buildLayerTable() {
    if (!layerTableView) {
      const t = await layerTableReady;
      layerTableView = layerTableView || new LayerTable(document.getElementById('layer-table'), t.head, t.body);
    }
    return layerTableView;
  }
  /* Test hooks (tests/test_html_layers_browser.py). */
  const layerApi = {
    table: buildLayerTable,
    select: (k) => selectLayer(k, {zoom: true}),
    extent: (k) => layerExtent(k),
    bars: (k) => layerIndex().get(k) || [],
    get selected() { return selectedLayer; },
  };

  const panels = Object.create(null);   // a "#__proto__" fragment names no tab
  async function showTab(id) {
    for (const [pid, p] of Object.entries(panels)) {
      p.panel.hidden = pid !== id;
      p.button.classList.toggle('active', pid === id);
      p.button.setAttribute('aria-selected', pid === id ? 'true' : 'false');
    }
    const p = panels[id];
    if (!p) return null;
    if (!p.started) {
      p.started = (async () => {
        for (const c of p.charts) await drawChart(c);
        if (p.tables) await drawTables();
        if (p.views.length) await itemsReady;
        for (const v of p.views) {
          const spec = DATA.views.find((s) => s.id === v);
          views[v] = new Timeline(spec, document.getElementById('view-' + v));
        }
        if (p.link) await p.link();
      })();
    }
    await p.started;
    const results = [];
    for (const v of p.views) results.push(views[v].dirty ? await views[v].schedule() : views[v].last);
    for (const node of p.panel.querySelectorAll('.js-plotly-plot')) Plotly.Plots.resize(node);
    p.panel.dataset.rendered = '1';
    return results;
  }

  /* The bandwidth chart follows the All-cores timeline (binned again for its window) and
   * zooming the chart zooms the timeline. */
  function linkBandwidth() {
    const tl = views.all, bw = dynamicCharts.bandwidth;
    if (!tl || !bw) return;
    tl.linked.push((a, b) => {
      if (bw.range[0] === a && bw.range[1] === b) return;
      bw.range = [a, b];
      bw.pending = bw.draw();
    });
    bw.onRange = (a, b) => tl.setRange(a, b);
  }

  function setupTabs() {
    const nav = document.getElementById('tabs');
    for (const tab of DATA.tabs) {
      const panel = document.getElementById('panel-' + tab.id);
      const button = el('button', {type: 'button', role: 'tab', id: 'tab-' + tab.id}, tab.title);
      button.addEventListener('click', () => { history.replaceState(null, '', '#' + tab.id); showTab(tab.id); });
      nav.append(button);
      panels[tab.id] = {panel, button, charts: tab.charts, views: tab.views, tables: !!tab.tables,
                        link: tab.id === 'compare' ? linkBandwidth : tab.layer_table ? buildLayerTable : null};
    }
    nav.hidden = false;
  }

  // ------------------------------------------------------------------------------ start-up
  function fail(err) {
    console.error(err);
    document.body.dataset.ready = 'error';
    document.title = 'ERROR ' + (err && err.message ? err.message : err);
    const box = document.getElementById('rg-error');
    box.textContent = 'This report could not be drawn: ' + (err && err.message ? err.message : err) +
      '. It needs a current browser (Chrome, Edge, Firefox or Safari from 2023 on).';
    box.hidden = false;
  }

  /* Overview first (it needs plotly.js only), so the page is usable as soon as possible; the
   * items are inflated meanwhile and decoded right after, before any timeline is drawn. */
  let itemsReady = null;
  async function main() {
    if (typeof DecompressionStream === 'undefined') throw new Error('this browser has no DecompressionStream');
    const plotlyReady = loadPlotly();
    let firstPaint;
    const painted = new Promise((resolve) => { firstPaint = resolve; });
    // the items wait for the first tab to paint: inflating and decoding them takes the main
    // thread, which plotly.js and the overview need first
    itemsReady = (async () => {
      await painted;
      const n = +document.getElementById('rg-items').dataset.bytes;
      const raw = await gunzip(b7ToBytes(takeBlock('rg-items'), n));
      timing.inflate_ms = performance.now();
      IT = decodeItems(DATA.payload, raw);
      const lazy = document.getElementById('rg-lazy');    // writers/html/lazy.py: why.path, why.waits, ...
      if (lazy) {
        const n = +lazy.dataset.bytes;
        mergeInto(DATA, JSON.parse(new TextDecoder().decode(await gunzip(b7ToBytes(takeBlock('rg-lazy'), n)))));
      }
      OVERVIEW = b64ToBytes(DATA.overview.b64);
      timing.decode_ms = performance.now();
    })();
    await plotlyReady;
    timing.plotly_ms = performance.now();
    setupTabs();
    const wanted = panels[location.hash.slice(1)] ? location.hash.slice(1) : 'overview';
    if (panels[wanted].views.length) firstPaint();   // a timeline tab needs the items first
    await showTab(wanted);
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    timing.ready_ms = performance.now();
    document.body.dataset.ready = '1';
    firstPaint();
    await itemsReady;
  }

  /* Test and scripting hooks (used by tests/test_html_browser.py). */
  window.__report = {
    timing,
    views,
    data: DATA,
    decode: {b64ToBytes, b7ToBytes, gunzip, unshuffle, CTOR},   // for templates/diagnosis.js
    get items() { return IT; },
    show: showTab,
    zoom: async (id, a, b) => { await showTab(DATA.tabs.find((t) => t.views.includes(id)).id); return views[id].setRange(a, b); },
    reset: (id) => views[id].reset(),
    setEngine: (id, engine, on) => {
      const v = views[id];
      if (on) v.engineOff.delete(engine); else v.engineOff.add(engine);
      const box = v.host.querySelector(`input[data-engine="${CSS.escape(engine)}"]`);
      if (box) box.checked = on;
      return v.schedule();
    },
    setTypeOff: (name, off) => { TYPES.forEach((t, k) => { if (t.name === name) setTypeOff(k, off); }); },
    setWaiting: (shown) => {
      for (const k of WAITING) { if (shown) typeOff.delete(k); else typeOff.add(k); }
      for (const f of typeListeners) f();
    },
    tables,
    layers: layerApi,
    findItem: (sheet, g) => findItem(LANES.findIndex((l) => l.name === sheet), g),
    hoverText: (i) => hoverText(i),
    hooks: timelineHooks,   // templates/why.js: shapes and click handlers on every timeline
    laneOf: (i) => laneOf(i),
    jump: (id, sheet, g) => views[id].jumpTo(window.__report.findItem(sheet, g)),
    search: (id, text) => {
      const v = views[id];
      v.searchBox.value = text; v.matches = null;
      return v.step(1).then(() => ({matches: v.matches.length, note: v.searchNote.textContent,
                                    highlight: v.highlight}));
    },
    get bandwidth() { return dynamicCharts.bandwidth; },
  };
  window.__report.ready = main().catch(fail);
})();
