import type { WidgetQuery } from './schema.js';
import { widgetUnits } from './schema.js';

const htmlEscapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => htmlEscapes[c]!);

/** JSON that is safe inside a <script> element: no `<`, so no `</script>` or `<!--`. */
const scriptJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c').replace(/\u2028|\u2029/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);

export const themes = {
  dark: { bg: '#0f172a', fg: '#e2e8f0', muted: '#94a3b8', grid: '#334155', line: '#38bdf8', panel: '#1e293b' },
  light: { bg: '#ffffff', fg: '#0f172a', muted: '#475569', grid: '#e2e8f0', line: '#0369a1', panel: '#f1f5f9' },
};

/**
 * The widget page: inline CSS and script under a nonce, no other host. The script draws the mean of the
 * station's ok readings per bucket (from /data/compare/ on the viewer's zone, suspect and invalid readings left out) as an
 * SVG line, shows the latest reading (from /data/latest/) and refreshes: at once when the live stream
 * (/data/stream/) announces a new reading, and every refresh interval besides. Polling always runs, so
 * the chart keeps moving where the stream cannot stay open (an old browser, a proxy that buffers).
 * - The y axis: "nice numbers", a step of 1, 2 or 5 × 10^k that cuts the data's range in a few parts,
 *   the ends rounded out to it; each label carries the unit, and the widest sets the left margin.
 * - The time axis: the viewer's local time (the date when not today), the zone named by the browser
 *   (Intl's short name: 'CET', 'GMT+5:30') at the end, and at the start too when the offset changes
 *   between; the latest reading's time names it too.
 * - The readout: pointer or touch (the nearest bucket in x), or the arrow keys (from the latest bucket
 *   on; Home, End, Escape) show a bucket's value (one decimal finer than the ticks), unit and time, and
 *   mark it on the line; it follows a redraw. `plot` is what is drawn (null while nothing is), `readAt`
 *   the time read (null while none is).
 * - The icon is an empty data: URL (img-src allows data:), so that a browser showing the page on its
 *   own asks for no /favicon.ico.
 */
