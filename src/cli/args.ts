import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './usage.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** Strict parsing: an unknown flag or a missing value is a UsageError naming it. */
export function parseCommandArgs<O extends Options>(args: string[], options: O, positionals: string[]) {
  let parsed;
  try {
    parsed = parseArgs({ args, options, strict: true, allowPositionals: true });
  } catch (error) {
    throw new UsageError((error as Error).message.split('\n')[0] ?? 'bad arguments');
  }
  if (parsed.positionals.length !== positionals.length) {
    throw new UsageError(
      positionals.length === 0
        ? `unexpected argument '${parsed.positionals[0]}'`
        : `expected ${positionals.join(' ')}, got ${parsed.positionals.length === 0 ? 'nothing' : parsed.positionals.join(' ')}`,
    );
  }
  return { values: parsed.values as { [K in keyof O]?: O[K]['type'] extends 'boolean' ? boolean : string }, positionals: parsed.positionals };
}
