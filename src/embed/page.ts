import type { WidgetQuery } from './schema.js';
import { widgetUnits } from './schema.js';

const htmlEscapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => htmlEscapes[c]!);

/** JSON that is safe inside a <script> element: no `<`, so no `</script>` or `<!--`. */
const scriptJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c').replace(/\u2028|\u2029/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);

export const themes = {
  dark: { bg: '#0f172a', fg: '#e2e8f0', muted: '#94a3b8', grid: '#334155', line: '#38bdf8' },
  light: { bg: '#ffffff', fg: '#0f172a', muted: '#475569', grid: '#e2e8f0', line: '#0369a1' },
};

/**
 * The widget page: inline CSS and script under a nonce, no other host. The script draws the mean of the
 * station's ok readings per bucket (from /data/compare/, suspect and invalid readings left out) as an
 * SVG line, shows the latest reading (from /data/latest/) in the viewer's local time, and refreshes: at
 * once when the live stream (/data/stream/) announces a new reading, and every refresh interval besides.
 */
export function widgetPage(args: { stationId: string; stationName: string; query: WidgetQuery; nonce: string }): string {
  const { query, nonce } = args;
  const theme = themes[query.theme];
  const { label, unit } = widgetUnits[query.param];
  const config = { station: args.stationId, param: query.param, hours: query.hours, refreshMs: query.refresh * 1000, unit };
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(args.stationName)}: ${escapeHtml(label)}</title>
<style nonce="${nonce}">
*{box-sizing:border-box}html,body{margin:0;height:100%}
body{background:${theme.bg};color:${theme.fg};font:12px/1.3 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;display:flex;flex-direction:column;padding:6px 8px;min-height:150px}
header{display:flex;justify-content:space-between;align-items:baseline;gap:8px}
h1{font-size:13px;font-weight:600;margin:0;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.value{font-size:18px;font-weight:700;white-space:nowrap}.value small{font-size:11px;font-weight:400;color:${theme.muted}}
.meta{color:${theme.muted};font-size:11px;display:flex;justify-content:space-between;gap:8px;white-space:nowrap}
.meta span{overflow:hidden;text-overflow:ellipsis}
.flag{color:#f59e0b}
svg{flex:1;width:100%;min-height:60px;display:block}
svg text{fill:${theme.muted};font-size:10px}
.grid{stroke:${theme.grid};stroke-width:1}
.line{fill:none;stroke:${theme.line};stroke-width:2;stroke-linejoin:round;stroke-linecap:round;vector-effect:non-scaling-stroke}
.empty{display:none;flex:1;align-items:center;justify-content:center;color:${theme.muted}}
body.no-data .empty{display:flex}body.no-data svg{display:none}
</style>
</head>
<body>
<header><h1 title="${escapeHtml(args.stationName)}">${escapeHtml(args.stationName)}</h1><div class="value" id="value">–</div></header>
<div class="meta"><span>${escapeHtml(label)}, last ${query.hours} h</span><span id="updated"></span></div>
<svg id="chart" role="img" aria-label="${escapeHtml(label)} over the last ${query.hours} hours"></svg>
<div class="empty" id="empty">No recent data</div>
<script type="application/json" id="config">${scriptJson(config)}</script>
<script nonce="${nonce}">
(function () {
  var config = JSON.parse(document.getElementById('config').textContent);
  var api = new URL('../../../api/v1/', location.href);
  var svgNs = 'http://www.w3.org/2000/svg';
  var chart = document.getElementById('chart');
  function el(name, attrs, text) {
    var node = document.createElementNS(svgNs, name);
    for (var key in attrs) node.setAttribute(key, attrs[key]);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function format(value) { return Math.abs(value) >= 100 ? value.toFixed(0) : value.toFixed(1); }
  function time(iso) { return new Date(iso).toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }); }
  function draw(series) {
    while (chart.firstChild) chart.removeChild(chart.firstChild);
    var points = series.timestamps.map(function (t, i) { return [Date.parse(t), series.series[config.station][i]]; })
      .filter(function (p) { return p[1] !== null; });
    document.body.classList.toggle('no-data', points.length === 0);
    if (points.length === 0) return;
    var width = chart.clientWidth || 300, height = chart.clientHeight || 80, left = 34, bottom = 14, top = 8, right = 4;
    chart.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    var t0 = Date.parse(series.timestamps[0]), t1 = Date.parse(series.timestamps[series.timestamps.length - 1]);
    var values = points.map(function (p) { return p[1]; });
    var lo = Math.min.apply(null, values), hi = Math.max.apply(null, values);
    if (hi - lo < 1e-9) { lo -= 1; hi += 1; }
    var x = function (t) { return left + (t1 === t0 ? 0 : (t - t0) / (t1 - t0)) * (width - left - right); };
    var y = function (v) { return top + (1 - (v - lo) / (hi - lo)) * (height - top - bottom); };
    [lo, (lo + hi) / 2, hi].forEach(function (v) {
      chart.appendChild(el('line', { class: 'grid', x1: left, x2: width - right, y1: y(v), y2: y(v) }));
      chart.appendChild(el('text', { x: left - 4, y: y(v) + 3, 'text-anchor': 'end' }, format(v)));
    });
    chart.appendChild(el('text', { x: left, y: height - 2 }, time(series.timestamps[0])));
    chart.appendChild(el('text', { x: width - right, y: height - 2, 'text-anchor': 'end' }, time(series.timestamps[series.timestamps.length - 1])));
    var d = points.map(function (p, i) { return (i ? 'L' : 'M') + x(p[0]).toFixed(1) + ' ' + y(p[1]).toFixed(1); }).join(' ');
    chart.appendChild(el('path', { class: 'line', d: d, 'data-points': String(points.length) }));
  }
  function showLatest(reading) {
    var value = document.getElementById('value'), updated = document.getElementById('updated');
    var v = reading && reading[config.param];
    value.textContent = v === null || v === undefined ? '–' : format(v) + ' ';
    if (v !== null && v !== undefined) {
      var unit = document.createElement('small'); unit.textContent = config.unit; value.appendChild(unit);
      if (reading.quality_flag !== 'ok') { var flag = document.createElement('small'); flag.className = 'flag'; flag.textContent = ' ' + reading.quality_flag; value.appendChild(flag); }
    }
    updated.textContent = reading ? 'Latest ' + time(reading.timestamp) : 'No readings yet';
    updated.title = reading ? new Date(reading.timestamp).toLocaleString() : '';
    updated.setAttribute('data-timestamp', reading ? reading.timestamp : '');
  }
  function get(path) {
    return fetch(new URL(path, api), { headers: { Accept: 'application/json' } }).then(function (r) { return r.ok ? r.json() : null; });
  }
  function refresh() {
    var q = 'stations=' + encodeURIComponent(config.station) + '&param=' + config.param + '&hours=' + config.hours + '&quality=ok';
    return Promise.all([get('data/compare/?' + q), get('data/latest/?station=' + encodeURIComponent(config.station))])
      .then(function (results) {
        draw(results[0] || { timestamps: [], series: {} });
        showLatest(results[1]);
        document.body.setAttribute('data-refreshed', String(Date.now()));
      })
      .catch(function () { document.body.classList.add('no-data'); });
  }
  refresh();
  // Polling every refresh interval always runs, so the chart keeps moving where the live stream cannot
  // stay open (an old browser, a proxy that buffers); where it can, a new reading redraws it at once.
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
