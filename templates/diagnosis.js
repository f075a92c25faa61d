/* reportgen result.html: the Diagnosis tab's links and the TIU uArch rate over time per core.
 *
 * Runs after report.js and uses its hooks (window.__report: data, decoders, zoom, views; the
 * 'rg-range' event every timeline sends after drawing a window). Kernel rows open a timeline
 * zoomed to the call. Under each core's timeline a chart shows the core's TIU uArch rate
 * re-binned to the visible window: per bucket, Σ Alg Ops / Σ uArch Ops of the modelled TIU
 * commands, each command's ops spread evenly over its duration (zero-length ones count whole
 * in the bucket of their start). uarchBins() mirrors reportgen.analysis.uarch_timeline.rate_bins;
 * keep them in step. When the profile has too many distinct ops for the exact block, the block
 * holds fine bins of each core (docs/metrics.md) and the same rule re-bins them.
 */
(function () {
  'use strict';

  const R = window.__report;
  const D = R.data.diagnosis;
  if (!D) return;

  // ------------------------------------------------------------------------------ kernel links
  function openScope(view, a, b) {   // the timeline of ``view`` zoomed to [a, b) ns, padded
    const pad = Math.max((b - a) * 0.05, 1000);
    const tab = R.data.tabs.find((t) => t.views.includes(view));
    if (!tab) return null;
    history.replaceState(null, '', '#' + tab.id);
    return R.zoom(view, a - pad, b + pad);
  }
  function openRow(row) {
    return openScope(row.dataset.view, Number(row.dataset.a), Number(row.dataset.b));
  }

  /* Draw a chart below a core's timeline showing [a, b) ns; zooming the chart zooms the timeline
   * (the timeline's own zoom redraws the chart through 'rg-range'; ``syncing`` stops the echo). */
  async function linkedReact(entry, view, a, b, traces, layout) {
    entry.syncing = true;
    try {
      await Plotly.react(entry.node, traces, layout, {displaylogo: false, responsive: true});
    } finally {
      entry.syncing = false;
    }
    entry.node.dataset.range = `${a},${b}`;
    if (!entry.wired) {
      entry.wired = true;
      entry.node.on('plotly_relayout', (ev) => {
        if (entry.syncing || !('xaxis.range[0]' in ev)) return;
        R.views[view].setRange(ev['xaxis.range[0]'] * 1e3, ev['xaxis.range[1]'] * 1e3);
      });
    }
  }
  R.linked = {openScope, react: linkedReact};
  for (const row of document.querySelectorAll('#panel-diagnosis tr[data-view]')) {
    row.addEventListener('click', () => openRow(row));
    row.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') { ev.preventDefault(); openRow(row); } });
  }

  // ------------------------------------------------------------------------------ uArch rate
  /* core -> {head, start, end, endMax, lo, hi, alg, uarch}: the spans [start[i], end[i]) for i in
   * [lo, hi) and their ops at alg[i - lo], uarch[i - lo]. Exact block: the items of the core's TIU
   * lane and each one's (Alg Ops, uArch Ops) pair. Fine-bin block: the fine bins of the core's
   * extent, each one a span holding its Σ Alg Ops and Σ uArch Ops. */
  let series = null;
  function fineBins(head, col) {
    const f = head.fine, alg = col(f.alg), uarch = col(f.uarch), n = alg.length, w = (f.hi - f.lo) / n;
    const start = new Float64Array(n), end = new Float64Array(n);
    for (let j = 0; j < n; j++) { start[j] = f.lo + j * w; end[j] = f.lo + (j + 1) * w; }
    return {head, start, end, endMax: end, lo: 0, hi: n, alg: Float64Array.from(alg), uarch: Float64Array.from(uarch)};
  }
  function commandOps(head, col, TA, TU) {
    const IT = R.items, codes = col(head.codes), lo = IT.off[head.lane], hi = IT.off[head.lane + 1];
    const alg = new Float64Array(hi - lo), uarch = new Float64Array(hi - lo);
    for (let i = 0; i < hi - lo; i++) {
      if (codes[i] > 0) { alg[i] = TA[codes[i] - 1]; uarch[i] = TU[codes[i] - 1]; }
    }
    return {head, start: IT.start, end: IT.end, endMax: IT.endMax, lo, hi, alg, uarch};
  }
  async function loadSeries() {
    if (series) return series;
    const node = document.getElementById('rg-diag-urate');
    const raw = await R.decode.gunzip(R.decode.b7ToBytes(node.textContent, +node.dataset.bytes));
    node.textContent = '';
    const col = (c) => R.decode.unshuffle(raw, c.offset, c.n, R.decode.CTOR[c.dtype]);
    const pairs = D.urate.pairs, TA = pairs && col(pairs.alg), TU = pairs && col(pairs.uarch);
    series = new Map();
    for (const head of D.urate.cores) {
      series.set(head.core, head.fine ? fineBins(head, col) : commandOps(head, col, TA, TU));
    }
    return series;
  }

  function firstIndex(arr, lo, hi, x) {   // first i in [lo, hi) with arr[i] >= x
    while (lo < hi) { const mid = (lo + hi) >> 1; if (arr[mid] >= x) hi = mid; else lo = mid + 1; }
    return lo;
  }

  /* Σ Alg Ops and Σ uArch Ops per bucket of W equal buckets of [a, b) (spans without ops add 0). */
  function uarchBins(c, a, b, W) {
    const w = (b - a) / W, A = new Float64Array(W), U = new Float64Array(W);
    const lo = firstIndex(c.endMax, c.lo, c.hi, a), hi = firstIndex(c.start, c.lo, c.hi, b);
    for (let i = lo; i < hi; i++) {
      const j = i - c.lo;
      if (c.uarch[j] === 0 && c.alg[j] === 0) continue;
      const s0 = c.start[i], e0 = c.end[i], d = e0 - s0;
      if (d <= 0) {
        if (s0 >= a && s0 < b) { const k = Math.min(Math.floor((s0 - a) / w), W - 1); A[k] += c.alg[j]; U[k] += c.uarch[j]; }
        continue;
      }
      const s = Math.max(s0, a), e = Math.min(e0, b);
      if (e <= s) continue;
      const da = c.alg[j] / d, du = c.uarch[j] / d;
      const b0 = Math.min(Math.floor((s - a) / w), W - 1), b1 = Math.min(Math.floor((e - a) / w), W - 1);
      if (b0 === b1) { A[b0] += da * (e - s); U[b0] += du * (e - s); continue; }
      A[b0] += da * (a + (b0 + 1) * w - s); U[b0] += du * (a + (b0 + 1) * w - s);
      A[b1] += da * (e - (a + b1 * w)); U[b1] += du * (e - (a + b1 * w));
      for (let k = b0 + 1; k < b1; k++) { A[k] += da * w; U[k] += du * w; }
    }
    return {A, U, w};
  }

  const charts = new Map();       // view id -> {node, syncing}
  function chartFor(view, core) {
    if (charts.has(view)) return charts.get(view);
    const panel = document.getElementById('panel-' + view);
    const head = series.get(core).head;
    const node = document.createElement('div');
    node.className = 'chart';
    node.id = 'urate-' + view;
    const card = document.createElement('div');
    card.className = 'card';
    const h2 = document.createElement('h2');
    h2.textContent = 'TIU uArch rate over time';
    const note = document.createElement('p');
    note.className = 'note';
    note.textContent = 'Σ Alg Ops / Σ uArch Ops of the modelled TIU commands in each of ' + D.urate.buckets +
      ' buckets of the window the timeline above shows (each command\'s ops spread over its duration); zooming ' +
      'either zooms both. Over the whole span: ' +
      (head.span_rate === null ? 'n/a' : (head.span_rate * 100).toFixed(2) + '%') + ' (the engine summary\'s uArch rate).' +
      (head.fine ? ' Too many distinct ops to keep each command\'s: drawn from ' + head.fine.alg.n + ' fine bins of ' +
        ((head.fine.hi - head.fine.lo) / head.fine.alg.n / 1e3).toPrecision(3) + ' µs (sums exact over whole fine bins).' : '');
    note.dataset.spanRate = head.span_rate === null ? '' : String(head.span_rate);
    card.append(h2, node, note);
    panel.append(card);
    const entry = {node, syncing: false, wired: false};
    charts.set(view, entry);
    return entry;
  }

  async function drawRate(view, a, b) {
    const core = Number(view.slice(5));
    await loadSeries();
    if (!series.has(core)) return;
    const entry = chartFor(view, core);
    const W = D.urate.buckets, {A, U, w} = uarchBins(series.get(core), a, b, W);
    const x = new Float64Array(W), y = new Array(W);
    for (let k = 0; k < W; k++) { x[k] = (a + k * w) / 1e3; y[k] = U[k] > 0 ? (A[k] / U[k]) * 100 : null; }
    await linkedReact(entry, view, a, b, [{type: 'scatter', mode: 'lines', x, y,
      line: {shape: 'hv', width: 1.3, color: '#2E7D32'}, connectgaps: false, name: 'uArch rate',
      hovertemplate: '%{y:.2f}% from %{x:.3f} µs<extra></extra>'}], {
      height: 220, margin: {l: 150, r: 20, t: 10, b: 40}, plot_bgcolor: '#fafbfc', showlegend: false,
      xaxis: {range: [a / 1e3, b / 1e3], title: {text: 'time since first event (µs)', standoff: 4}, gridcolor: '#e3e7ea'},
      yaxis: {title: {text: 'uArch rate (%)'}, range: [0, 105], gridcolor: '#e3e7ea'},
    });
  }

  let drawing = Promise.resolve();
  document.addEventListener('rg-range', (ev) => {
    const {view, a, b} = ev.detail;
    if (!view.startsWith('core-')) return;
    drawing = drawing.then(() => drawRate(view, a, b)).catch((err) => console.error(err));
  });

  R.diagnosis = {uarchBins: async (core, a, b, W) => {
    await loadSeries();
    const r = uarchBins(series.get(core), a, b, W);
    return {A: Array.from(r.A), U: Array.from(r.U)};
  }, drawn: () => drawing, open: (selector) => openRow(document.querySelector(selector))};
})();
