import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Cite } from '@citation-js/core';
import '@citation-js/plugin-ris';
import { check as checkGeoJson } from '@placemarkio/check-geojson';
import { sql } from 'slonik';
import { z } from 'zod';
import { importContent, parseContentFile } from '../../src/content/importContent.js';
import { parseChangelog } from '../../src/meta/changelog.js';
import { recordOverride } from '../../src/readings/operator/overrides.js';
import { deleteReadings } from '../../src/readings/operator/removal.js';
import { storeReadings } from '../../src/readings/ingest/store.js';
import { describeEngines } from '../helpers/app.js';
import { postBatch, stationWithKey } from '../helpers/ingest.js';
import { lines, runCli, runCommand } from '../helpers/cli.js';
import { addStation, makeReadings } from '../helpers/readings.js';

const demoFile = path.resolve('src/content/demoContent.json');
const demo = JSON.parse(readFileSync(demoFile, 'utf8'));
const tmp = mkdtempSync(path.join(os.tmpdir(), 'envmon-content-'));
const writeJson = (name: string, value: unknown) => {
  const file = path.join(tmp, name);
  writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value));
  return file;
};

/** Many notes and publications for pagination, on top of the demo file. */
function bulkContent(notes: number, publications: number) {
  return {
    notes: Array.from({ length: notes }, (_, i) => ({
      slug: `bulk-note-${String(i).padStart(3, '0')}`, title: `Bulk note ${i}`, note_type: i % 2 ? 'build' : 'analysis',
      date: new Date(Date.UTC(2024, 0, 1 + i)).toISOString().slice(0, 10), summary: `Summary ${i}`,
      ...(i % 3 === 0 ? { latitude: 45 + i / 100, longitude: 5 + i / 100 } : {}), programmes: i % 4 === 0 ? ['urban-air'] : [],
    })),
    publications: Array.from({ length: publications }, (_, i) => ({
      id: 100 + i, title: `Bulk publication ${i}`, authors: 'Doe, Jane', year: 2000 + (i % 10), pub_type: 'report', provenance: 'affiliate',
    })),
  };
}

const countRow = z.object({ n: z.number() });

