import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { EncodedAnswer } from '../../src/http/encodedAnswer.js';
import { SharedBytes, type AnswerPart } from '../../src/http/answerParts.js';

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

describe('an answer made of parts, some shared with other answers', () => {
  it(`is sent as the parts' bytes in order, as they are and gzipped, wherever the shared ones are (${runs} answers, FUZZ_SEED=${seed})`, async () => {
    await fc.assert(
      fc.asyncProperty(parts, levels, async (list, level) => {
        const answer = new EncodedAnswer(list, 'application/json', { gzip: { level }, br: {} });
        const sent = async (coding: string) => {
          const context = { method: 'GET', request: { headers: { 'accept-encoding': coding } }, set: () => {}, body: undefined as unknown };
          await answer.send(context as never);
          return context.body as Buffer;
        };
        assert.ok((await sent('identity')).equals(whole(list)));
        if (answer.length >= 1024) assert.ok(gunzipSync(await sent('gzip')).equals(whole(list)));
      }),
      { numRuns: runs, seed },
    );
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