export function widgetPage(args: { stationId: string; stationName: string; query: WidgetQuery; nonce: string }): string {
  const { query, nonce } = args;
  const theme = themes[query.theme];
  const { label, unit, unitName } = widgetUnits[query.param];
  const config = { station: args.stationId, param: query.param, hours: query.hours, refreshMs: query.refresh * 1000, unit };
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(args.stationName)}: ${escapeHtml(label)}</title>
<link rel="icon" href="data:,">
<style nonce="${nonce}">
*{box-sizing:border-box}html,body{margin:0;height:100%}
body{background:${theme.bg};color:${theme.fg};font:12px/1.3 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;display:flex;flex-direction:column;padding:6px 8px;min-height:150px}
header{display:flex;justify-content:space-between;align-items:baseline;gap:8px}
h1{font-size:13px;font-weight:600;margin:0;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.value{font-size:18px;font-weight:700;white-space:nowrap}.value small{font-size:11px;font-weight:400;color:${theme.muted}}
.meta{color:${theme.muted};font-size:11px;display:flex;justify-content:space-between;gap:8px;white-space:nowrap}
.meta span{overflow:hidden;text-overflow:ellipsis}
.flag{color:#f59e0b}
.plot{flex:1;position:relative;min-height:60px}
svg{position:absolute;inset:0;width:100%;height:100%;display:block;touch-action:pan-y;outline:none}
svg:focus-visible{outline:1px dashed ${theme.muted}}
svg text{fill:${theme.muted};font-size:10px}
.grid{stroke:${theme.grid};stroke-width:1}
.line{fill:none;stroke:${theme.line};stroke-width:2;stroke-linejoin:round;stroke-linecap:round;vector-effect:non-scaling-stroke}
.mark,svg text{pointer-events:none}.mark line{stroke:${theme.muted};stroke-dasharray:2 2}.mark circle{fill:${theme.line};stroke:${theme.bg};stroke-width:2}
#readout{position:absolute;top:0;font-size:11px;white-space:nowrap;padding:1px 5px;border-radius:3px;background:${theme.panel};color:${theme.muted};pointer-events:none}
#readout b{color:${theme.fg}}#readout.low{top:auto;bottom:16px}
.empty{display:none;flex:1;align-items:center;justify-content:center;color:${theme.muted}}
body.no-data .empty{display:flex}body.no-data .plot{display:none}
</style>
</head>
<body>
<header><h1 title="${escapeHtml(args.stationName)}">${escapeHtml(args.stationName)}</h1><div class="value" id="value">–</div></header>
<div class="meta"><span>${escapeHtml(label)}, last ${query.hours} h</span><span id="updated"></span></div>
<div class="plot"><svg id="chart" role="img" tabindex="0" aria-label="${escapeHtml(label)} in ${escapeHtml(unitName)} over the last ${query.hours} hours; arrow keys read values"></svg><div id="readout" aria-live="polite" hidden></div></div>
<div class="empty" id="empty">No recent data</div>
<script type="application/json" id="config">${scriptJson(config)}</script>
<script nonce="${nonce}">
(function () {
  var config = JSON.parse(document.getElementById('config').textContent);
  var api = new URL('../../../api/v1/', location.href);
  var svgNs = 'http://www.w3.org/2000/svg';
  var chart = document.getElementById('chart'), readout = document.getElementById('readout');
  var plot = null, readAt = null;
  function set(node, attrs) { for (var key in attrs) node.setAttribute(key, attrs[key]); return node; }
  function el(name, attrs, text, parent) {
    var node = set(document.createElementNS(svgNs, name), attrs);
    if (text !== undefined) node.textContent = text;
    return (parent || chart).appendChild(node);
  }
  function format(value) { return Math.abs(value) >= 100 ? value.toFixed(0) : value.toFixed(1); }
  function time(ms, zone) {
    var d = new Date(ms), options = { hour: '2-digit', minute: '2-digit' };
    if (d.toDateString() !== new Date().toDateString()) { options.month = 'short'; options.day = 'numeric'; }
    if (zone) options.timeZoneName = 'short';
    return d.toLocaleString([], options);
  }
  function ticks(lo, hi, count) {
    var raw = (hi - lo) / count, power = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / power;
    var step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * power, values = [];
    for (var i = Math.floor(lo / step + 1e-9); i <= Math.ceil(hi / step - 1e-9); i++) values.push(i * step);
    return { values: values, digits: Math.max(0, -Math.floor(Math.log10(step) + 1e-9)) };
  }
  function draw(series) {
    while (chart.firstChild) chart.removeChild(chart.firstChild);
    var points = series.timestamps.map(function (t, i) { return [Date.parse(t), series.series[config.station][i]]; })
      .filter(function (p) { return p[1] !== null; });
    document.body.classList.toggle('no-data', points.length === 0);
    plot = null;
    if (points.length === 0) return hide();
    var width = chart.clientWidth || 300, height = chart.clientHeight || 80, bottom = 14, top = 6, right = 4;
    chart.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    var t0 = Date.parse(series.timestamps[0]), t1 = Date.parse(series.timestamps[series.timestamps.length - 1]);
    var values = points.map(function (p) { return p[1]; });
    var lo = Math.min.apply(null, values), hi = Math.max.apply(null, values);
    if (hi - lo < 1e-6 * Math.max(1, Math.abs(hi))) { lo = lo < 0 ? lo - 1 : Math.max(0, lo - 1); hi += 1; }
    var axis = ticks(lo, hi, Math.max(2, Math.floor((height - top - bottom) / 22)));
    lo = axis.values[0]; hi = axis.values[axis.values.length - 1];
    var labels = axis.values.map(function (v) { return el('text', { class: 'tick', 'text-anchor': 'end' }, v.toFixed(axis.digits) + ' ' + config.unit); });
    var left = 6 + Math.max.apply(null, labels.map(function (l) { return l.getComputedTextLength() || l.textContent.length * 6; }));
    var x = function (t) { return left + (t1 === t0 ? 0 : (t - t0) / (t1 - t0)) * (width - left - right); };
    var y = function (v) { return top + (1 - (v - lo) / (hi - lo)) * (height - top - bottom); };
    axis.values.forEach(function (v, i) {
      el('line', { class: 'grid', x1: left, x2: width - right, y1: y(v), y2: y(v) });
      set(labels[i], { x: left - 4, y: y(v) + 3 });
    });
    var shift = new Date(t0).getTimezoneOffset() !== new Date(t1).getTimezoneOffset();
    el('text', { class: 'time', x: left, y: height - 2 }, time(t0, shift));
    el('text', { class: 'time', x: width - right, y: height - 2, 'text-anchor': 'end' }, time(t1, true));
    var d = points.map(function (p, i) { return (i ? 'L' : 'M') + x(p[0]).toFixed(1) + ' ' + y(p[1]).toFixed(1); }).join(' ');
    el('path', { class: 'line', d: d, 'data-points': String(points.length) });
    var mark = el('g', { class: 'mark', visibility: 'hidden' });
    el('line', { y1: top, y2: height - bottom }, undefined, mark);
    plot = { points: points, x: x, y: y, width: width, height: height, digits: axis.digits + 1, mark: mark, dot: el('circle', { r: 3.5 }, undefined, mark) };
    if (readAt !== null) show(nearest(function (p) { return Math.abs(p[0] - readAt); }));
  }
  function nearest(distance) {
    for (var i = 1, best = 0; i < plot.points.length; i++) if (distance(plot.points[i]) < distance(plot.points[best])) best = i;
    return best;
  }
  function show(i) {
    var p = plot.points[i], cx = plot.x(p[0]), cy = plot.y(p[1]);
    plot.index = i; readAt = p[0];
    set(plot.mark, { transform: 'translate(' + cx + ' 0)', visibility: 'visible' });
    plot.dot.setAttribute('cy', cy);
    readout.textContent = ' ' + time(p[0], true);
    var value = readout.insertBefore(document.createElement('b'), readout.firstChild);
    value.textContent = p[1].toFixed(plot.digits) + ' ' + config.unit;
    readout.hidden = false;
    readout.classList.toggle('low', cy < plot.height / 2);
    readout.style.left = Math.max(0, Math.min(plot.width - readout.offsetWidth, cx - readout.offsetWidth / 2)) + 'px';
  }
  function hide() {
    readAt = null; readout.hidden = true;
    if (plot) { plot.index = undefined; plot.mark.setAttribute('visibility', 'hidden'); }
  }
  function point(event) {
    if (!plot) return;
    var box = chart.getBoundingClientRect(), px = (event.clientX - box.left) * plot.width / box.width;
    show(nearest(function (p) { return Math.abs(plot.x(p[0]) - px); }));
  }
  chart.addEventListener('pointermove', point);
  chart.addEventListener('pointerdown', point);
  chart.addEventListener('pointerleave', function (event) { if (event.pointerType === 'mouse') hide(); });
  chart.addEventListener('blur', hide);
  chart.addEventListener('keydown', function (event) {
    var step = { ArrowLeft: -1, ArrowRight: 1, Home: -Infinity, End: Infinity }[event.key];
    if (!plot) return;
    var last = plot.points.length - 1, i = plot.index === undefined ? last + (step === -1 ? 1 : 0) : plot.index;
    if (event.key === 'Escape') hide();
    else if (step) show(Math.max(0, Math.min(last, i + step)));
    else return;
    event.preventDefault();
  });
  function showLatest(reading) {
    var value = document.getElementById('value'), updated = document.getElementById('updated');
    var v = reading && reading[config.param];
    value.textContent = v === null || v === undefined ? '–' : format(v) + ' ';
    if (v !== null && v !== undefined) {
      var unit = document.createElement('small'); unit.textContent = config.unit; value.appendChild(unit);
      if (reading.quality_flag !== 'ok') { var flag = document.createElement('small'); flag.className = 'flag'; flag.textContent = ' ' + reading.quality_flag; value.appendChild(flag); }
    }
    updated.textContent = reading ? 'Latest ' + time(Date.parse(reading.timestamp), true) : 'No readings yet';
    updated.title = reading ? new Date(reading.timestamp).toLocaleString([], { timeZoneName: 'long' }) : '';
    updated.setAttribute('data-timestamp', reading ? reading.timestamp : '');
  }
  function get(path) {
    return fetch(new URL(path, api), { headers: { Accept: 'application/json' } }).then(function (r) { return r.ok ? r.json() : null; });
  }
  function refresh() {
    var q = 'stations=' + encodeURIComponent(config.station) + '&param=' + config.param + '&hours=' + config.hours + '&quality=ok';
    // The buckets on the viewer's clock: an hour of Newfoundland's starts half past a UTC hour.
    try { var zone = Intl.DateTimeFormat().resolvedOptions().timeZone; if (/^[A-Za-z][A-Za-z0-9_+/-]*$/.test(zone || '')) q += '&tz=' + encodeURIComponent(zone); } catch (e) { /* no Intl zone: UTC buckets */ }
    return Promise.all([get('data/compare/?' + q), get('data/latest/?station=' + encodeURIComponent(config.station))])
      .then(function (results) {
        draw(results[0] || { timestamps: [], series: {} });
        showLatest(results[1]);
        document.body.setAttribute('data-refreshed', String(Date.now()));
      })
      .catch(function () { document.body.classList.add('no-data'); });
  }
  refresh();
  setInterval(refresh, config.refreshMs);
  if (window.EventSource) {
    var stream = new EventSource(new URL('data/stream/?stations=' + encodeURIComponent(config.station) + '&param=' + config.param, api));
    stream.addEventListener('ready', function () { document.body.setAttribute('data-live', 'true'); });
    stream.addEventListener('readings', function () { refresh(); });
    stream.onerror = function () { document.body.removeAttribute('data-live'); };
  }
  var resizeTimer;
  window.addEventListener('resize', function () { clearTimeout(resizeTimer); resizeTimer = setTimeout(refresh, 200); });
})();
</script>
</body>
</html>
`;
}