describeEngines('envmon import', (env) => {
  it('imports the content file, and a second import changes nothing', async () => {
    const settings = { DATABASE_URL: env().databaseUrl };
    const first = await runCli(['import', demoFile], settings);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(lines(first.stdout), [
      `imported ${demoFile}: instruments 4 created, 0 updated; team 5 created, 0 updated; research 3 created, 0 updated; ` +
        'education 3 created, 0 updated; notes 6 created, 0 updated; publications 6 created, 0 updated',
    ]);
    const snapshot = () => env().db.pool.anyFirst(sql.type(z.object({ row: z.string() }))`
      select t::text as row from (
        select 'n', to_jsonb(n) - 'search' from notes n union all select 'p', to_jsonb(p) - 'search' from publications p
        union all select 'np', to_jsonb(x) from note_programmes x union all select 'pa', to_jsonb(x) from publication_authors x
        union all select 'pt', to_jsonb(x) from programme_team x union all select 'tm', to_jsonb(t) - 'search' from team_members t
      ) t order by 1`);
    const before = await snapshot();
    const again = await runCli(['import', demoFile], settings);
    assert.match(again.stdout, /instruments 0 created, 0 updated; team 0 created, 0 updated; research 0 created, 0 updated; education 0 created, 0 updated; notes 0 created, 0 updated; publications 0 created, 0 updated/);
    assert.deepEqual(await snapshot(), before);
    // An edit updates one record and moves one link.
    const edited = structuredClone(demo);
    edited.notes[0].title = 'Mast reinstalled after the storm of October';
    edited.notes[0].programmes = ['coastal-fog'];
    const third = await runCli(['import', writeJson('edited.json', edited)], settings);
    assert.match(third.stdout, /notes 0 created, 1 updated/);
    const { body } = await env().getJson('/api/v1/notes/mast-reinstalled-after-storm/');
    assert.equal(body.title, 'Mast reinstalled after the storm of October');
    assert.deepEqual(body.programmes.map((p: { slug: string }) => p.slug), ['coastal-fog']);
    await runCli(['import', demoFile], settings);
  });

  it('refuses a bad file whole, naming the JSON path of every error', async () => {
    const bad = {
      notes: [
        { slug: 'ok-note', title: 'Fine', note_type: 'field', date: '2026-01-01' },
        { slug: 'Bad Slug', title: '', note_type: 'diary', date: '2026-13-01', colour: 'red' },
        { slug: 'ok-note', title: 'Twice', note_type: 'field', date: '2026-01-02' },
      ],
      publications: [{ id: 0, title: 'x', authors: 'y', year: 2026, pub_type: 'book', provenance: 'own', doi: 'nope' }],
    };
    const result = await runCli(['import', writeJson('bad.json', bad)], { DATABASE_URL: env().databaseUrl });
    assert.equal(result.code, 2);
    assert.deepEqual(lines(result.stderr), [
      'envmon: the content file has 8 errors:',
      'notes[1].slug: must be a slug: lowercase letters, digits and dashes',
      'notes[1].title: must not be empty',
      "notes[1].note_type: Invalid enum value. Expected 'field' | 'build' | 'observation' | 'analysis' | 'experiment', received 'diary'",
      'notes[1].date: must be a date that exists, as YYYY-MM-DD',
      "notes[1]: Unrecognized key(s) in object: 'colour'",
      'publications[0].id: Number must be greater than 0',
      "publications[0].pub_type: Invalid enum value. Expected 'peer-reviewed' | 'preprint' | 'report' | 'data-paper' | 'public-writing', received 'book'",
      'publications[0].doi: must be a DOI like 10.1234/abc',
    ]);
    // A link readers follow on the website and in RIS is http or https, never a script.
    for (const url of ['javascript:alert(1)', 'data:text/html,<b>x</b>', 'ftp://example.org/paper.pdf']) {
      assert.throws(
        () => parseContentFile({ publications: [{ id: 78, title: 't', authors: 'a', year: 2026, pub_type: 'report', provenance: 'own', open_access_url: url }] }),
        /publications\[0\]\.open_access_url: must be an http or https URL/, url,
      );
    }
    const dupes = parseContentFile.bind(null, { notes: [bad.notes[0], bad.notes[2]] });
    assert.throws(dupes, /notes\[1\]: slug "ok-note" appears twice/);
    // A valid record beside a broken reference: nothing at all is stored.
    const refs = {
      instruments: [{ slug: 'new-instrument', name: 'New' }],
      research: [{ slug: 'new-programme', title: 'New', status: 'planned', instruments: ['new-instrument', 'ghost-instrument'], team: [] }],
      publications: [{ id: 77, title: 't', authors: 'a', year: 2026, pub_type: 'report', provenance: 'own', linked_authors: [{ team: 'ghost' }] }],
    };
    const refResult = await runCli(['import', writeJson('refs.json', refs)], { DATABASE_URL: env().databaseUrl });
    assert.equal(refResult.code, 2);
    assert.deepEqual(lines(refResult.stderr).slice(1), [
      'research[0].instruments[1]: no instrument with slug "ghost-instrument"',
      'publications[0].linked_authors[0].team: no team member with slug "ghost"',
    ]);
    assert.equal(await env().db.pool.oneFirst(sql.type(countRow)`select count(*)::int as n from instruments where slug = 'new-instrument'`), 0);
    const notJson = await runCli(['import', writeJson('broken.json', '{"notes": [')], { DATABASE_URL: env().databaseUrl });
    assert.equal(notJson.code, 2);
    assert.match(notJson.stderr, /^envmon: the content file has 1 error:\n\(file\): not valid JSON/);
  });
});

