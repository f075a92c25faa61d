/* reportgen result.html: the critical path on the timelines and what a waiting command waited
 * for (data from reportgen/writers/html/why.py, numbers from analysis/why.py).
 *
 * Runs after report.js and uses its hooks (window.__report: data, items, views, hooks). A
 * "critical path" checkbox in every timeline's toolbar outlines the path's commands (runs of
 * consecutive path commands on a lane are drawn as one outline); a click on a command that
 * waited (barrier wait, dependency stall, system wait) shows what it waited for under the
 * timeline, with a link that jumps to that command.
 */
(function () {
  'use strict';

  const R = window.__report;
  const W = R.data.why;
  if (!W || !R.hooks) return;
  const LANES = R.data.lanes;
  const laneIndex = new Map(LANES.map((l, k) => [l.name, k]));
  let showPath = false;
  let pathItems = null;          // lane -> sorted item indices on the path

  function findItem(lane, g) {
    const IT = R.items, lo = IT.off[lane], hi = IT.off[lane + 1], guess = lo + g;
    if (guess < hi && IT.gidx[guess] === g) return guess;
    for (let i = lo; i < hi; i++) if (IT.gidx[i] === g) return i;
    return -1;
  }
  function buildPath() {
    pathItems = new Map();
    for (const [sheet, gs] of Object.entries(W.path)) {
      const lane = laneIndex.get(sheet);
      if (lane === undefined) continue;
      const out = [];
      let g = 0;       // global_idx in ascending order, sent as steps (writers/html/why.py)
      for (const step of gs) { g += step; const i = findItem(lane, g); if (i >= 0) out.push(i); }
      out.sort((a, b) => a - b);
      pathItems.set(lane, Int32Array.from(out));
    }
  }
  function lowerBound(arr, x) { let lo = 0, hi = arr.length; while (lo < hi) { const m = (lo + hi) >> 1; if (R.items.end[arr[m]] <= x) lo = m + 1; else hi = m; } return lo; }

  /* Outlines of the path's commands in the visible window: consecutive path items of a lane merge. */
  R.hooks.shapes.push(function (rows, a, b) {
    if (!showPath) return [];
    if (!pathItems) buildPath();
    const IT = R.items, out = [];
    rows.forEach((lane, r) => {
      const items = pathItems.get(lane);
      if (!items) return;
      let k = lowerBound(items, a);
      while (k < items.length && IT.start[items[k]] < b && out.length < 3000) {
        let j = k;
        while (j + 1 < items.length && items[j + 1] === items[j] + 1) j++;
        out.push({type: 'rect', xref: 'x', yref: 'y', x0: IT.start[items[k]] / 1e3, x1: IT.end[items[j]] / 1e3,
                  y0: r - 0.48, y1: r + 0.48, line: {color: '#111', width: 1.5}, fillcolor: 'rgba(255, 235, 59, 0.35)',
                  layer: 'above', name: 'critical path'});
        k = j + 1;
      }
    });
    return out;
  });

  // W.path and W.waits arrive with the items (report.js inflates the page's rg-lazy block)
  let waitOf = null;
  function waitFor(key) {
    if (!waitOf && W.waits) { waitOf = new Map(); for (const w of W.waits) waitOf.set(`${w[0]}#${w[1]}`, w); }
    return waitOf ? waitOf.get(key) : undefined;
  }

  function wire(view) {
    if (view.whyWired) return;
    view.whyWired = true;
    const bar = view.host.querySelector('.toolbar');
    if (bar) {
      const box = document.createElement('input');
      box.type = 'checkbox'; box.className = 'why-toggle'; box.checked = showPath;
      const label = document.createElement('label');
      label.title = 'outline the commands on the critical path';
      label.append(box, ' critical path');
      bar.append(label);
      box.addEventListener('change', () => setPath(box.checked));
    }
    const note = document.createElement('p');
    note.className = 'why-note';
    view.plot.after(note);
    view.whyNote = note;
    view.plot.on('plotly_click', (ev) => {
      const i = ev && ev.points && ev.points[0] ? ev.points[0].customdata : undefined;
      if (typeof i !== 'number') return;
      const lane = LANES[R.laneOf(i)];
      const w = waitFor(`${lane.name}#${R.items.gidx[i]}`);
      explain(view, w);
    });
  }

  function explain(view, w) {
    const note = view.whyNote;
    note.textContent = '';
    if (!w) return;
    note.append(w[2]);
    if (w[3] !== null) {
      const a = document.createElement('a');
      a.href = '#'; a.className = 'why-jump'; a.textContent = ` show ${w[3]} #${w[4]}`;
      a.addEventListener('click', (ev) => { ev.preventDefault(); jumpTo(view, w[3], w[4]); });
      note.append(' ·', a);
    }
  }

  /* Show a command in this view when it has the command's lane, else in a view that has it
   * (the command's core tab, then all cores). */
  async function jumpTo(view, sheet, g) {
    const lane = laneIndex.get(sheet);
    const has = (id) => R.data.views.some((v) => v.id === id && v.lanes.includes(lane));
    const core = LANES[lane] && LANES[lane].cores.length ? `core-${LANES[lane].cores[0]}` : null;
    const id = has(view.spec.id) ? view.spec.id : core && has(core) ? core : 'all';
    const tab = R.data.tabs.find((t) => t.views.includes(id));
    if (tab && id !== view.spec.id) { history.replaceState(null, '', '#' + tab.id); await R.show(tab.id); }
    return R.jump(id, sheet, g);
  }

  R.hooks.wired.push(wire);
  for (const v of Object.values(R.views)) if (v.wired) wire(v);
  function setPath(on) {
    showPath = on;
    for (const el of document.querySelectorAll('input.why-toggle')) el.checked = on;
    for (const v of Object.values(R.views)) if (v.wired) v.schedule();
  }
  R.why = {explain: (id, sheet, g) => explain(R.views[id], waitFor(`${sheet}#${g}`)), setPath};
})();
