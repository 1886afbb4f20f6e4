import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { gunzipSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { EncodedAnswer } from '../../src/http/encodedAnswer.js';
import { SharedBytes, splicedGzip, type AnswerPart } from '../../src/http/splicedGzip.js';

const runs = Number(process.env.FUZZ_RUNS ?? 150);
// Fixed and printed, so that a failure replays; FUZZ_SEED explores others.
const seed = Number(process.env.FUZZ_SEED ?? 20_261_126);

const partBytes = fc.oneof(
  fc.constant(Buffer.alloc(0)),
  fc.string({ maxLength: 3000 }).map((text) => Buffer.from(text)),
  fc.uint8Array({ maxLength: 5000 }).map((bytes) => Buffer.from(bytes)),
  fc.integer({ min: 1, max: 4000 }).map((n) => Buffer.from('{"period_start":"2026-01-01T00:00:00.000Z","count":60},'.repeat(n))),
);
const parts = fc.array(fc.tuple(partBytes, fc.boolean()), { maxLength: 6 }).map((list) =>
  list.map(([bytes, shared]): AnswerPart => (shared ? new SharedBytes(bytes) : bytes)));
const levels = fc.constantFrom(1, 4, 9);

const whole = (list: readonly AnswerPart[]) => Buffer.concat(list.map((part) => (part instanceof SharedBytes ? part.bytes : part)));

describe('gzip spliced from kept parts', () => {
  it(`decodes to the parts' bytes in order, whatever they hold and wherever the shared ones are (${runs} answers, FUZZ_SEED=${seed})`, async () => {
    await fc.assert(
      fc.asyncProperty(parts, levels, async (list, level) => {
        const bytes = whole(list);
        const gzip = await splicedGzip(list, { level });
        assert.ok(gunzipSync(gzip).equals(bytes));
      }),
      { numRuns: runs, seed },
    );
  });

  it('is read by the system gzip as one member, its CRC and length checked', async () => {
    const shared = new SharedBytes(Buffer.from('{"n":1.5},'.repeat(50_000)));
    for (const list of [[Buffer.from('{"results":['), shared, Buffer.from('{"n":2}]}')], [Buffer.from('['), shared], [shared]]) {
      const bytes = whole(list);
      const gzip = await splicedGzip(list, { level: 4 });
      assert.ok(execFileSync('gzip', ['-dc'], { input: gzip, maxBuffer: 64 << 20 }).equals(bytes));
      // A gzip whose trailer does not match its bytes is refused: the check above checked something.
      const wrong = Buffer.from(gzip);
      wrong[wrong.length - 8]! ^= 1;
      assert.throws(() => execFileSync('gzip', ['-dc'], { input: wrong, stdio: ['pipe', 'pipe', 'ignore'] }));
    }
  });

  it('deflates a shared part once for every answer that holds it', async () => {
    const shared = new SharedBytes(Buffer.from('{"period_start":"2026-01-01T00:00:00.000Z","temperature_c_mean":12.5},'.repeat(3000)));
    const answer = async (tail: string) => {
      const list = [Buffer.from('{"results":['), shared, Buffer.from(`${tail}]}`)];
      const bytes = whole(list);
      assert.ok(gunzipSync(await splicedGzip(list, { level: 4 })).equals(bytes));
    };
    await answer('{"n":1}');
    const size = shared.size;
    assert.ok(size > shared.bytes.length, 'the deflate is kept with the part');
    await answer('{"n":2},{"n":3}');
    assert.equal(shared.size, size, 'the second answer reuses the kept deflate');
  });

  it('joins the pieces a large part is deflated in as one stream, at every size around a cut', async () => {
    // Periods of an hourly aggregate, their numbers varying, cut at sizes on both sides of 128 KiB multiples.
    const text = Array.from({ length: 40_000 }, (_, i) =>
      `{"period_start":"${new Date(Date.UTC(2025, 0, 1) + i * 3_600_000).toISOString()}","count":60,"temperature_c_mean":${Math.sin(i) * 20}},`).join('');
    for (const size of [128 * 1024 - 1, 256 * 1024, 256 * 1024 + 1, 512 * 1024 + 3, 1024 * 1024 + 7, text.length]) {
      const bytes = Buffer.from(text.slice(0, size));
      for (const list of [[bytes], [Buffer.from('{"results":['), new SharedBytes(bytes), Buffer.from(']}')]]) {
        const all = whole(list);
        const gzip = await splicedGzip(list, { level: 1 });
        assert.ok(execFileSync('gzip', ['-dc'], { input: gzip, maxBuffer: 64 << 20 }).equals(all), `${size} bytes`);
        // No piece costs more than its window: within 1% of one deflate of the whole.
        assert.ok(gzip.length < gzipSync(all, { level: 1 }).length * 1.01, `${size} bytes: ${gzip.length}`);
      }
    }
  });

  it(`tags an answer of parts by its bytes: the same parts, the same tag; other bytes, another tag (${runs} pairs, FUZZ_SEED=${seed})`, async () => {
    // The same parts made again (new objects, as another instance makes them), and the same parts with one byte changed.
    const again = (list: readonly AnswerPart[]) => list.map((part) => (part instanceof SharedBytes ? new SharedBytes(Buffer.from(part.bytes)) : Buffer.from(part)));
    const changed = (list: readonly AnswerPart[], at: number) => {
      const copy = again(list);
      const sizes = copy.map((part) => (part instanceof SharedBytes ? part.bytes : part).length);
      let index = 0;
      let offset = at % Math.max(1, sizes.reduce((a, b) => a + b, 0));
      while (index < sizes.length && offset >= sizes[index]!) offset -= sizes[index++]!;
      if (index === sizes.length) return undefined;
      const part = copy[index]!;
      const bytes = part instanceof SharedBytes ? part.bytes : part;
      bytes[offset] = (bytes[offset]! + 1) % 256;
      return copy;
    };
    await fc.assert(
      fc.asyncProperty(parts, fc.nat(), async (list, at) => {
        const answer = new EncodedAnswer(list, 'application/json');
        assert.ok(answer.bytes.equals(whole(list)));
        assert.equal(answer.length, whole(list).length);
        assert.equal(new EncodedAnswer(again(list), 'application/json').etag, answer.etag);
        const other = changed(list, at);
        if (other) assert.notEqual(new EncodedAnswer(other, 'application/json').etag, answer.etag);
        // Without shared parts, the tag is the SHA-1 of the bytes, as for any other answer.
        if (!list.some((part) => part instanceof SharedBytes)) assert.equal(answer.etag, new EncodedAnswer(whole(list), 'application/json').etag);
      }),
      { numRuns: runs, seed },
    );
  });

  it('counts in an answer the memory it holds alone: its own parts, their join once made, its compressed forms', async () => {
    const shared = new SharedBytes(Buffer.from('{"n":1.5},'.repeat(5000)));
    const answer = new EncodedAnswer([Buffer.from('{"results":['), shared, Buffer.from('{"n":2}]}')], 'application/json');
    const own = '{"results":['.length + '{"n":2}]}'.length;
    assert.equal(answer.size, own, 'the shared part is counted where it is kept');
    assert.equal(answer.bytes.length, answer.length);
    assert.equal(answer.size, own + answer.length, 'joined for a client taking it as it is');
    const context = { method: 'GET', request: { headers: { 'accept-encoding': 'gzip' } }, set: () => {}, body: undefined as unknown };
    await answer.send(context as never);
    assert.equal(answer.size, own + answer.length + (context.body as Buffer).length, 'and its gzip');
    assert.ok(gunzipSync(context.body as Buffer).equals(answer.bytes));
  });
});
