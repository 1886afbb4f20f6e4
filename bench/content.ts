// bench/content: requests/s and p50 of /search/ and of a notes list page with 10,000 notes and 5,000
// publications loaded, with autocannon; and the EXPLAIN of each query, which must use its index.
import autocannon from 'autocannon';
import pg from 'pg';
import { importContent, parseContentFile } from '../src/content/importContent.js';
import { createDb } from '../src/db/pool.js';
import demo from '../src/content/demoContent.json' with { type: 'json' };
import { eachEngine, fmt, startServe } from './lib.js';

const seconds = Number(process.env.BENCH_CONTENT_SECONDS ?? 8);
// A vocabulary of a few thousand words, as real notes have, so that a query selects a few records.
const stems = ['alpine', 'humid', 'sensor', 'calibr', 'snow', 'particul', 'coast', 'fog', 'firmwar', 'transect', 'urban', 'aerosol', 'glacier', 'moist', 'radiat', 'wind'];
const words = Array.from({ length: 4000 }, (_, i) => `${stems[i % stems.length]}${String.fromCharCode(97 + (i % 23))}${String.fromCharCode(97 + Math.floor(i / 23) % 26)}${Math.floor(i / 598)}x`);
const pick = (i: number, n: number) => Array.from({ length: n }, (_, k) => words[(i * 7919 + k * 104729) % words.length]).join(' ');

function bulk() {
  return {
    notes: Array.from({ length: 10_000 }, (_, i) => ({
      slug: `note-${i}`, title: `Note ${i}: ${pick(i, 3)}`, note_type: ['field', 'build', 'observation', 'analysis', 'experiment'][i % 5],
      date: new Date(Date.UTC(2015, 0, 1) + (i % 4000) * 86_400_000).toISOString().slice(0, 10),
      summary: `Observations of ${pick(i + 1, 6)} measured at the station.`, body: `${pick(i + 2, 40)} `.repeat(5),
      programmes: i % 3 === 0 ? ['alpine-observatory'] : [],
    })),
    publications: Array.from({ length: 5_000 }, (_, i) => ({
      id: 1000 + i, title: `Study ${i} of ${pick(i, 4)}`, authors: 'Doe, Jane; Roe, Richard', journal: 'Journal of Tests', year: 1990 + (i % 36),
      pub_type: 'peer-reviewed', provenance: 'affiliate', abstract: `We measured ${pick(i + 3, 20)}.`,
    })),
  };
}

await eachEngine('content', async (engine, databaseUrl) => {
  const results: Record<string, unknown>[] = [];
  const db = await createDb(databaseUrl, engine, { poolSize: 2, statementTimeoutMs: 600_000 });
  const started = performance.now();
  await importContent(db.pool, parseContentFile(demo));
  await importContent(db.pool, parseContentFile(bulk()));
  console.log(`${engine}: imported 10,000 notes and 5,000 publications in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  await db.close();
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query('analyze');
  const plans = {
    search: (await client.query(`explain select slug from notes, websearch_to_tsquery('english', $1) q where search @@ q`, [words[17]])).rows.map((r) => r['QUERY PLAN']).join('\n'),
    notes_page: (await client.query(`explain select slug from notes order by date desc, slug limit 20 offset 100`)).rows.map((r) => r['QUERY PLAN']).join('\n'),
  };
  await client.end();
  const serve = await startServe(databaseUrl);
  try {
    const query = encodeURIComponent(`${words[17]} ${words[1234]} calibration`);
    for (const [name, path] of [['search', `/api/v1/search/?q=${words[17]}`], ['search OR', `/api/v1/search/?q=${query.replace(/%20/g, '%20OR%20')}`], ['notes page', '/api/v1/notes/?page=5']] as const) {
      const run = await autocannon({ url: `${serve.url}${path}`, connections: 16, duration: seconds });
      const row = { engine, endpoint: name, requests_per_s: Math.round(run.requests.average), p50_ms: run.latency.p50, p99_ms: run.latency.p99, non_2xx: run.non2xx };
      results.push(row);
      console.log(`${engine.padEnd(9)} ${name.padEnd(10)} x16   ${fmt(row.requests_per_s)} req/s   p50 ${row.p50_ms} ms   p99 ${row.p99_ms} ms   non-2xx ${row.non_2xx}`);
    }
    const searchIndex = /notes_search_idx/.test(plans.search);
    const pageIndex = /notes_date_idx/.test(plans.notes_page);
    console.log(`${engine.padEnd(9)} EXPLAIN: search uses notes_search_idx: ${searchIndex}; notes page uses notes_date_idx: ${pageIndex}`);
    results.push({ engine, explain_search_uses_gin: searchIndex, explain_notes_page_uses_index: pageIndex, plans });
  } finally {
    await serve.stop();
  }
  return results;
});
