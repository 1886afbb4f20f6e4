import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from '../http/zod.js';

const changeTypes = ['added', 'changed', 'deprecated', 'removed', 'fixed', 'security'] as const;

export const changelogSchema = z
  .object({
    current_version: z.string(),
    releases: z.array(
      z.object({
        version: z.string(),
        date: z.string(),
        changes: z.array(z.object({ type: z.enum(changeTypes), breaking: z.boolean(), description: z.string() })),
      }),
    ),
  })
  .openapi('Changelog');
export type Changelog = z.infer<typeof changelogSchema>;

/**
 * Reads CHANGELOG.md (Keep a Changelog: `## [version] - date`, `### Added` ..., `- change`, and
 * `**Breaking:**` opening a breaking change). Throws on a line it does not understand, so that a malformed
 * changelog fails the tests rather than silently losing a release.
 */
export function parseChangelog(markdown: string): Changelog {
  const releases: Changelog['releases'] = [];
  let type: (typeof changeTypes)[number] | undefined;
  for (const [index, line] of markdown.split('\n').entries()) {
    const release = /^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$/.exec(line);
    const section = /^### (\w+)$/.exec(line);
    if (release) {
      releases.push({ version: release[1]!, date: release[2]!, changes: [] });
      type = undefined;
    } else if (section) {
      const name = section[1]!.toLowerCase() as (typeof changeTypes)[number];
      if (!changeTypes.includes(name)) throw new Error(`CHANGELOG.md line ${index + 1}: unknown section ${section[1]}`);
      type = name;
    } else if (line.startsWith('- ') && releases.length > 0) {
      if (!type) throw new Error(`CHANGELOG.md line ${index + 1}: a change outside a section`);
      const breaking = line.startsWith('- **Breaking:**');
      releases.at(-1)!.changes.push({ type, breaking, description: line.slice(breaking ? '- **Breaking:**'.length : 2).trim() });
    }
  }
  if (releases.length === 0) throw new Error('CHANGELOG.md has no release');
  return { current_version: releases[0]!.version, releases };
}

const changelogFile = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../CHANGELOG.md');

/** The repository's changelog, read once. */
export function loadChangelog(): Changelog {
  return parseChangelog(readFileSync(changelogFile, 'utf8'));
}
