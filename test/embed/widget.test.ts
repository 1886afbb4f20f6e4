import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import http from 'node:http';
import { chromium, type Browser, type FrameLocator, type Page } from 'playwright-core';
import { widgetParams, widgetUnits } from '../../src/embed/schema.js';
import { readingFields } from '../../src/readings/reading.js';
import { storeReadings } from '../../src/readings/ingest/store.js';
import { upsertStation } from '../../src/stations/queries.js';
import { describeEngines } from '../helpers/app.js';
import { postBatch, stationWithKey } from '../helpers/ingest.js';
import { makeReadings } from '../helpers/readings.js';

const chromiumPath = '/usr/bin/chromium';
// Minutes before one anchor, taken when each test (and the data hook) starts: a reading written "22
// minutes ago" must still be that when the test looks for it on the page.
let anchor = 0;
const anchorNow = () => {
  anchor = Math.floor(Date.now() / 60_000) * 60_000;
};
const minutesAgo = (m: number) => new Date(anchor - m * 60_000).toISOString();

/** Text as a person reads it: any run of spaces (ICU writes U+202F before AM and PM) as one. */
const spaced = (text: string | null) => (text ?? '').replace(/\s+/g, ' ').trim();
/** How en-US writes `timeZone`'s short name at `at` ('EST', 'GMT+5:30'), and a time of day there. */
const zoneName = (timeZone: string, at: string) =>
  new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'short' }).formatToParts(Date.parse(at)).find((p) => p.type === 'timeZoneName')!.value;
const hourMinute = (timeZone: string, at: string) =>
  spaced(new Intl.DateTimeFormat('en-US', { timeZone, hour: '2-digit', minute: '2-digit' }).format(Date.parse(at)));

/**
 * The y axis's tick labels: distinct, each carrying the unit, round (multiples of one step of 1, 2 or
 * 5 × 10^k, written with no more decimals than that step needs) and evenly spaced. Their values, in order.
 */
async function roundTicks(frame: FrameLocator, unit: string): Promise<number[]> {
  const labels = await frame.locator('text.tick').allTextContents();
  assert.ok(labels.length >= 2, `${labels.length} ticks: ${labels.join(' / ')}`);
  assert.equal(new Set(labels).size, labels.length, `distinct ticks: ${labels.join(' / ')}`);
  const numbers = labels.map((label) => {
    assert.ok(label.endsWith(` ${unit}`), `tick '${label}' carries the unit ${unit}`);
    const number = label.slice(0, -unit.length - 1);
    assert.match(number, /^-?\d+(\.\d+)?$/, label);
    return number;
  });
  const values = numbers.map(Number).sort((a, b) => a - b);
  const step = values[1]! - values[0]!;
  const power = 10 ** Math.floor(Math.log10(step) + 1e-9);
  assert.ok([1, 2, 5].some((m) => Math.abs(step / power - m) < 1e-6), `step ${step} of ${labels.join(' / ')} is 1, 2 or 5 × 10^k`);
  for (const [i, value] of values.entries()) {
    assert.ok(Math.abs(value / step - Math.round(value / step)) < 1e-6, `${value} is a multiple of ${step}`);
    if (i > 0) assert.ok(Math.abs(value - values[i - 1]! - step) < step * 1e-6, `even ticks: ${labels.join(' / ')}`);
  }
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  for (const number of numbers) assert.ok((number.split('.')[1] ?? '').length <= decimals, `'${number}' is written round for a step of ${step}`);
  return values;
}

