// tpdump --html: draws the trace data embedded in this page (#trace-data, made by
// html_report_data.cpp) as plain SVG, with no library: the tracepoint table, a timeline of
// hits per tracepoint and per thread, a chart per collected scalar (a line for a quantity,
// lanes of labels for an address or an identifier), and the frame that a click selects.
// Trace data only ever reaches the page as text nodes and attributes.
(function () {
  'use strict';

  const SVG_NS = 'http://www.w3.org/2000/svg'; // a namespace name, not fetched
  const data = JSON.parse(document.getElementById('trace-data').textContent);
  const frames = data.frames;
  const frameCount = frames.number.length;
  const PALETTE = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed',
                   '#db2777', '#0891b2', '#65a30d', '#9333ea', '#ea580c'];
  // A chart draws a dot per frame up to this many points; above, its line alone (one path).
  const MAX_DOTS = 300;
  // A chart of labels has a lane per value up to this many; above, the rarer ones share one.
  const MAX_LANES = 8;

  // ---- DOM helpers --------------------------------------------------------------------

  function append(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {}))
      if (value !== null && value !== undefined) node.setAttribute(key, value);
    return append(node, children);
  }

  function s(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [key, value] of Object.entries(attrs || {}))
      if (value !== null && value !== undefined) node.setAttribute(key, value);
    return append(node, children);
  }

  // The mouse position in an svg's pixels (the svgs here have no viewBox).
  function mouseIn(svgNode, event) {
    const box = svgNode.getBoundingClientRect();
    return { x: event.clientX - box.left, y: event.clientY - box.top };
  }

  // The index in ascending `sorted` of the value nearest to `x`.
  function nearest(sorted, x) {
    let lo = 0, hi = sorted.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (sorted[mid] < x) lo = mid + 1; else hi = mid;
    }
    if (lo > 0 && x - sorted[lo - 1] < sorted[lo] - x) return lo - 1;
    return lo;
  }

  // The index of `value` in ascending `sorted`, or -1.
  function indexOf(sorted, value) {
    let lo = 0, hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (sorted[mid] < value) lo = mid + 1; else hi = mid;
    }
    return lo < sorted.length && sorted[lo] === value ? lo : -1;
  }

  // ---- tracepoints, threads, time -----------------------------------------------------

  const tracepointNumbers = Array.from(new Set(
    data.tracepoints.map((t) => t.number).concat(frames.tracepoint))).sort((a, b) => a - b);
  const locations = new Map();
  for (const t of data.tracepoints)
    if (t.location && !locations.has(t.number)) locations.set(t.number, t.location);

  function tracepointColor(number) {
    return PALETTE[tracepointNumbers.indexOf(number) % PALETTE.length];
  }

  function tracepointLabel(number) {
    const location = locations.get(number);
    return 'tracepoint ' + number + (location ? ': ' + location : '');
  }

  function threadLabel(i) {
    return frames.thread[i] >= 0 ? data.threads[frames.thread[i]] : 'thread unknown';
  }

  const times = frames.time;
  const timeRange = (function () {
    let lo = Infinity, hi = -Infinity;
    for (const t of times) { lo = Math.min(lo, t); hi = Math.max(hi, t); }
    if (!(lo <= hi)) return [0, 1];
    if (lo === hi) return [lo - 1, hi + 1];
    return [lo, hi];
  })();

  // Time ticks are shown in the largest unit that fits the span: [divisor, name].
  const TIME_UNITS = {
    ns: [[1e9, 's'], [1e6, 'ms'], [1e3, 'µs'], [1, 'ns']],
    us: [[1e6, 's'], [1e3, 'ms'], [1, 'µs']],
  };
  const timeUnit = (function () {
    const units = TIME_UNITS[data.time.unit];
    if (!units) return [1, ''];
    const span = timeRange[1] - timeRange[0];
    return units.find(([divisor]) => span >= 2 * divisor) || units[units.length - 1];
  })();

  function axisTitle() {
    if (data.time.unit === 'frame') return 'frame number';
    return timeUnit[1] + ' since the first frame (' + data.time.source + ')';
  }

  function round(x) {
    return String(Math.round(x * 1000) / 1000);
  }

  function tickLabel(t) {
    if (data.time.unit === 'frame') return String(Number(data.time.origin) + t);
    return round(t / timeUnit[0]);
  }

  function frameTime(i) {
    if (data.time.unit === 'frame') return 'frame ' + frames.number[i];
    return '+' + round(times[i] / timeUnit[0]) + ' ' + timeUnit[1] + ' (' + data.time.source +
        ' ' + (BigInt(data.time.origin) + BigInt(times[i])) + ' ' +
        (data.time.unit === 'us' ? 'µs' : 'ns') + ')';
  }

  // Round-number ticks between lo and hi.
  function ticks(lo, hi, count) {
    const span = hi - lo;
    if (!(span > 0)) return [lo];
    let step = Math.pow(10, Math.floor(Math.log10(span / count)));
    const ratio = span / count / step;
    if (ratio >= 7.5) step *= 10; else if (ratio >= 3.5) step *= 5; else if (ratio >= 1.5) step *= 2;
    if (data.time.unit === 'frame') step = Math.max(1, step);
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(v);
    return out;
  }

  function xScale(left, right) {
    const [lo, hi] = timeRange;
    return (t) => left + (t - lo) / (hi - lo) * (right - left);
  }

  // ---- selection and tooltip ----------------------------------------------------------

  let selected = -1;
  const onSelect = [];

  function select(i) {
    if (i < 0 || i >= frameCount) return;
    selected = i;
    for (const listener of onSelect) listener(i);
  }

  document.addEventListener('keydown', (event) => {
    if (event.key === 'ArrowRight' || event.key === 'j') select(selected + 1);
    if (event.key === 'ArrowLeft' || event.key === 'k') select(selected - 1);
  });

  const tooltip = document.getElementById('tooltip');
  function showTip(event, lines) {
    tooltip.textContent = lines.join('\n');
    tooltip.hidden = false;
    const x = Math.min(event.clientX + 14, window.innerWidth - tooltip.offsetWidth - 4);
    const y = Math.min(event.clientY + 14, window.innerHeight - tooltip.offsetHeight - 4);
    tooltip.style.left = Math.max(0, x) + 'px';
    tooltip.style.top = Math.max(0, y) + 'px';
  }
  function hideTip() { tooltip.hidden = true; }

  // Hover shows `describe(index)` of the point nearest the mouse, a click selects its frame.
  // `pick(position)` gives that index or -1; `frameOf(index)` its frame.
  function interactive(svgNode, pick, describe, frameOf) {
    svgNode.addEventListener('mousemove', (event) => {
      const k = pick(mouseIn(svgNode, event));
      if (k < 0) hideTip(); else showTip(event, describe(k));
    });
    svgNode.addEventListener('mouseleave', hideTip);
    svgNode.addEventListener('click', (event) => {
      const k = pick(mouseIn(svgNode, event));
      if (k >= 0) select(frameOf(k));
    });
  }

  // A vertical line at the selected frame's time.
  function cursor(x, top, bottom) {
    const line = s('line', { class: 'cursor', y1: top, y2: bottom, visibility: 'hidden' });
    onSelect.push((i) => {
      line.setAttribute('x1', x(times[i]));
      line.setAttribute('x2', x(times[i]));
      line.setAttribute('visibility', 'visible');
    });
    return line;
  }

  function timeAxis(x, left, right, y, count) {
    const g = s('g', { class: 'time-axis' },
                s('line', { class: 'axis', x1: left, x2: right, y1: y, y2: y }));
    for (const t of ticks(timeRange[0], timeRange[1], count)) {
      append(g, [s('line', { class: 'axis', x1: x(t), x2: x(t), y1: y, y2: y + 4 }),
                 s('text', { x: x(t), y: y + 15, 'text-anchor': 'middle' }, tickLabel(t))]);
    }
    return g;
  }

  // ---- summary ------------------------------------------------------------------------

  function renderSummary() {
    const header = document.getElementById('summary');
    document.title = 'tpdump: ' + data.file;
    const lines = [];
    lines.push(data.framesInFile + ' frames, ' + data.fileSize + ' bytes' +
               (data.architecture ? ', ' + data.architecture : ''));
    const st = data.status;
    if (st.stopReason !== undefined) {
      let line = st.running ? 'running' : 'stopped';
      if (st.stopReason) {
        line += ' (' + st.stopReason + (st.stopText ? ' "' + st.stopText + '"' : '') +
            (st.stopTracepoint ? ', tracepoint ' + st.stopTracepoint : '') + ')';
      }
      if (st.bufferSize !== undefined && st.bufferFree !== undefined)
        line += ', buffer ' + (st.bufferSize - st.bufferFree) + ' of ' + st.bufferSize + ' bytes used';
      if (st.circular) line += ', circular';
      if (st.user) line += ', user ' + st.user;
      if (st.notes) line += ', notes: ' + st.notes;
      lines.push(line);
    }
    if (data.framesSelected !== data.framesInFile)
      lines.push(data.framesSelected + ' frames selected by --frames / --tracepoint');
    if (frameCount < data.framesSelected)
      lines.push('the page holds the first ' + frameCount + ' of them; --frames chooses others');
    let timeLine = 'time axis: ' + axisTitle();
    if (data.time.untimed)
      timeLine += '; ' + data.time.untimed + ' frames without it are placed at the frame before';
    lines.push(timeLine);
    if (data.variables.length) {
      lines.push('trace state variables: ' + data.variables.map((v) =>
        v.name + (v.builtin ? ' (builtin)' : ' (initial ' + v.initial + ')')).join(', '));
    }
    append(header, [h('h1', null, 'Trace ', h('code', null, data.file)),
                    lines.map((line) => h('div', { class: 'summary-line' }, line))]);
  }

  // ---- tracepoints --------------------------------------------------------------------

  function renderTracepoints() {
    const section = document.getElementById('tracepoints');
    if (!data.tracepoints.length) {
      append(section, [h('p', { class: 'note' }, 'No tracepoints in the file.')]);
      return;
    }
    const head = h('tr', null, ['#', 'address', 'state', 'type', 'hits', 'pass count',
                                'condition', 'location', 'actions'].map((t) => h('th', null, t)));
    const rows = data.tracepoints.map((t) => {
      const commands = t.commands.map((c) =>
        h('div', null, '  '.repeat(c.depth) + c.text));
      const agent = t.agentActions.concat(t.steppingAgentActions.map((a) => 'while-stepping: ' + a));
      const actions = h('td', { class: 'commands mono' }, commands.length ? commands : null,
        agent.length ? h('details', null, h('summary', null, 'agent actions'),
                         agent.map((a) => h('div', null, a))) : null,
        !commands.length && !agent.length ? '(none)' : null);
      return h('tr', { 'data-tracepoint': t.number, class: t.enabled ? null : 'disabled' },
        h('td', { class: 'number' }, h('span', { class: 'swatch', style: 'background:' + tracepointColor(t.number) }),
          String(t.number)),
        h('td', { class: 'mono' }, t.address),
        h('td', null, t.enabled ? 'enabled' : 'disabled'),
        h('td', null, t.kind + (t.stepCount ? ', while-stepping ' + t.stepCount : '')),
        h('td', null, String(t.hits)),
        h('td', null, t.passCount ? String(t.passCount) : '—'),
        h('td', { class: 'mono' }, t.condition || '—'),
        h('td', { class: 'mono' }, t.location || '—'),
        actions);
    });
    append(section, [h('table', { class: 'tracepoints' }, h('thead', null, head),
                       h('tbody', null, rows))]);
  }

  // ---- timeline -----------------------------------------------------------------------

  function renderTimeline() {
    const section = document.getElementById('timeline');
    const rows = tracepointNumbers.map((n) => ({
      kind: 'tracepoint', key: n, label: tracepointLabel(n), frames: [] }));
    const threadRows = data.threads.map((label, k) => ({
      kind: 'thread', key: k, label: label, frames: [] }));
    for (let i = 0; i < frameCount; ++i) {
      rows[tracepointNumbers.indexOf(frames.tracepoint[i])].frames.push(i);
      if (frames.thread[i] >= 0) threadRows[frames.thread[i]].frames.push(i);
    }
    const all = rows.concat(threadRows);
    if (!all.length) {
      append(section, [h('p', { class: 'note' }, 'No tracepoints and no frames.')]);
      return;
    }
    const LABEL = 200, ROW = 22, RIGHT = 16, AXIS = 36;
    const width = Math.max(640, section.clientWidth);
    const height = all.length * ROW + AXIS;
    const x = xScale(LABEL, width - RIGHT);
    const svgNode = s('svg', { class: 'timeline', width: width, height: height });
    all.forEach((row, r) => {
      const top = r * ROW;
      const g = s('g', { class: 'timeline-row', 'data-kind': row.kind,
                         'data-tracepoint': row.kind === 'tracepoint' ? row.key : null,
                         'data-thread': row.kind === 'thread' ? row.label : null,
                         'data-hits': row.frames.length });
      const label = row.label.length > 30 ? row.label.slice(0, 29) + '…' : row.label;
      append(g, [s('text', { class: 'row-label', x: 4, y: top + 15 }, s('title', null, row.label), label),
                 s('line', { class: 'axis', x1: LABEL, x2: width - RIGHT, y1: top + ROW / 2, y2: top + ROW / 2 })]);
      if (!row.frames.length)
        append(g, [s('text', { x: LABEL + 6, y: top + 15 }, 'no hits')]);
      // One path per colour, one tick per pixel column: the node count does not grow
      // with the frames.
      const paths = new Map();
      for (const i of row.frames) {
        const tp = frames.tracepoint[i];
        if (!paths.has(tp)) paths.set(tp, { d: [], last: NaN });
        const p = paths.get(tp);
        const px = Math.round(x(times[i]) * 2) / 2;
        if (px === p.last) continue;
        p.last = px;
        p.d.push('M' + px + ' ' + (top + 4) + 'V' + (top + ROW - 4));
      }
      for (const [tp, p] of paths)
        append(g, [s('path', { d: p.d.join(''), stroke: tracepointColor(tp), 'stroke-width': 1.5 })]);
      row.sorted = row.frames.slice().sort((a, b) => times[a] - times[b]);
      row.xs = row.sorted.map((i) => x(times[i]));
      append(svgNode, [g]);
      if (row.kind === 'thread' && r === rows.length)
        append(svgNode, [s('line', { class: 'axis', x1: 0, x2: width, y1: top, y2: top })]);
    });
    append(svgNode, [timeAxis(x, LABEL, width - RIGHT, all.length * ROW + 4, 8),
                     s('text', { x: (LABEL + width) / 2, y: height - 2, 'text-anchor': 'middle' },
                       axisTitle()),
                     cursor(x, 0, all.length * ROW),
                     s('rect', { class: 'hover', x: LABEL, y: 0, width: width - LABEL,
                                 height: all.length * ROW, fill: 'transparent' })]);
    // Points are (row, position in row) packed in one index.
    const pick = (pos) => {
      const row = all[Math.floor(pos.y / ROW)];
      if (!row || !row.xs.length || pos.x < LABEL - 4) return -1;
      const k = nearest(row.xs, pos.x);
      return Math.abs(row.xs[k] - pos.x) <= 12 ? row.sorted[k] : -1;
    };
    interactive(svgNode, pick, (i) => [
      'frame ' + frames.number[i] + ', ' + tracepointLabel(frames.tracepoint[i]),
      frameTime(i), threadLabel(i)], (i) => i);
    append(section, [svgNode]);
    if (!frameCount)
      append(section, [h('p', { class: 'note' }, 'No frames were collected.')]);
  }

  // ---- plots --------------------------------------------------------------------------

  function numeric(series, k) {
    const v = series.values[k];
    return series.kind === 'register' ? parseInt(v, 16) : Number(v);
  }

  // A value for an axis label: registers without their leading zeros.
  function shortValue(series, k) {
    const v = String(series.values[k]);
    return series.kind === 'register' ? '0x' + (v.slice(2).replace(/^0+(?=.)/, '')) : v;
  }

  // A label of a chart of labels: an address in hex (as a 64-bit pattern: it was read as a
  // signed integer), an identifier as it was collected.
  function valueLabel(series, k) {
    if (series.kind === 'register') return shortValue(series, k);
    if (series.role === 'address') return '0x' + BigInt.asUintN(64, BigInt(series.values[k])).toString(16);
    return String(series.values[k]);
  }

  function compareLabels(a, b) {
    const x = BigInt(a), y = BigInt(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }

  function lineChart(series) {
    const W = 370, H = 120, LEFT = 112, RIGHT = 10, TOP = 8, BOTTOM = 22;
    const n = series.frames.length;
    const xs = series.frames.map((i) => times[i]);
    const ys = series.values.map((_, k) => numeric(series, k));
    let kmin = 0, kmax = 0;
    ys.forEach((y, k) => { if (y < ys[kmin]) kmin = k; if (y > ys[kmax]) kmax = k; });
    let lo = ys[kmin], hi = ys[kmax];
    if (lo === hi) { lo -= 1; hi += 1; }
    const x = xScale(LEFT, W - RIGHT);
    const y = (v) => TOP + (hi - v) / (hi - lo) * (H - TOP - BOTTOM);
    const color = series.tracepoint !== undefined ? tracepointColor(series.tracepoint) : '#334155';

    const svgNode = s('svg', { class: 'chart-svg', width: W, height: H, 'data-name': series.name,
                               'data-kind': series.kind, 'data-role': series.role,
                               'data-tracepoint': series.tracepoint, 'data-points': n });
    append(svgNode, [
      s('text', { x: LEFT - 6, y: TOP + 8, 'text-anchor': 'end' }, shortValue(series, kmax)),
      s('text', { x: LEFT - 6, y: H - BOTTOM, 'text-anchor': 'end' }, shortValue(series, kmin)),
      s('line', { class: 'axis', x1: LEFT, x2: LEFT, y1: TOP, y2: H - BOTTOM }),
      timeAxis(x, LEFT, W - RIGHT, H - BOTTOM, 3)]);

    // The line: every point, or for many points each pixel column's lowest and highest.
    const d = [];
    if (n > 2 * (W - LEFT - RIGHT)) {
      let column = NaN, low = 0, high = 0;
      const flush = () => { if (!isNaN(column)) d.push((d.length ? 'L' : 'M') + column + ' ' + y(low) + 'L' + column + ' ' + y(high)); };
      xs.map((t, k) => k).sort((a, b) => xs[a] - xs[b]).forEach((k) => {
        const c = Math.round(x(xs[k]));
        if (c !== column) { flush(); column = c; low = high = ys[k]; }
        low = Math.min(low, ys[k]); high = Math.max(high, ys[k]);
      });
      flush();
    } else {
      xs.forEach((t, k) => d.push((k ? 'L' : 'M') + x(t).toFixed(1) + ' ' + y(ys[k]).toFixed(1)));
    }
    append(svgNode, [s('path', { d: d.join(''), fill: 'none', stroke: color, 'stroke-width': 1.5 })]);
    if (n <= MAX_DOTS)
      append(svgNode, xs.map((t, k) => s('circle', {
        cx: x(t).toFixed(1), cy: y(ys[k]).toFixed(1), r: 2.5,
        fill: tracepointColor(frames.tracepoint[series.frames[k]]) })));

    const mark = s('circle', { r: 4.5, fill: 'none', stroke: '#e11d48', 'stroke-width': 2, visibility: 'hidden' });
    onSelect.push((i) => {
      const k = indexOf(series.frames, i);
      mark.setAttribute('visibility', k < 0 ? 'hidden' : 'visible');
      if (k >= 0) { mark.setAttribute('cx', x(xs[k])); mark.setAttribute('cy', y(ys[k])); }
    });
    append(svgNode, [cursor(x, TOP, H - BOTTOM), mark,
                     s('rect', { class: 'hover', x: LEFT, y: 0, width: W - LEFT, height: H, fill: 'transparent' })]);

    const order = xs.map((t, k) => k).sort((a, b) => xs[a] - xs[b]);
    const px = order.map((k) => x(xs[k]));
    interactive(svgNode, (pos) => (n ? order[nearest(px, pos.x)] : -1), (k) => [
      series.name + ' = ' + series.values[k],
      'frame ' + frames.number[series.frames[k]] + ', ' + tracepointLabel(frames.tracepoint[series.frames[k]]),
      frameTime(series.frames[k])], (k) => series.frames[k]);
    return svgNode;
  }

  // Addresses and identifiers name things: their order and distances mean nothing, so no
  // line joins them. A lane per value (the most frequent ones, sorted; the rest share the
  // last lane) shows which one each frame had: a tick at the frame's time.
  function laneChart(series) {
    const W = 370, LEFT = 112, RIGHT = 10, TOP = 4, BOTTOM = 22, LANE = 14;
    const n = series.frames.length;
    const labels = series.values.map((_, k) => valueLabel(series, k));
    const counts = new Map();
    for (const label of labels) counts.set(label, (counts.get(label) || 0) + 1);
    const byCount = Array.from(counts.keys()).sort((a, b) => counts.get(b) - counts.get(a));
    const kept = (byCount.length > MAX_LANES ? byCount.slice(0, MAX_LANES - 1) : byCount).sort(compareLabels);
    const laneOf = new Map(kept.map((label, r) => [label, r]));
    const others = byCount.length - kept.length;
    const laneCount = kept.length + (others ? 1 : 0);
    const lane = (k) => (laneOf.has(labels[k]) ? laneOf.get(labels[k]) : kept.length);
    const mid = (r) => TOP + r * LANE + LANE / 2;
    const H = TOP + laneCount * LANE + BOTTOM;
    const x = xScale(LEFT, W - RIGHT);

    const svgNode = s('svg', { class: 'chart-svg', width: W, height: H, 'data-name': series.name,
                               'data-kind': series.kind, 'data-role': series.role,
                               'data-tracepoint': series.tracepoint, 'data-points': n,
                               'data-lanes': laneCount });
    const laneNames = kept.concat(others ? [others + ' other values'] : []);
    laneNames.forEach((name, r) => append(svgNode, [
      s('text', { class: 'lane-label', x: LEFT - 6, y: mid(r) + 4, 'text-anchor': 'end' }, s('title', null, name),
        name.length > 17 ? name.slice(0, 16) + '…' : name),
      s('line', { class: 'axis', x1: LEFT, x2: W - RIGHT, y1: mid(r), y2: mid(r) })]));
    append(svgNode, [timeAxis(x, LEFT, W - RIGHT, H - BOTTOM, 3)]);

    // One path of ticks per lane and colour, one tick per pixel column.
    const paths = new Map();
    series.frames.forEach((i, k) => {
      const r = lane(k), tp = frames.tracepoint[i], key = r + ' ' + tp;
      if (!paths.has(key)) paths.set(key, { tp: tp, d: [], last: NaN });
      const p = paths.get(key);
      const px = Math.round(x(times[i]) * 2) / 2;
      if (px === p.last) return;
      p.last = px;
      p.d.push('M' + px + ' ' + (mid(r) - 5) + 'V' + (mid(r) + 5));
    });
    for (const p of paths.values())
      append(svgNode, [s('path', { d: p.d.join(''), stroke: tracepointColor(p.tp), 'stroke-width': 1.5 })]);

    const mark = s('circle', { r: 4.5, fill: 'none', stroke: '#e11d48', 'stroke-width': 2, visibility: 'hidden' });
    onSelect.push((i) => {
      const k = indexOf(series.frames, i);
      mark.setAttribute('visibility', k < 0 ? 'hidden' : 'visible');
      if (k >= 0) { mark.setAttribute('cx', x(times[i])); mark.setAttribute('cy', mid(lane(k))); }
    });
    append(svgNode, [cursor(x, TOP, H - BOTTOM), mark,
                     s('rect', { class: 'hover', x: LEFT, y: 0, width: W - LEFT, height: H, fill: 'transparent' })]);

    // The point nearest the mouse in time, in the lane under it if that lane has one.
    const order = series.frames.map((_, k) => k).sort((a, b) => times[series.frames[a]] - times[series.frames[b]]);
    const px = order.map((k) => x(times[series.frames[k]]));
    const inLane = Array.from({ length: laneCount }, () => ({ order: [], px: [] }));
    order.forEach((k, j) => {
      inLane[lane(k)].order.push(k);
      inLane[lane(k)].px.push(px[j]);
    });
    const pick = (pos) => {
      const row = inLane[Math.floor((pos.y - TOP) / LANE)];
      if (row && row.order.length) return row.order[nearest(row.px, pos.x)];
      return n ? order[nearest(px, pos.x)] : -1;
    };
    interactive(svgNode, pick, (k) => [
      series.name + ' = ' + labels[k],
      'frame ' + frames.number[series.frames[k]] + ', ' + tracepointLabel(frames.tracepoint[series.frames[k]]),
      frameTime(series.frames[k])], (k) => series.frames[k]);
    return svgNode;
  }

  function chart(series) {
    const n = series.frames.length;
    const what = series.kind === 'memory' ? 'tracepoint ' + series.tracepoint
        : series.kind === 'variable' ? 'trace state variable' : 'register';
    const role = series.role === 'address' ? ', addresses' : series.role === 'identifier' ? ', identifiers' : '';
    const svgNode = series.role === 'quantity' ? lineChart(series) : laneChart(series);
    return h('div', { class: 'chart' }, h('div', { class: 'title', title: series.name },
                                          series.name, h('span', null, what + role + ', ' + n + (n === 1 ? ' value' : ' values'))),
             svgNode);
  }

  function renderPlots() {
    const section = document.getElementById('plots');
    if (!frameCount) {
      append(section, [h('p', { class: 'note' }, 'No frames were collected, so there is nothing to plot.')]);
      return;
    }
    const groups = [
      ['Trace state variables', (x) => x.kind === 'variable'],
      ...tracepointNumbers.flatMap((n) => [
        ['Memory collected by ' + tracepointLabel(n), (x) => x.kind === 'memory' && x.tracepoint === n],
        ['Registers that change, collected by ' + tracepointLabel(n),
         (x) => x.kind === 'register' && x.tracepoint === n]]),
    ];
    append(section, [h('p', { class: 'note' }, 'Each chart shows a value (up) against ' + axisTitle() +
                          ' (across); a click on a point shows its frame. Addresses and identifiers are' +
                          ' not quantities: their charts have a lane per value and no line.')]);
    for (const [title, belongs] of groups) {
      // quantities first, then the charts of labels
      const members = data.series.filter(belongs)
        .sort((a, b) => (a.role !== 'quantity') - (b.role !== 'quantity'));
      if (!members.length) continue;
      append(section, [h('h3', null, title), h('div', { class: 'charts' }, members.map(chart))]);
    }
    if (!data.series.length)
      append(section, [h('p', { class: 'note' }, 'No collected value to plot.')]);
    if (data.seriesLeftOut)
      append(section, [h('p', { class: 'note' }, data.seriesLeftOut + ' more values are not plotted (the page plots at most ' + data.series.length + ').')]);
    for (const n of tracepointNumbers) {
      const cells = data.constantRegisters.filter((c) => c.tracepoint === n).map((c) =>
        [h('td', null, c.name), h('td', { class: 'mono' }, c.value)]);
      if (!cells.length) continue;
      const rows = [];
      for (let k = 0; k < cells.length; k += 4) rows.push(h('tr', null, cells.slice(k, k + 4)));
      append(section, [h('h3', null, 'Registers that never change, collected by ' + tracepointLabel(n)),
                       h('table', { class: 'constants', 'data-tracepoint': n }, h('tbody', null, rows))]);
    }
  }

  // ---- frame panel --------------------------------------------------------------------

  // Registers are per tracepoint: by "tracepoint name".
  const registerSeries = new Map(data.series.filter((x) => x.kind === 'register')
    .map((x) => [x.tracepoint + ' ' + x.name, x]));
  const constantRegisters = new Map(data.constantRegisters.map((c) => [c.tracepoint + ' ' + c.name, c.value]));

  function hexdump(address, hex) {
    const base = address === null ? 0n : BigInt(address);
    const lines = [];
    const PER_ROW = 8; // the panel is narrow
    for (let row = 0; row < hex.length / 2; row += PER_ROW) {
      const bytes = [];
      for (let k = row; k < Math.min(row + PER_ROW, hex.length / 2); ++k) bytes.push(parseInt(hex.substr(2 * k, 2), 16));
      const text = bytes.map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
      lines.push((base + BigInt(row)).toString(16).padStart(16, '0') + '  ' +
                 bytes.map((b) => b.toString(16).padStart(2, '0')).join(' ').padEnd(3 * PER_ROW) + ' |' + text + '|');
    }
    return lines.join('\n');
  }

  function registerTable(i) {
    const cells = [];
    for (const name of data.registerNames) {
      const key = frames.tracepoint[i] + ' ' + name;
      let value = constantRegisters.get(key);
      const series = registerSeries.get(key);
      if (series) {
        const k = indexOf(series.frames, i);
        value = k >= 0 ? series.values[k] : undefined;
      }
      if (value !== undefined) cells.push([h('td', null, name), h('td', { class: 'mono' }, value)]);
    }
    if (!cells.length) return h('p', { class: 'note' }, 'none that its actions collected (or --registers chose)');
    const rows = [];
    for (let k = 0; k < cells.length; k += 2) rows.push(h('tr', null, cells.slice(k, k + 2)));
    return h('table', { class: 'registers' }, h('tbody', null, rows));
  }

  function renderFrame(i) {
    const panel = document.getElementById('frame');
    panel.replaceChildren();
    if (i < 0) {
      append(panel, [h('h2', null, 'Frame'), h('p', { class: 'note' }, frameCount
        ? 'Click a hit in the timeline or a point of a chart to see its frame.'
        : 'No frames were collected.')]);
      return;
    }
    const prev = h('button', { type: 'button', title: 'previous frame (←)' }, '◀');
    const next = h('button', { type: 'button', title: 'next frame (→)' }, '▶');
    prev.addEventListener('click', () => select(i - 1));
    next.addEventListener('click', () => select(i + 1));
    const tp = frames.tracepoint[i];
    append(panel, [h('h2', null, 'Frame ' + frames.number[i], prev, next),
      h('dl', null,
        h('dt', null, 'tracepoint'), h('dd', null, h('span', { class: 'swatch', style: 'background:' + tracepointColor(tp) }), tracepointLabel(tp)),
        h('dt', null, 'pc'), h('dd', { class: 'mono' }, frames.pc[i] || 'unknown'),
        h('dt', null, 'thread'), h('dd', null, threadLabel(i)),
        h('dt', null, 'time'), h('dd', null, frameTime(i)))]);
    const details = data.details[i];
    if (details && details.variables.length) {
      append(panel, [h('h3', null, 'Trace state variables'), h('table', { class: 'registers' }, h('tbody', null,
        details.variables.map(([name, value]) => h('tr', null, h('td', null, name), h('td', { class: 'mono' }, String(value))))))]);
    }
    if (details && details.memory.length) {
      append(panel, [h('h3', null, 'Memory'), details.memory.map((b) => h('div', { class: 'block' },
        h('div', { class: 'block-head' }, (b.name ? b.name + ' — ' : '') +
          (b.address === null ? '' : b.address + ', ') + b.length + ' bytes' +
          (b.hex.length / 2 < b.length ? ' (first ' + b.hex.length / 2 + ' shown)' : '')),
        h('pre', null, hexdump(b.address, b.hex))))]);
    }
    append(panel, [h('h3', null, 'Registers'), frames.registers[i] ? registerTable(i)
      : h('p', { class: 'note' }, 'not collected')]);
    if (details && details.wide.length) {
      append(panel, [h('table', { class: 'registers' }, h('tbody', null, details.wide.map(([name, value]) =>
        h('tr', null, h('td', null, name), h('td', { class: 'mono' }, value)))))]);
    }
    if (!details)
      append(panel, [h('p', { class: 'note' }, 'This frame\'s memory and variables are left out: the page\'s room for frame contents is used up (--frames chooses other frames).')]);
  }

  // ---- page ---------------------------------------------------------------------------

  renderSummary();
  renderTracepoints();
  renderTimeline();
  renderPlots();
  onSelect.push(renderFrame);
  renderFrame(-1);
  if (frameCount) select(0);
  // For tests (headless Chromium's DOM dump and screenshot): what was drawn, and where.
  const plots = document.getElementById('plots').getBoundingClientRect();
  document.documentElement.setAttribute('data-charts', document.querySelectorAll('svg.chart-svg').length);
  document.documentElement.setAttribute('data-plots-box', [plots.left + window.scrollX, plots.top + window.scrollY,
                                                           plots.width, plots.height].map(Math.round).join(','));
  document.documentElement.setAttribute('data-rendered', 'true');
})();