describeEngines('content API', (env) => {
  before(async () => {
    await importContent(env().db.pool, parseContentFile(demo));
    await importContent(env().db.pool, parseContentFile(bulkContent(45, 30)));
  });

  it('lists notes newest first, 20 a page, with absolute next/previous and a Link header', async () => {
    const first = await env().get('/api/v1/notes/');
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const body = (await first.json()) as any;
    assert.equal(body.count, 51);
    assert.equal(body.page, 1);
    assert.equal(body.total_pages, 3);
    assert.equal(body.results.length, 20);
    assert.equal(body.previous, null);
    assert.equal(body.next, 'http://envmon.test/api/v1/notes/?page=2');
    assert.equal(first.headers.get('link'), '<http://envmon.test/api/v1/notes/?page=2>; rel="next"');
    const dates = body.results.map((n: { date: string }) => n.date);
    assert.deepEqual(dates, [...dates].sort().reverse());
    const note = body.results[0];
    assert.deepEqual(Object.keys(note), ['slug', 'title', 'note_type', 'date', 'location', 'summary', 'latitude', 'longitude', 'altitude_m', 'tags', 'url', 'api_url', 'programmes']);
    assert.equal(note.slug, 'mast-reinstalled-after-storm');
    assert.equal(note.url, 'http://envmon.test/notes/mast-reinstalled-after-storm/');
    assert.equal(note.api_url, 'http://envmon.test/api/v1/notes/mast-reinstalled-after-storm/');
    assert.deepEqual(note.programmes, [{ slug: 'alpine-observatory', title: 'Alpine Climate Observatory', url: 'http://envmon.test/research/alpine-observatory/', api_url: 'http://envmon.test/api/v1/research/alpine-observatory/' }]);
    const last = await env().get('/api/v1/notes/?page=3&type=build');
    assert.equal(last.status, 404, 'build notes fill only 2 pages');
    const p2 = await env().get('/api/v1/notes/?type=build&page=2');
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const p2body = (await p2.json()) as any;
    assert.equal(p2body.count, 23);
    assert.equal(p2body.results.length, 3);
    assert.equal(p2body.next, null);
    assert.equal(p2body.previous, 'http://envmon.test/api/v1/notes/?type=build&page=1');
    assert.equal(p2.headers.get('link'), '<http://envmon.test/api/v1/notes/?type=build&page=1>; rel="prev"');
  });

  it('filters notes by type, programme and date, and answers the pagination edges', async () => {
    const field = await env().getJson('/api/v1/notes/?type=field');
    assert.deepEqual(field.body.results.map((n: { slug: string }) => n.slug), ['mast-reinstalled-after-storm']);
    const urban = await env().getJson('/api/v1/notes/?programme=urban-air');
    assert.ok(urban.body.results.every((n: { programmes: { slug: string }[] }) => n.programmes.some((p) => p.slug === 'urban-air')));
    assert.equal(urban.body.count, 3 + 12);
    const since = await env().getJson('/api/v1/notes/?from_date=2026-06-20');
    assert.deepEqual(since.body.results.map((n: { date: string }) => n.date), ['2026-10-28', '2026-09-15', '2026-08-02', '2026-06-20']);
    const empty = await env().getJson('/api/v1/notes/?programme=no-such-programme');
    assert.equal(empty.status, 200);
    assert.deepEqual(empty.body, { count: 0, page: 1, total_pages: 1, next: null, previous: null, results: [] });
    assert.equal((await env().getJson('/api/v1/notes/?programme=no-such-programme&page=2')).status, 404);
    for (const page of ['abc', '0', '-1', '1.5']) {
      const bad = await env().getJson(`/api/v1/notes/?page=${page}`);
      assert.equal(bad.status, 400, page);
      assert.deepEqual(bad.body.errors, [{ param: 'page', message: 'must be a positive whole number' }]);
    }
    const past = await env().getJson('/api/v1/notes/?page=4');
    assert.deepEqual(past.body, { type: 'urn:envmon:problem:not-found', title: 'Not Found', status: 404, detail: 'page 4 is past the last page, 3' });
    // Beyond what a number holds exactly, and with leading zeros: named as the digits sent.
    const far = await env().getJson('/api/v1/notes/?page=000123456789012345678901234');
    assert.equal(far.status, 404);
    assert.equal(far.body.detail, 'page 123456789012345678901234 is past the last page, 3');
    assert.equal((await env().getJson('/api/v1/notes/?type=diary')).status, 400);
  });

  it('gives geotagged notes as GeoJSON, and one note with its body', async () => {
    const response = await env().get('/api/v1/notes/?output=geojson&type=observation');
    assert.equal(response.headers.get('content-type'), 'application/geo+json');
    const text = await response.text();
    checkGeoJson(text);
    const collection = JSON.parse(text);
    assert.deepEqual(collection.features.map((f: { id: string }) => f.id), ['snowmelt-soil-moisture', 'co2-rush-hour-peaks']);
    assert.deepEqual(collection.features[0].geometry, { type: 'Point', coordinates: [6.4012, 45.0349, 2062] });
    const all = JSON.parse(await (await env().get('/api/v1/notes/?output=geojson')).text());
    assert.ok(all.features.every((f: { geometry: unknown }) => f.geometry !== null));
    const detail = await env().getJson('/api/v1/notes/new-firmware-2-4/');
    assert.equal(detail.status, 200);
    assert.match(detail.body.body, /Idempotent ingest/);
    assert.equal(detail.body.latitude, null);
    assert.deepEqual(detail.body.programmes.map((p: { slug: string }) => p.slug), ['alpine-observatory', 'urban-air']);
    const missing = await env().getJson('/api/v1/notes/no-such-note/');
    assert.deepEqual(missing.body, { type: 'urn:envmon:problem:not-found', title: 'Not Found', status: 404, detail: "no lab note 'no-such-note'" });
  });

  it('lists publications newest year first then id descending, with filters, labels and linked authors', async () => {
    const { body } = await env().getJson('/api/v1/publications/');
    assert.equal(body.count, 36);
    const order = body.results.map((p: { year: number; id: number }) => [p.year, p.id]);
    assert.deepEqual(order, [...order].sort((a: number[], b: number[]) => b[0]! - a[0]! || b[1]! - a[1]!));
    const own = await env().getJson('/api/v1/publications/?provenance=own&year=2026');
    assert.deepEqual(own.body.results.map((p: { id: number }) => p.id), [5, 2, 1]);
    const first = own.body.results.find((p: { id: number }) => p.id === 1);
    assert.deepEqual(first, {
      id: 1, title: 'Low-cost particulate sensors in humid urban air: calibration against a reference monitor',
      authors: 'Mensah, Keisha; Novák, Tomás; Durand, Amélie', journal: 'Atmospheric Measurement Techniques', year: 2026,
      pub_type: 'peer-reviewed', pub_type_label: 'Peer-reviewed article', provenance: 'own', provenance_label: 'Own output',
      doi: '10.5194/amt-19-1234-2026', open_access_url: 'https://example.org/papers/amt-2026-1234.pdf',
      abstract: demo.publications[0].abstract, plain_language_summary: demo.publications[0].plain_language_summary,
      url: 'http://envmon.test/publications/1/', api_url: 'http://envmon.test/api/v1/publications/1/', ris_url: 'http://envmon.test/publications/1/cite.ris',
      linked_authors: [
        { name: 'Keisha Mensah', role: 'Lead author', orcid: '0000-0001-5109-3700', url: 'http://envmon.test/team/keisha-mensah/' },
        { name: 'Tomás Novák', role: 'Instrumentation', orcid: null, url: 'http://envmon.test/team/tomas-novak/' },
        { name: 'Amélie Durand', role: 'Supervision', orcid: '0000-0002-1825-0097', url: 'http://envmon.test/team/amelie-durand/' },
      ],
    });
    assert.deepEqual((await env().getJson('/api/v1/publications/1/')).body, first);
    const labels = await env().getJson('/api/v1/publications/?pub_type=data-paper');
    assert.deepEqual(labels.body.results.map((p: { pub_type_label: string; provenance_label: string }) => [p.pub_type_label, p.provenance_label]), [['Data paper', 'Own output']]);
    assert.equal((await env().getJson('/api/v1/publications/?pub_type=book')).status, 400);
    assert.equal((await env().getJson('/api/v1/publications/?year=twenty')).status, 400);
    assert.equal((await env().getJson('/api/v1/publications/999/')).status, 404);
    assert.equal((await env().getJson('/api/v1/publications/abc/')).status, 400);
  });

  it('serves RIS that a reference manager parser reads back: type, title, authors, year, journal, DOI', async () => {
    for (const [id, ty, cslType] of [[1, 'JOUR', 'article-journal'], [2, 'DATA', 'dataset'], [4, 'RPRT', 'report'], [3, 'JOUR', 'article-journal']] as const) {
      const response = await env().get(`/publications/${id}/cite.ris`);
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-type'), 'application/x-research-info-systems; charset=utf-8');
      assert.equal(response.headers.get('content-disposition'), `attachment; filename="envmon-publication-${id}.ris"`);
      assert.equal(response.headers.get('access-control-allow-origin'), '*');
      const text = await response.text();
      assert.ok(text.startsWith(`TY  - ${ty}\r\n`));
      assert.ok(text.endsWith('ER  - \r\n'));
      assert.ok(!/[^\r]\n/.test(text), 'every line ends in CRLF');
      const publication = demo.publications.find((p: { id: number }) => p.id === id);
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const [parsed] = (await Cite.async(text)).data as any[];
      assert.equal(parsed.type, cslType, `publication ${id}`);
      assert.equal(parsed.title, publication.title);
      assert.deepEqual(parsed.author.map((a: { family: string; given: string }) => `${a.family}, ${a.given}`), publication.authors.split('; '));
      assert.equal(parsed.issued['date-parts'][0][0], publication.year);
      if (ty === 'JOUR') assert.equal(parsed['container-title'], publication.journal);
      if (publication.doi) assert.equal(parsed.DOI, publication.doi);
    }
    assert.equal((await env().get('/publications/999/cite.ris')).status, 404);
  });

  it('lists the team in import order, research with its links, and education with labels', async () => {
    const team = await env().getJson('/api/v1/team/');
    assert.deepEqual(team.body.results.map((m: { slug: string }) => m.slug), demo.team.map((m: { slug: string }) => m.slug));
    assert.equal(team.body.count, 5);
    assert.deepEqual(team.body.results[1], {
      name: 'Tomás Novák', slug: 'tomas-novak', role: 'Research engineer', orcid: null, research_areas: ['embedded systems', 'instrument calibration'],
      linked_programmes: [
        { slug: 'alpine-observatory', title: 'Alpine Climate Observatory', url: 'http://envmon.test/research/alpine-observatory/', api_url: 'http://envmon.test/api/v1/research/alpine-observatory/' },
        { slug: 'urban-air', title: 'Urban Air Quality Mapping', url: 'http://envmon.test/research/urban-air/', api_url: 'http://envmon.test/api/v1/research/urban-air/' },
      ],
      url: 'http://envmon.test/team/tomas-novak/',
    });
    const research = await env().getJson('/api/v1/research/');
    const urban = research.body.results.find((r: { slug: string }) => r.slug === 'urban-air');
    assert.deepEqual(urban.instruments, [{ slug: 'optical-particle-counter', name: 'Optical particle counter' }, { slug: 'ndir-co2-sensor', name: 'NDIR carbon dioxide sensor' }]);
    assert.deepEqual(urban.team, [{ slug: 'keisha-mensah', name: 'Keisha Mensah', role: 'Postdoctoral researcher' }, { slug: 'tomas-novak', name: 'Tomás Novák', role: 'Research engineer' }]);
    assert.deepEqual(urban.publications.map((p: { id: number }) => p.id), [5, 1]);
    assert.equal(urban.publications[0].api_url, 'http://envmon.test/api/v1/publications/5/');
    assert.deepEqual((await env().getJson('/api/v1/research/urban-air/')).body, urban);
    assert.equal((await env().getJson('/api/v1/research/nothing/')).status, 404);
    const education = await env().getJson('/api/v1/education/');
    assert.deepEqual(education.body.results.map((e: { programme_type_label: string }) => e.programme_type_label), ['Residency', 'Fellowship', 'Teacher development']);
  });

  it('merges notes and publications newest first in the activity feed, limit clamped to 50', async () => {
    const feed = await env().getJson('/api/v1/activity/');
    assert.equal(feed.body.count, 20);
    const dates = feed.body.results.map((a: { date: string }) => a.date);
    assert.deepEqual(dates, [...dates].sort().reverse());
    assert.deepEqual(feed.body.results[0], {
      type: 'note', type_label: 'Lab note', title: 'Mast reinstalled after the October storm', date: '2026-10-28',
      summary: demo.notes[0].summary, url: 'http://envmon.test/notes/mast-reinstalled-after-storm/', api_url: 'http://envmon.test/api/v1/notes/mast-reinstalled-after-storm/',
    });
    assert.ok(feed.body.results.some((a: { type: string }) => a.type === 'publication'));
    assert.equal((await env().getJson('/api/v1/activity/?limit=500')).body.count, 50);
    assert.equal((await env().getJson('/api/v1/activity/?limit=0')).body.count, 1);
    assert.equal((await env().getJson('/api/v1/activity/?limit=ten')).status, 400);
  });

  it('searches with English stemming, ranks title matches first, labels types and caps at 20', async () => {
    const stem = await env().getJson('/api/v1/search/?q=measuring');
    assert.equal(stem.body.query, 'measuring');
    assert.ok(stem.body.results.some((r: { title: string }) => r.title === 'Radiation shield errors in alpine air temperature measurements'), '"measuring" finds "measurements"');
    // "radiation" is in a publication's title, an instrument's description and two notes' bodies:
    // they rank in that order (weights A, B, C).
    const radiation = await env().getJson('/api/v1/search/?q=radiation');
    assert.equal(radiation.body.count, 4);
    assert.deepEqual(radiation.body.results[0], {
      type: 'publication', type_label: 'Publication', title: 'Radiation shield errors in alpine air temperature measurements',
      url: 'http://envmon.test/publications/6/', summary: demo.publications[5].abstract,
    });
    assert.deepEqual(radiation.body.results.slice(1).map((r: { type: string }) => r.type), ['instrument', 'note', 'note']);
    const fog = await env().getJson('/api/v1/search/?q=fog');
    assert.deepEqual(fog.body.results.slice(0, 3).map((r: { title: string }) => r.title).sort(), [
      'Coastal Fog and Humidity', 'Coastal fog monitoring campaign 2024-2025: final report', 'Fog season summary for the Breton coast',
    ]);
    const types = new Set((await env().getJson('/api/v1/search/?q=sensor OR calibration OR residency OR particulate')).body.results.map((r: { type_label: string }) => r.type_label));
    for (const label of ['Instrument', 'Team member', 'Education programme', 'Lab note', 'Publication']) assert.ok(types.has(label), label);
    const many = await env().getJson('/api/v1/search/?q=bulk');
    assert.equal(many.body.count, 20);
    const excluded = await env().getJson('/api/v1/search/?q=fog -coastal');
    assert.ok(excluded.body.results.every((r: { title: string }) => !/coastal/i.test(r.title)));
    for (const q of ['', '%20%20', undefined]) {
      const blank = await env().getJson(`/api/v1/search/${q === undefined ? '' : `?q=${q}`}`);
      assert.equal(blank.status, 400, `q=${q}`);
      assert.equal(blank.body.errors[0].param, 'q');
    }
    assert.equal((await env().getJson('/api/v1/search/?q=zzzzqqq')).body.count, 0);
  });

  it('gives stats equal to what was stored', async () => {
    await addStation(env().db, 'stats-a');
    await addStation(env().db, 'stats-b');
    await env().db.pool.query(sql.type(z.object({}))`update stations set status = 'offline' where station_id = 'stats-b'`);
    const readings = makeReadings(1000, '2026-03-01T00:00:00Z', 1, 3);
    await storeReadings(env().db, 'stats-a', readings);
    await storeReadings(env().db, 'stats-b', makeReadings(10, '2025-12-31T23:50:00Z', 1, 4).map((r) => ({ ...r, quality_flag: 'ok' as const })));
    const { body } = await env().getJson('/api/v1/stats/');
    const ok = readings.filter((r) => r.quality_flag === 'ok').length + 10;
    assert.deepEqual(body.stations, { total: 2, active: 1 });
    assert.deepEqual({ ...body.readings }, {
      total: 1010, ok, ok_pct: Math.round((ok / 1010) * 1000) / 10,
      earliest: '2025-12-31T23:50:00.000Z', latest: readings.at(-1)!.ts,
    });
    assert.deepEqual(body.content, { notes: 51, publications: 36, team: 5, research: 3, education: 3, instruments: 4 });
    assert.ok(Math.abs(Date.parse(body.generated_at) - Date.now()) < 60_000);
  });
});