describeEngines('GET /embed/station/{station_id}/', (env) => {
  beforeEach(anchorNow);
  before(async () => {
    anchorNow();
    await upsertStation(env().db.pool, {
      station_id: 'emb-01', name: 'Col <b>"Lautaret"</b> & co', location_name: 'Alps', altitude_m: 2058, latitude: 45, longitude: 6, status: 'active',
    });
    const readings = makeReadings(24 * 60, minutesAgo(24 * 60 - 1), 1, 9).map((r, i) => ({ ...r, temperature_c: 5 + 5 * Math.sin(i / 200), quality_flag: 'ok' as const }));
    await storeReadings(env().db, 'emb-01', readings);
  });

  it('serves a self-contained page that may be framed anywhere, with a strict CSP', async () => {
    const response = await env().get('/embed/station/emb-01/');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(response.headers.get('x-frame-options'), null);
    const csp = response.headers.get('content-security-policy') ?? '';
    assert.match(csp, /frame-ancestors \*/);
    assert.match(csp, /default-src 'none'/);
    const nonce = /script-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
    assert.ok(nonce, csp);
    assert.match(csp, /connect-src 'self'/);
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(response.headers.get('access-control-allow-origin'), '*');
    const html = await response.text();
    assert.ok(html.length < 12_000, `${html.length} bytes`);
    assert.doesNotMatch(html, /(src|href)=["']?https?:/, 'no external host');
    assert.ok(html.includes('Col &lt;b&gt;&quot;Lautaret&quot;&lt;/b&gt; &amp; co'), 'the station name is escaped');
    assert.ok(!html.includes('<b>"Lautaret"'));
    const scripts = html.match(/<script(?![^>]*application\/json)[^>]*>/g) ?? [];
    assert.ok(scripts.length > 0 && scripts.every((s) => s.includes(`nonce="${nonce}"`)), 'every script runs by nonce');
    const second = await env().get('/embed/station/emb-01/');
    assert.notEqual(/nonce-([^']+)/.exec(second.headers.get('content-security-policy') ?? '')?.[1], nonce, 'a fresh nonce per response');
  });

  it('validates its parameters: 400 for an unknown value, clamped hours, 404 for an unknown station', async () => {
    const asJson = { headers: { Accept: 'application/problem+json' } };
    const badResponse = await env().get('/embed/station/emb-01/?param=wind&theme=pink', asJson);
    const bad = { status: badResponse.status, body: (await badResponse.json()) as { errors: unknown } };
    assert.equal(badResponse.headers.get('content-type'), 'application/problem+json');
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.errors, [
      { param: 'param', message: 'must be one of temperature_c, humidity_rh, pressure_hpa, pm2_5, co2_ppm' },
      { param: 'theme', message: 'must be one of dark, light' },
    ]);
    const clamped = await (await env().get('/embed/station/emb-01/?hours=999')).text();
    assert.ok(clamped.includes('last 168 h'));
    assert.ok(clamped.includes('"hours":168'));
    const low = await (await env().get('/embed/station/emb-01/?hours=0&param=pm2_5&theme=light')).text();
    assert.ok(low.includes('last 1 h') && low.includes('"param":"pm2_5"') && low.includes('#ffffff'));
    assert.ok(low.includes('"unit":"µg/m³"'), 'the unit goes to the page');
    // Units come from the readings' own table; an axis shows a symbol, not the words after it.
    for (const param of widgetParams) assert.equal(widgetUnits[param].unitName, readingFields.find((f) => f.name === param)!.unit);
    assert.deepEqual(widgetParams.map((p) => widgetUnits[p].unit), ['°C', '%', 'hPa', 'µg/m³', 'ppm']);
    assert.equal((await env().get('/embed/station/emb-01/?hours=abc')).status, 400);
    const missingResponse = await env().get('/embed/station/nowhere-1/', asJson);
    assert.equal(missingResponse.status, 404);
    assert.equal(((await missingResponse.json()) as { detail: string }).detail, "station 'nowhere-1' is unknown");
    assert.equal((await env().get('/embed/station/%3Cscript%3E/')).status, 400);
  });

  it('shows an unknown station or parameter to the person in the iframe as a small page in its style, status kept', async () => {
    // What an iframe sends, and what a plain fetch or curl sends.
    for (const accept of ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', '*/*']) {
      const missing = await env().get('/embed/station/nowhere-1/?theme=light', { headers: { Accept: accept } });
      assert.equal(missing.status, 404);
      assert.equal(missing.headers.get('content-type'), 'text/html; charset=utf-8');
      assert.equal(missing.headers.get('access-control-allow-origin'), '*');
      assert.equal(missing.headers.get('x-frame-options'), null, 'the error page may be framed like the widget');
      const policy = missing.headers.get('content-security-policy') ?? '';
      const nonce = /style-src 'nonce-([^']+)'/.exec(policy)?.[1];
      assert.ok(nonce && policy.includes('frame-ancestors *'), policy);
      const page = await missing.text();
      assert.ok(page.startsWith('<!doctype html>'));
      assert.ok(page.includes('<h1>Not Found (404)</h1>'), page);
      assert.ok(page.includes('station &#39;nowhere-1&#39; is unknown'), page);
      assert.ok(page.includes(`<style nonce="${nonce}">`) && page.includes('#ffffff'), 'inline style by nonce, in the light theme asked for');
      assert.doesNotMatch(page, /<script/);
    }
    const bad = await env().get('/embed/station/emb-01/?param=wind&hours=abc');
    assert.equal(bad.status, 400);
    assert.equal(bad.headers.get('content-type'), 'text/html; charset=utf-8');
    const page = await bad.text();
    assert.ok(page.includes('<h1>Invalid parameters (400)</h1>') && page.includes('#0f172a'), page);
    assert.ok(page.includes('<li><code>param</code> must be one of temperature_c, humidity_rh, pressure_hpa, pm2_5, co2_ppm</li>'), page);
    assert.ok(page.includes('<li><code>hours</code> must be a whole number</li>'), page);
    const hostile = await (await env().get('/embed/station/%3Cscript%3Ealert(1)%3C%2Fscript%3E/')).text();
    assert.doesNotMatch(hostile, /<script>alert/, 'what the request sent is escaped');
  });

  describe('in a real browser', function () {
    let browser: Browser | undefined;
    let parent: http.Server | undefined;
    let parentUrl = '';
    before(async function () {
      if (!existsSync(chromiumPath)) throw new Error(`${chromiumPath} is missing: install Debian's chromium package (make test and .ci/run do)`);
      browser = await chromium.launch({
        executablePath: chromiumPath,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
      });
      // A partner's page on another origin (another port) that embeds the widget.
      parent = http.createServer((req, res) => {
        const src = `${env().origin}${decodeURIComponent(new URL(req.url!, 'http://x').searchParams.get('src') ?? '')}`;
        res.writeHead(200, { 'Content-Type': 'text/html' });
        res.end(`<!doctype html><body style="margin:0;background:#888"><iframe id="w" src="${src}" width="300" height="150" style="border:0"></iframe></body>`);
      });
      await new Promise<void>((resolve) => parent!.listen(0, '127.0.0.1', resolve));
      parentUrl = `http://localhost:${(parent.address() as { port: number }).port}/`;
    });
    after(async () => {
      await browser?.close();
      await new Promise((resolve) => parent?.close(resolve));
    });

    // Dark: the live stream redraws the chart long before its one-minute polling would. Light: the stream
    // is blocked, and polling every 2 s still picks the reading up.
    // Each in a viewer's time zone other than the machine's: one with a half-hour offset, one with an abbreviation.
    for (const [theme, how, timezoneId] of [['dark', 'stream', 'Asia/Kolkata'], ['light', 'polling', 'America/New_York']] as const) {
      it(`draws the readings in a 300x150 iframe on another origin and picks up new readings by ${how} (${theme})`, async function () {
        this.timeout(60_000);
        const key = await stationWithKey(env(), `emb-${theme}`);
        await postBatch(env(), key, { station_id: `emb-${theme}`, readings: Array.from({ length: 90 }, (_, i) => ({ timestamp: minutesAgo(200 - i * 2), temperature_c: 10 + Math.sin(i / 9) * 4 })) });
        const page = await browser!.newPage({ viewport: { width: 320, height: 170 }, locale: 'en-US', timezoneId });
        const errors: string[] = [];
        // With the stream blocked, the browser reports each failed attempt at it: that is the point.
        page.on('console', (m) => m.type() === 'error' && !(how === 'polling' && /ERR_FAILED|data\/stream/.test(m.text())) && errors.push(m.text()));
        if (how === 'polling') await page.route('**/api/v1/data/stream/**', (route) => route.abort());
        const refresh = how === 'stream' ? 60 : 2;
        await page.goto(`${parentUrl}?src=${encodeURIComponent(`/embed/station/emb-${theme}/?theme=${theme}&hours=6&refresh=${refresh}`)}`);
        const frame = page.frameLocator('#w');
        await frame.locator('path.line').waitFor({ timeout: 15_000 });
        const points = Number(await frame.locator('path.line').getAttribute('data-points'));
        assert.ok(points >= 80, `${points} points drawn`);
        assert.match((await frame.locator('#value').textContent()) ?? '', /^\d+\.\d °C$/);
        const shown = await frame.locator('#updated').getAttribute('data-timestamp');
        assert.equal(shown, minutesAgo(22));
        mkdirSync('test/out', { recursive: true });
        await page.screenshot({ path: `test/out/widget-${theme}-${env().engine}.png` });

        // The y axis: round ticks in °C around the readings (10 ± 4 °C).
        const ticks = await roundTicks(frame, '°C');
        assert.ok(ticks[0]! <= 6.01 && ticks.at(-1)! >= 13.99, `ticks ${ticks.join(', ')} span the readings`);
        // The time axis and the latest reading name the viewer's zone.
        const zone = zoneName(timezoneId, minutesAgo(22));
        const times = (await frame.locator('text.time').allTextContents()).map(spaced);
        assert.equal(times.length, 2);
        assert.notEqual(times[0], times[1]);
        assert.ok(times[1]!.endsWith(` ${zone}`), `time axis ${times.join(' … ')} names ${zone}`);
        assert.ok(spaced(await frame.locator('#updated').textContent()).endsWith(` ${zone}`));
        // Pointing at the chart reads the nearest bucket: at its right end, the latest reading's (22 minutes ago).
        const chart = frame.locator('#chart');
        const box = (await chart.boundingBox())!;
        const readout = frame.locator('#readout');
        assert.equal(await readout.isVisible(), false);
        await chart.hover({ position: { x: box.width - 2, y: box.height / 2 } });
        await readout.waitFor({ state: 'visible', timeout: 5_000 });
        const reading = (i: number) => `${(10 + Math.sin(i / 9) * 4).toFixed(1)} °C`;
        const latest = spaced(await readout.textContent());
        assert.ok(latest.startsWith(`${reading(89)} `) && latest.includes(hourMinute(timezoneId, minutesAgo(22))) && latest.endsWith(` ${zone}`), latest);
        assert.equal(await readout.locator('b').textContent(), reading(89), 'value and unit stand out');
        await chart.hover({ position: { x: box.width / 2, y: box.height / 2 } });
        const middle = spaced(await readout.textContent());
        assert.ok(/^\d+\.\d °C \S/.test(middle) && middle.endsWith(` ${zone}`) && middle !== latest, middle);
        await page.screenshot({ path: `test/out/widget-${theme}-readout-${env().engine}.png` });
        // Off the chart, onto the header: the readout goes.
        await page.mouse.move(150, 8, { steps: 5 });
        await readout.waitFor({ state: 'hidden', timeout: 5_000 });
        // And the keyboard: End is the latest bucket, each ArrowLeft the one before (a reading every 2 minutes), Escape closes.
        await chart.focus();
        await page.keyboard.press('End');
        assert.equal(spaced(await readout.textContent()), latest);
        await page.keyboard.press('ArrowLeft');
        const before = spaced(await readout.textContent());
        assert.ok(before.startsWith(`${reading(88)} `) && before.includes(hourMinute(timezoneId, minutesAgo(24))), before);
        await page.keyboard.press('Escape');
        assert.equal(await readout.isVisible(), false);

        // A new reading arrives: the stream, or the next refresh, shows it without reloading the page.
        if (how === 'stream') await frame.locator('body[data-live="true"]').waitFor({ timeout: 10_000 });
        await postBatch(env(), key, { station_id: `emb-${theme}`, readings: [{ timestamp: minutesAgo(1), temperature_c: 21.25 }] });
        await frame.locator('#updated[data-timestamp="' + minutesAgo(1) + '"]').waitFor({ timeout: 10_000 });
        assert.equal(await frame.locator('#value').textContent(), '21.3 °C');
        assert.deepEqual(errors, []);
        await page.close();
      });
    }

    it('shows a clear "no recent data" state', async function () {
      this.timeout(30_000);
      await stationWithKey(env(), 'emb-empty');
      const page = await browser!.newPage({ viewport: { width: 320, height: 170 } });
      await page.goto(`${parentUrl}?src=${encodeURIComponent('/embed/station/emb-empty/')}`);
      const frame = page.frameLocator('#w');
      await frame.locator('body.no-data').waitFor({ timeout: 10_000 });
      assert.equal(await frame.locator('#empty').isVisible(), true);
      assert.equal(await frame.locator('#updated').textContent(), 'No readings yet');
      await page.close();
    });

    it('puts round, distinct ticks with the unit on a narrow range and on another metric', async function () {
      this.timeout(30_000);
      const key = await stationWithKey(env(), 'emb-hpa');
      // Pressure within half a hectopascal: ticks rounded to whole hPa would all read 795.
      await postBatch(env(), key, { station_id: 'emb-hpa', readings: Array.from({ length: 60 }, (_, i) => ({
        timestamp: minutesAgo(120 - i * 2), pressure_hpa: 795.05 + 0.4 * (i / 59), humidity_rh: 40 + (i % 7) * 3.3,
      })) });
      const page = await browser!.newPage({ viewport: { width: 320, height: 170 } });
      for (const [param, unit, lo, hi] of [['pressure_hpa', 'hPa', 795.05, 795.45], ['humidity_rh', '%', 40, 59.8]] as const) {
        await page.goto(`${parentUrl}?src=${encodeURIComponent(`/embed/station/emb-hpa/?param=${param}&hours=3&theme=light`)}`);
        const frame = page.frameLocator('#w');
        await frame.locator('path.line').waitFor({ timeout: 15_000 });
        const ticks = await roundTicks(frame, unit);
        assert.ok(ticks[0]! <= lo && ticks.at(-1)! >= hi, `${param}: ticks ${ticks.join(', ')} span ${lo}..${hi}`);
        assert.ok(ticks.length <= 6, `${ticks.length} ticks fit 150 px`);
        // The readout is a decimal finer than the ticks: the latest pressure is 795.45, not "795".
        const box = (await frame.locator('#chart').boundingBox())!;
        await frame.locator('#chart').hover({ position: { x: box.width - 2, y: box.height / 2 } });
        if (param === 'pressure_hpa') assert.equal(await frame.locator('#readout b').textContent(), '795.45 hPa');
        else assert.match((await frame.locator('#readout b').textContent()) ?? '', /^\d+\.\d %$/);
        mkdirSync('test/out', { recursive: true });
        await page.screenshot({ path: `test/out/widget-${param}-${env().engine}.png` });
      }
      await page.close();
    });

    it('declares its icon, so that a browser showing it on its own asks for no /favicon.ico', async function () {
      this.timeout(30_000);
      // The browser asks for a favicon itself, unseen by the page's request events: a proxy in front of the
      // app records what reaches it. At /plain it answers a page that declares no icon, the control.
      const asked: string[] = [];
      const proxy = http.createServer((req, res) => {
        asked.push(new URL(req.url!, 'http://x').pathname);
        if (req.url === '/plain') return void res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><p>No icon here');
        const upstream = http.request(`${env().origin}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(res);
        });
        upstream.on('error', () => res.destroy());
        res.on('close', () => upstream.destroy());
        req.pipe(upstream);
      });
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
      const origin = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
      const page: Page = await browser!.newPage({ viewport: { width: 320, height: 170 } });
      const requested: string[] = [];
      page.on('request', (r) => requested.push(new URL(r.url()).pathname));
      const errors: string[] = [];
      page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
      const icons: (string | null)[] = [];
      const icon = async () => icons.push((await page.locator('link[rel="icon"]').count()) ? await page.locator('link[rel="icon"]').getAttribute('href') : null);
      try {
        for (const theme of ['dark', 'light']) {
          await page.goto(`${origin}/embed/station/emb-01/?theme=${theme}`);
          await page.locator('path.line').waitFor({ timeout: 15_000 });
          await icon();
        }
        await page.goto(`${origin}/embed/station/nowhere-9/`);
        assert.equal(await page.locator('h1').textContent(), 'Not Found (404)');
        await icon();
        await page.goto(`${origin}/plain`);
        for (const start = Date.now(); !asked.includes('/favicon.ico') && Date.now() - start < 10_000;) await page.waitForTimeout(100);
        assert.ok(asked.includes('/favicon.ico'), `the control: a page with no icon makes the browser ask for one (${asked.join(' ')})`);
        assert.equal(asked.filter((p) => p === '/favicon.ico').length, 1, asked.join(' '));
        assert.ok(asked.indexOf('/favicon.ico') > asked.indexOf('/plain'), `only after /plain: ${asked.join(' ')}`);
        assert.deepEqual(requested.filter((p) => p === '/favicon.ico'), []);
        assert.deepEqual(icons, ['data:,', 'data:,', 'data:,'], 'the widget in both themes and its error page declare the icon');
        // The icon is allowed by the CSP (img-src data:): no violation, and the widget logged no error.
        assert.deepEqual(errors.filter((e) => !/status of 404/.test(e)), []);
      } finally {
        await page.close();
        proxy.closeAllConnections();
        await new Promise((resolve) => proxy.close(resolve));
      }
    });

    it('shows a wrong station or parameter as a readable page inside the iframe, styles applied under its CSP', async function () {
      this.timeout(30_000);
      const page = await browser!.newPage({ viewport: { width: 320, height: 170 } });
      const errors: string[] = [];
      page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
      await page.goto(`${parentUrl}?src=${encodeURIComponent('/embed/station/nowhere-9/?param=wind')}`);
      const frame = page.frameLocator('#w');
      await frame.locator('h1').waitFor({ timeout: 10_000 });
      assert.equal(await frame.locator('h1').textContent(), 'Invalid parameters (400)');
      assert.match((await frame.locator('li').first().textContent()) ?? '', /^param must be one of temperature_c/);
      // The nonce'd style applied: the dark theme's background, not the browser's white.
      assert.equal(await frame.locator('body').evaluate((b) => (globalThis as unknown as { getComputedStyle: (e: unknown) => { backgroundColor: string } }).getComputedStyle(b).backgroundColor), 'rgb(15, 23, 42)');
      // The browser reports the frame's 400 itself; nothing else (no CSP violation) may be logged.
      assert.deepEqual(errors.filter((e) => !/status of 400/.test(e)), []);
      mkdirSync('test/out', { recursive: true });
      await page.screenshot({ path: `test/out/widget-error-${env().engine}.png` });
      await page.close();
    });
  });
});
