import bourne from '@hapi/bourne';

/**
 * JSON.parse for what stations post, refusing with a SyntaxError two shapes that alter objects in
 * consumers that merge parsed JSON naively: a key named `__proto__` anywhere (bourne), and a
 * `constructor` key holding an object with a `prototype` key.
 */
export function parseJson(text: string): unknown {
  const value: unknown = bourne.parse(text, { protoAction: 'error' });
  // A `constructor` key can only be there if its name is in the text, escaped or not.
  if (/constructor|\\u/.test(text) && reachesPrototype(value)) throw new SyntaxError('Object contains forbidden constructor.prototype property');
  return value;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/** Walks the value with a stack of its own: a body may nest deeper than the call stack goes. */
function reachesPrototype(root: unknown): boolean {
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const value = pending.pop();
    if (!isObject(value)) continue;
    if (!Array.isArray(value) && Object.hasOwn(value, 'constructor') && isObject(value.constructor) && Object.hasOwn(value.constructor, 'prototype')) {
      return true;
    }
    for (const key in value) pending.push(value[key]);
  }
  return false;
}