describeEngines('stats asked again', (env) => {
  it('follow every write of the readings: ingest, backfill, an override, a deletion, a station emptied', async function () {
    this.timeout(60_000);
    const { db } = env();
    // The oracle: count(*) over the readings themselves.
    const counted = async () => db.pool.one(sql.type(z.object({ total: z.number(), ok: z.number() }))`
      select count(*)::int as total, (count(*) filter (where quality_flag = 'ok'))::int as ok from readings`);
    const same = async (what: string) => {
      // Twice: the second answer is the one whose totals were kept.
      for (let i = 0; i < 2; i++) {
        const { body } = await env().getJson('/api/v1/stats/');
        const oracle = await counted();
        assert.deepEqual({ total: body.readings.total, ok: body.readings.ok }, oracle, `${what}, asked ${i === 0 ? 'first' : 'again'}`);
      }
    };
    await same('no readings');
    await addStation(db, 'stats-again-a');
    await addStation(db, 'stats-again-b');
    await storeReadings(db, 'stats-again-a', makeReadings(300, new Date(Date.now() - 3_600_000).toISOString(), 1, 5));
    await same('live readings');
    await storeReadings(db, 'stats-again-a', makeReadings(200, '2025-06-01T00:00:00Z', 1, 6));
    await same('a backfill');
    await storeReadings(db, 'stats-again-b', makeReadings(50, '2026-01-01T00:00:00Z', 1, 7));
    await same('another station');
    await recordOverride(db, { stationId: 'stats-again-a', from: '2025-06-01T00:00:00Z', to: '2025-06-01T01:00:00Z', flag: 'invalid', reason: 'test' });
    await same('an override');
    await deleteReadings(db, { stationId: 'stats-again-a', from: '2025-06-01T00:00:00Z', to: '2025-06-01T02:00:00Z' });
    await same('a deletion');
    // A station emptied: its row of marks goes, and the totals must not be those of an earlier state.
    await deleteReadings(db, { stationId: 'stats-again-b', from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' });
    await same('a station emptied');
  });

  it('count a backfill its rollups do not hold yet from its readings, without waiting for the refresh', async () => {
    const { db } = env();
    const key = await stationWithKey(env(), 'stats-race');
    const minutes = (from: number, count: number) => Array.from({ length: count }, (_, i) => ({ timestamp: new Date(from + i * 60_000).toISOString(), temperature_c: i % 9 }));
    assert.equal((await postBatch(env(), key, { station_id: 'stats-race', readings: minutes(Date.now() - 1_800_000, 30) })).status, 201);
    await db.rollups.refresh();
    // A backfill as it stands between its commit and its refresh: readings a year back, written below every
    // rollup's watermark, and the station's backlog row (timescale: the rollups do not hold them yet).
    await db.pool.query(sql.type(z.object({}))`
      insert into readings (station_id, ts, temperature_c, quality_flag)
      select 'stats-race', timestamptz '2025-03-01T00:00:00Z' + i * interval '1 minute', 1, case when i % 4 = 0 then 'suspect' else 'ok' end
      from generate_series(0, 19) i`);
    await db.pool.query(sql.type(z.object({}))`insert into rollup_backlog (station_id, first_ts) values ('stats-race', '2025-03-01T00:00:00Z')`);
    let refreshes = 0;
    const refresh = db.rollups.refresh;
    db.rollups.refresh = () => {
      refreshes++;
      return refresh();
    };
    try {
      const { body } = await env().getJson('/api/v1/stats/');
      const oracle = await db.pool.one(sql.type(z.object({ total: z.number(), ok: z.number() }))`
        select count(*)::int as total, (count(*) filter (where quality_flag = 'ok'))::int as ok from readings`);
      assert.equal(body.readings.total, oracle.total, 'the backfill counted');
      assert.equal(body.readings.ok, oracle.ok);
      assert.equal(refreshes, 0, 'no refresh waited for');
    } finally {
      db.rollups.refresh = refresh;
      await db.pool.query(sql.type(z.object({}))`delete from rollup_backlog where station_id = 'stats-race'`);
    }
  });
});

describeEngines('stats with no readings', (env) => {
  it('gives ok_pct null and no dates', async () => {
    const { body } = await env().getJson('/api/v1/stats/');
    assert.deepEqual(body.readings, { total: 0, ok: 0, ok_pct: null, earliest: null, latest: null });
  });
});

describe('changelog', () => {
  it('parses CHANGELOG.md into releases, newest first', () => {
    const text = readFileSync('CHANGELOG.md', 'utf8');
    const log = parseChangelog(text);
    assert.equal(log.current_version, log.releases[0]!.version);
    // Every change line of every release, and no other line, is a change.
    const sections = text.split(/^## \[/m).slice(1);
    assert.deepEqual(log.releases.map((r) => r.changes.length), sections.map((section) => section.split('\n').filter((line) => line.startsWith('- ')).length));
    assert.ok(log.releases.every((r) => r.changes.length > 0));
    assert.ok(log.releases.every((r) => /^\d{4}-\d{2}-\d{2}$/.test(r.date)));
  });

  it('marks breaking changes and refuses a malformed file', () => {
    const log = parseChangelog('## [2.0.0] - 2027-01-01\n### Removed\n- **Breaking:** dropped `latest`\n### Added\n- more\n');
    assert.deepEqual(log.releases[0]!.changes, [
      { type: 'removed', breaking: true, description: 'dropped `latest`' },
      { type: 'added', breaking: false, description: 'more' },
    ]);
    assert.throws(() => parseChangelog('## [1.0.0] - 2027-01-01\n### Tweaked\n- x\n'), /unknown section Tweaked/);
  });
});

describeEngines('GET /changelog/', (env) => {
  it('serves the changelog of the repository', async () => {
    const { status, body } = await env().getJson('/api/v1/changelog/');
    assert.equal(status, 200);
    assert.deepEqual(body, parseChangelog(readFileSync('CHANGELOG.md', 'utf8')));
  });
});

describeEngines('notes as GeoJSON for GIS tools', (env) => {
  // More geotagged notes than a page holds, so that a reader that does not page would miss some.
  const geotagged = Array.from({ length: 57 }, (_, i) => ({
    slug: `gis-note-${String(i).padStart(2, '0')}`, title: `GIS note ${i}`, note_type: i % 2 ? 'field' : 'observation',
    date: new Date(Date.UTC(2025, 0, 1 + i)).toISOString().slice(0, 10), summary: `Point ${i}`,
    latitude: 44 + i / 50, longitude: 4 + i / 40, ...(i % 5 ? { altitude_m: 100 + i } : {}),
  }));
  before(async () => {
    await importContent(env().db.pool, parseContentFile(demo));
    await importContent(env().db.pool, parseContentFile({ notes: geotagged }));
  });

  /** The oracle: the geotagged notes as SQL finds them, newest first. */
  const geotaggedSlugs = (filter: { type?: string; from?: string } = {}) =>
    env().db.pool.anyFirst(sql.type(z.object({ slug: z.string() }))`
      select slug from notes
      where latitude is not null and longitude is not null
        and (${filter.type ?? null}::text is null or note_type = ${filter.type ?? null})
        and (${filter.from ?? null}::date is null or date >= ${filter.from ?? null}::date)
      order by date desc, slug`);

  it('returns every geotagged note matching the filters in one FeatureCollection, never paged', async () => {
    const response = await env().get('/api/v1/notes/?output=geojson');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'application/geo+json');
    assert.equal(response.headers.get('link'), null, 'nothing to follow');
    const text = await response.text();
    checkGeoJson(text);
    const collection = JSON.parse(text);
    const expected = await geotaggedSlugs();
    assert.ok(expected.length > 20, `more than one page of geotagged notes (${expected.length})`);
    assert.deepEqual(collection.features.map((f: { id: string }) => f.id), expected);
    assert.equal(collection.numberMatched, expected.length);
    assert.equal(collection.numberReturned, expected.length);
    const note = collection.features.find((f: { id: string }) => f.id === 'gis-note-01');
    assert.deepEqual(note.geometry, { type: 'Point', coordinates: [4 + 1 / 40, 44 + 1 / 50, 101] });
    assert.equal(note.properties.title, 'GIS note 1');
    assert.equal(note.properties.url, 'http://envmon.test/notes/gis-note-01/');
    const unlocated = collection.features.find((f: { id: string }) => f.id === 'gis-note-00');
    assert.deepEqual(unlocated.geometry.coordinates, [4, 44], 'no altitude: two coordinates');

    const filtered = JSON.parse(await (await env().get('/api/v1/notes/?output=geojson&type=field&from_date=2025-01-20&page=2')).text());
    const expectedFiltered = await geotaggedSlugs({ type: 'field', from: '2025-01-20' });
    assert.ok(expectedFiltered.length > 0);
    assert.deepEqual(filtered.features.map((f: { id: string }) => f.id), expectedFiltered, 'filters apply, page is ignored');
  });

  it('is read whole by GDAL, which never follows a Link', async function () {
    this.timeout(60_000);
    const url = `${env().origin}/api/v1/notes/?output=geojson`;
    const gdal = await runCommand('ogr2ogr', ['-f', 'CSV', '/vsistdout/', url, '-lco', 'GEOMETRY=AS_XY']);
    assert.equal(gdal.code, 0, gdal.stderr);
    const [header, ...rows] = gdal.stdout.trim().split('\n');
    const columns = header!.split(',');
    const slug = columns.indexOf('slug');
    assert.ok(slug >= 0 && columns[0] === 'X' && columns[1] === 'Y', header);
    const expected = await geotaggedSlugs();
    assert.deepEqual(rows.map((row) => row.split(',')[slug]), expected);
    const first = rows.find((row) => row.split(',')[slug] === 'gis-note-02')!.split(',');
    assert.deepEqual([Number(first[0]), Number(first[1])], [4 + 2 / 40, 44 + 2 / 50]);
  });
});
