/* reportgen result.html: the roofline chart of the Diagnosis tab and the local-memory chart of
 * each core tab (reportgen/writers/html/hardware.py; docs/metrics.md "Roofline", "Local memory").
 *
 * Runs after report.js and diagnosis.js and uses report.js's hooks (window.__report). The roofline
 * is drawn when the Diagnosis tab is first shown; a click on a point opens the timeline at that
 * scope's window (as a table row does). The local-memory chart follows its core's timeline: every
 * 'rg-range' event redraws it for the window shown, and zooming it zooms the timeline. Its data
 * are step functions already reduced by the maximum per bucket (a peak is never lost); in the
 * window at most PIXELS points per series are drawn, again keeping each bucket's maximum.
 */
(function () {
  'use strict';

  const R = window.__report;
  const D = R.data.diagnosis;
  if (!D) return;
  const PIXELS = 1500;

  // ------------------------------------------------------------------------------ roofline
  const {openScope, react: linkedReact} = R.linked;     // templates/diagnosis.js

  let roofDrawn = null;
  function drawRoofline() {
    if (roofDrawn) return roofDrawn;
    const node = document.getElementById('roofline-chart');
    const spec = D.roofline && D.roofline.chart;
    if (!node || !spec) return (roofDrawn = Promise.resolve(null));
    if (spec.empty) {
      node.classList.add('empty');
      node.textContent = spec.empty;
      return (roofDrawn = Promise.resolve(null));
    }
    roofDrawn = Plotly.newPlot(node, spec.data, spec.layout, {displaylogo: false, responsive: true}).then(() => {
      node.on('plotly_click', (ev) => {
        const p = ev.points && ev.points[0];
        if (!p || !p.customdata || p.customdata.length < 13) return;
        const c = p.customdata;
        node.dataset.opened = c[10];
        openScope(c[10], c[11], c[12]);
      });
      node.dataset.drawn = '1';
      return node;
    });
    return roofDrawn;
  }
  const tabButton = document.getElementById('tab-diagnosis');
  if (tabButton) tabButton.addEventListener('click', () => { requestAnimationFrame(() => drawRoofline()); });
  R.ready.then(() => {
    const panel = document.getElementById('panel-diagnosis');
    if (panel && !panel.hidden) drawRoofline();
  });

  // ------------------------------------------------------------------------------ local memory
  const L = D.lmem;
  let lmem = null;                 // core -> {head, t, total, banks: [Uint16Array x 16]}
  async function loadLmem() {
    if (lmem) return lmem;
    const raw = await R.decode.gunzip(R.decode.b64ToBytes(L.b64));
    const col = (c) => R.decode.unshuffle(raw, c.offset, c.n, R.decode.CTOR[c.dtype]);
    lmem = new Map();
    for (const head of L.cores) {
      const t = col(head.t), total = col(head.total), flat = col(head.banks), n = t.length, banks = [];
      for (let k = 0; k < L.banks; k++) banks.push(flat.subarray(k * n, (k + 1) * n));
      lmem.set(head.core, {head, t, total, banks});
    }
    return lmem;
  }

  function firstAbove(arr, x) {    // first i with arr[i] > x
    let lo = 0, hi = arr.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (arr[mid] > x) hi = mid; else lo = mid + 1; }
    return lo;
  }

  /* The steps inside [a, b) (plus the one in force at a), at most PIXELS buckets, each keeping
   * the maximum of every series: edges x (n + 1) and values per series (n). */
  function windowSteps(s, a, b) {
    const i0 = Math.max(firstAbove(s.t, a) - 1, 0), i1 = Math.max(firstAbove(s.t, b), i0 + 1);
    const n = i1 - i0, k = Math.min(n, PIXELS), w = (b - a) / k;
    const edges = new Float64Array(k + 1), total = new Float64Array(k), banks = s.banks.map(() => new Float64Array(k));
    for (let j = 0; j <= k; j++) edges[j] = (a + j * w) / 1e3;
    for (let i = i0; i < i1; i++) {
      const lo = Math.max(s.t[i], a), hi = i + 1 < s.t.length ? Math.min(s.t[i + 1], b) : b;
      if (hi <= lo && !(i === i1 - 1)) continue;
      const j0 = Math.min(Math.max(Math.floor((lo - a) / w), 0), k - 1);
      const j1 = Math.min(Math.max(Math.ceil((Math.max(hi, lo) - a) / w) - 1, j0), k - 1);
      for (let j = j0; j <= j1; j++) {
        if (s.total[i] > total[j]) total[j] = s.total[i];
        for (let q = 0; q < banks.length; q++) if (s.banks[q][i] > banks[q][j]) banks[q][j] = s.banks[q][i];
      }
    }
    return {edges, total, banks};
  }

  const charts = new Map();        // view -> {node, syncing, wired}
  function chartFor(view, head) {
    if (charts.has(view)) return charts.get(view);
    const panel = document.getElementById('panel-' + view);
    const card = document.createElement('div');
    card.className = 'card lmem-card';
    const h2 = document.createElement('h2');
    h2.textContent = 'Local memory: live bytes per lane, in total and per bank';
    const node = document.createElement('div');
    node.className = 'chart';
    node.id = 'lmem-' + view;
    const note = document.createElement('p');
    note.className = 'note';
    const at = head.peak_at_ns === null ? 'n/a' : (head.peak_at_ns / 1e3).toFixed(3) + ' µs';
    note.textContent = 'Top: bytes of the 256 KiB lane holding a live value (written, not yet past its last read); ' +
      'bottom: each of the 16 banks of 16 KiB. Peak ' + head.peak_bytes.toLocaleString('en-US') + ' B at ' + at +
      ' (marked). ' + head.accesses.toLocaleString('en-US') + ' accesses; ' + head.undecoded.toLocaleString('en-US') +
      ' could not be placed (address not decodable: see the workbook and docs/metrics.md "Local memory"); ' +
      head.conflicts + ' TIU/DMA bank-conflict candidates, ' + head.races + ' overwrite races. Zooming either chart zooms both.';
    card.append(h2, node, note);
    panel.append(card);
    const entry = {node, syncing: false, wired: false};
    charts.set(view, entry);
    return entry;
  }

  async function drawLmem(view, a, b) {
    const core = Number(view.slice(5));
    await loadLmem();
    const s = lmem.get(core);
    if (!s) return;
    const entry = chartFor(view, s.head);
    const {edges, total, banks} = windowSteps(s, a, b);
    const mid = Array.from(edges.subarray(0, edges.length - 1));
    const z = banks.map((col) => Array.from(col));
    const traces = [
      {type: 'scatter', mode: 'lines', x: mid, y: Array.from(total), line: {shape: 'hv', width: 1.3, color: '#1565C0'},
       name: 'live bytes', xaxis: 'x', yaxis: 'y', hovertemplate: '%{y:,} B per lane from %{x:.3f} µs<extra></extra>'},
      {type: 'heatmap', x: Array.from(edges), y: banks.map((_, q) => 'bank ' + q), z, xaxis: 'x', yaxis: 'y2',
       zmin: 0, zmax: L.bank_bytes, colorscale: 'YlOrRd', reversescale: true, showscale: false, name: 'banks',
       hovertemplate: '%{y}: %{z:,} B of 16,384 at %{x:.3f} µs<extra></extra>'},
    ];
    const shapes = [{type: 'line', xref: 'paper', x0: 0, x1: 1, yref: 'y', y0: L.lane_bytes, y1: L.lane_bytes,
                     line: {dash: 'dot', color: '#B71C1C', width: 1}}];
    if (s.head.peak_at_ns !== null) {
      traces.push({type: 'scatter', mode: 'markers+text', x: [s.head.peak_at_ns / 1e3], y: [s.head.peak_bytes],
                   marker: {symbol: 'triangle-down', size: 11, color: '#B71C1C'}, text: ['peak'], textposition: 'top center',
                   name: 'peak', xaxis: 'x', yaxis: 'y',
                   hovertemplate: 'peak %{y:,} B per lane at %{x:.3f} µs<extra></extra>'});
    }
    await linkedReact(entry, view, a, b, traces, {
      height: 420, margin: {l: 150, r: 20, t: 10, b: 40}, plot_bgcolor: '#fafbfc', showlegend: false, shapes,
      xaxis: {range: [a / 1e3, b / 1e3], anchor: 'y2', title: {text: 'time since first event (µs)', standoff: 4}, gridcolor: '#e3e7ea'},
      yaxis: {domain: [0.58, 1], title: {text: 'live B per lane'}, range: [0, L.lane_bytes * 1.08], gridcolor: '#e3e7ea'},
      yaxis2: {domain: [0, 0.52], autorange: 'reversed', tickfont: {size: 9}},
    });
  }

  let drawing = Promise.resolve();
  if (L) {
    document.addEventListener('rg-range', (ev) => {
      const {view, a, b} = ev.detail;
      if (!view.startsWith('core-')) return;
      drawing = drawing.then(() => drawLmem(view, a, b)).catch((err) => console.error(err));
    });
  }

  R.hardware = {drawRoofline, drawn: () => drawing, windowSteps: async (core, a, b) => {
    await loadLmem();
    const r = windowSteps(lmem.get(core), a, b);
    return {edges: Array.from(r.edges), total: Array.from(r.total), banks: r.banks.map((x) => Array.from(x))};
  }};
})();
