// Benches that compare two builds of the service on one machine: a commit checked out in a git worktree
// beside this one (sharing its node_modules), or this checkout itself, each with its own `envmon`.
import { execFileSync } from 'node:child_process';
import { existsSync, symlinkSync, unlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Engine } from '../src/config.js';
import { envmonBin, runCommand } from '../test/helpers/cli.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const git = (...args: string[]) => execFileSync('git', ['-C', repoRoot, ...args], { encoding: 'utf8' }).trim();

/** A build of the service: its label (a short commit), its `envmon` and how to remove it. */
export type Checkout = { label: string; bin: string; remove: () => void };

/** `ref` checked out in a worktree under the temporary directory (`name` in its folder's name), with this checkout's node_modules. */
export function checkoutOf(ref: string, name: string): Checkout {
  const commit = git('rev-parse', '--verify', `${ref}^{commit}`);
  const dir = path.join(os.tmpdir(), `envmon-${name}-${commit.slice(0, 7)}-${process.pid}`);
  git('worktree', 'add', '--detach', '--quiet', dir, commit);
  symlinkSync(path.join(repoRoot, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return {
    label: commit.slice(0, 7),
    bin: path.join(dir, 'bin/envmon.js'),
    remove: () => {
      // The link first, so that removing the worktree cannot reach this checkout's node_modules.
      if (existsSync(path.join(dir, 'node_modules'))) unlinkSync(path.join(dir, 'node_modules'));
      git('worktree', 'remove', '--force', dir);
    },
  };
}

/** This checkout, labelled by its commit, and `+changes` when its tracked files differ from it. */
export function thisCheckout(): Checkout {
  const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
  return { label: `${git('rev-parse', '--short=7', 'HEAD')}${dirty ? '+changes' : ''}`, bin: envmonBin, remove: () => {} };
}

/** The checkout's own `envmon migrate` on an empty database, as an operator runs it. */
export async function migrateWith(checkout: Checkout, databaseUrl: string, engine: Engine): Promise<void> {
  const result = await runCommand(process.execPath, [checkout.bin, 'migrate'], { LOG_LEVEL: 'warn', DATABASE_URL: databaseUrl, DB_ENGINE: engine });
  if (result.code !== 0) throw new Error(`${checkout.label}: envmon migrate exited ${result.code}: ${result.stderr}`);
}

/**
 * Runs `measure` with `beforeRef` checked out and `afterRef` (or, without it, this checkout), removing the
 * worktrees afterwards whatever happens; returns their labels.
 */
export async function withBeforeAndAfter(
  beforeRef: string, afterRef: string | undefined, name: string, measure: (before: Checkout, after: Checkout) => Promise<void>,
): Promise<{ before: string; after: string }> {
  const before = checkoutOf(beforeRef, name);
  let after: Checkout | undefined;
  try {
    after = afterRef ? checkoutOf(afterRef, name) : thisCheckout();
    await measure(before, after);
    return { before: before.label, after: after.label };
  } finally {
    after?.remove();
    before.remove();
  }
}
