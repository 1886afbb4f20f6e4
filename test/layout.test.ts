import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The layout the code keeps (CONTRIBUTING.md): imports run one way, and each concern of readings/ stands
// on the reading definition and readings/core alone.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const src = path.join(root, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? sourceFiles(full) : name.endsWith('.ts') ? [full] : [];
  });
}

/** Each source file (relative to src/) with the source files it imports, type-only imports included. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(src)) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)['"]/g)]
      .map((match) => path.relative(src, path.resolve(path.dirname(file), match[1]!.replace(/\.js$/, '.ts'))));
    graph.set(path.relative(src, file), targets);
  }
  return graph;
}

const concernOf = (file: string) => (file.startsWith('readings/') ? file.split('/')[1]! : null);

describe('the layout of src/', () => {
  const graph = importGraph();

  it('has no import cycle', () => {
    // Tarjan's strongly connected components: any with more than one file is a cycle.
    let index = 0;
    const indexOf = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const cycles: string[][] = [];
    const visit = (file: string) => {
      indexOf.set(file, index);
      low.set(file, index++);
      stack.push(file);
      for (const next of graph.get(file) ?? []) {
        if (!graph.has(next)) continue;
        if (!indexOf.has(next)) {
          visit(next);
          low.set(file, Math.min(low.get(file)!, low.get(next)!));
        } else if (stack.includes(next)) {
          low.set(file, Math.min(low.get(file)!, indexOf.get(next)!));
        }
      }
      if (low.get(file) === indexOf.get(file)) {
        const component: string[] = [];
        for (let top = stack.pop(); ; top = stack.pop()) {
          component.push(top!);
          if (top === file) break;
        }
        if (component.length > 1) cycles.push(component.sort());
      }
    };
    for (const file of graph.keys()) if (!indexOf.has(file)) visit(file);
    assert.deepEqual(cycles, []);
  });

  it('keeps readings/ as folders by concern beside the one reading definition', () => {
    const entries = readdirSync(path.join(src, 'readings'));
    const files = entries.filter((name) => !statSync(path.join(src, 'readings', name)).isDirectory());
    assert.deepEqual(files, ['reading.ts']);
  });

  it('lets no concern of readings/ import another: each stands on reading.ts and readings/core only', () => {
    const crossings: string[] = [];
    for (const [file, targets] of graph) {
      const from = concernOf(file);
      for (const target of targets) {
        const to = concernOf(target);
        if (!target.startsWith('readings/')) continue;
        if (file.startsWith('readings/') ? from === to || to === 'core' || target === 'readings/reading.ts' : true) {
          if (from === 'core' && to !== 'core' && target !== 'readings/reading.ts') crossings.push(`${file} -> ${target}`);
          continue;
        }
        crossings.push(`${file} -> ${target}`);
      }
    }
    assert.deepEqual(crossings, []);
  });

  it('keeps the plumbing below the capabilities: db/, http/ and formats/ import none of them', () => {
    const capabilities = ['readings/', 'content/', 'stations/', 'meta/', 'embed/', 'cli/', 'app.ts', 'main.ts'];
    const below = ['db/', 'http/', 'formats/'];
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      if (!below.some((dir) => file.startsWith(dir))) continue;
      for (const target of targets) if (capabilities.some((c) => target.startsWith(c))) upward.push(`${file} -> ${target}`);
    }
    assert.deepEqual(upward, []);
  });
});
