import { describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The module map of docs/ARCHITECTURE.md, kept true: every top-level folder of src/ is described there,
 * and no module imports one that is not below it (lower modules never import upper ones).
 */

const SRC = resolve(import.meta.dir, '../src');
const ARCHITECTURE = resolve(import.meta.dir, '../docs/ARCHITECTURE.md');

/** Each module and the modules it may import (besides itself). The order is the layering, bottom first. */
const FOUNDATION = ['util', 'domain'];
const MAY_IMPORT: Record<string, readonly string[]> = {
  util: [],
  domain: [],
  'version.ts': [],
  'config.ts': ['util', 'domain'],
  runtime: [...FOUNDATION],
  security: [...FOUNDATION],
  outbound: [...FOUNDATION, 'config.ts', 'security'],
  db: [...FOUNDATION],
  coordination: [...FOUNDATION, 'db'],
  http: [...FOUNDATION, 'config.ts', 'security', 'db'],
  embeddings: [...FOUNDATION, 'runtime', 'security', 'outbound'],
  vectors: [...FOUNDATION, 'runtime', 'db', 'embeddings'],
  llm: [...FOUNDATION, 'runtime', 'security', 'outbound'],
  ingestion: [...FOUNDATION, 'config.ts', 'runtime', 'security', 'db', 'embeddings', 'vectors'],
  feeds: [...FOUNDATION, 'db', 'outbound', 'ingestion'],
  syfthub: [...FOUNDATION, 'security', 'outbound'],
  tunnel: [...FOUNDATION, 'security', 'http'],
  tenants: [...FOUNDATION, 'security', 'db', 'http'],
  payments: [...FOUNDATION, 'security', 'outbound', 'db', 'http'],
  metrics: [...FOUNDATION, 'http'],
  auth: [...FOUNDATION, 'config.ts', 'security', 'db', 'http', 'tenants'],
  marketplaces: [...FOUNDATION, 'security', 'outbound', 'db', 'http', 'syfthub'],
  datasets: [...FOUNDATION, 'config.ts', 'security', 'outbound', 'db', 'http', 'embeddings', 'vectors', 'ingestion', 'tenants'],
  models: [...FOUNDATION, 'security', 'outbound', 'db', 'http', 'llm'],
  policies: [...FOUNDATION, 'config.ts', 'security', 'db', 'http', 'syfthub', 'payments'],
  endpoints: [...FOUNDATION, 'security', 'db', 'http', 'datasets', 'models', 'policies'],
  query: [
    ...FOUNDATION,
    'config.ts',
    'security',
    'db',
    'http',
    'llm',
    'syfthub',
    'payments',
    'datasets',
    'models',
    'policies',
    'endpoints',
  ],
  publishing: [
    ...FOUNDATION,
    'config.ts',
    'security',
    'outbound',
    'db',
    'http',
    'llm',
    'syfthub',
    'tunnel',
    'tenants',
    'datasets',
    'models',
    'policies',
    'endpoints',
    'marketplaces',
  ],
  analytics: [...FOUNDATION, 'db', 'http', 'vectors'],
  health: [...FOUNDATION, 'http', 'version.ts'],
  console: [...FOUNDATION, 'runtime', 'http', 'ingestion'],
};
/** The wiring at the top may import anything. */
const TOP = new Set(['main.ts', 'server.ts', 'app.ts', 'services.ts', 'state.ts', 'cluster.ts', 'logging.ts', 'startup.ts']);

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(name) ? [path] : [];
  });
}

/** The top-level module of a file under src/: its folder, or the file itself at the top. */
function moduleOf(path: string): string {
  return relative(SRC, path).split('/')[0] as string;
}

function imports(path: string): string[] {
  const text = readFileSync(path, 'utf8');
  const found = [
    ...text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+'(\.[^']+)'/g),
    ...text.matchAll(/import\(\s*'(\.[^']+)'\s*\)/g),
  ];
  return found.map((match) => resolve(dirname(path), match[1] as string)).filter((target) => target.startsWith(SRC));
}

describe('architecture', () => {
  test('no module imports one above it (docs/ARCHITECTURE.md, "Module map")', () => {
    const violations: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const from = moduleOf(file);
      if (TOP.has(from)) continue;
      const allowed = MAY_IMPORT[from];
      if (!allowed) {
        violations.push(`${from}: not in the module map of this test`);
        continue;
      }
      for (const target of imports(file)) {
        const to = moduleOf(target);
        if (to !== from && !allowed.includes(to))
          violations.push(`${relative(SRC, file)} imports ${relative(SRC, target)} (${from} -> ${to})`);
      }
    }
    expect(violations).toEqual([]);
  });

  test('docs/ARCHITECTURE.md describes every top-level folder of src/', () => {
    const text = readFileSync(ARCHITECTURE, 'utf8');
    const folders = readdirSync(SRC).filter((name) => statSync(join(SRC, name)).isDirectory());
    expect(folders.filter((folder) => !text.includes(`\`${folder}/\``))).toEqual([]);
  });

  test('the module map of this test and the document name the same modules', () => {
    const text = readFileSync(ARCHITECTURE, 'utf8');
    const folders = Object.keys(MAY_IMPORT).filter((name) => !name.endsWith('.ts'));
    expect(folders.filter((folder) => !text.includes(`\`${folder}/\``))).toEqual([]);
  });
});

const WEB = resolve(import.meta.dir, '../web');
const PAGES = join(WEB, 'pages');
/**
 * The modules of src/ the console takes at run time: each imports nothing, so the bundle gets that file
 * alone. Everything else of the server reaches web/ as `import type` only, which the bundler erases.
 */
const SHARED_WITH_CONSOLE = new Set(['security/secret-words.ts', 'http/field-bounds.ts']);

/** The relative imports (and re-exports) of a file, and whether each is `import type` (erased when bundled). */
function relativeImports(path: string): { target: string; typeOnly: boolean }[] {
  const text = readFileSync(path, 'utf8');
  return [
    ...[...text.matchAll(/(?:^|\n)\s*(?:import|export)(\s+type\b)?[^'";]*?from\s+'(\.[^']+)'/g)].map((match) => ({
      target: resolve(dirname(path), match[2] as string),
      typeOnly: match[1] !== undefined,
    })),
    ...[...text.matchAll(/(?:^|\n)\s*import\s+'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)/g)].map((match) => ({
      target: resolve(dirname(path), (match[1] ?? match[2]) as string),
      typeOnly: false,
    })),
  ];
}

/** The page a file of web/pages belongs to: the file itself (`overview.tsx`) or its folder (`endpoint/`, `settings/`). */
function pageOf(path: string): string {
  return relative(PAGES, path).split('/')[0] as string;
}

describe('console boundaries (web/)', () => {
  test('a page imports no other page: what pages share lives in web/components or web/lib', () => {
    const violations: string[] = [];
    for (const file of sourceFiles(PAGES)) {
      for (const { target } of relativeImports(file)) {
        if (target.startsWith(`${PAGES}/`) && pageOf(target) !== pageOf(file)) {
          violations.push(`${relative(WEB, file)} imports ${relative(WEB, target)}`);
        }
      }
    }
    expect(violations).toEqual([]);
  });

  test('the console takes only types of the server, besides the modules written to be shared', () => {
    const violations: string[] = [];
    for (const file of sourceFiles(WEB)) {
      for (const { target, typeOnly } of relativeImports(file)) {
        if (!target.startsWith(`${SRC}/`) || typeOnly) continue;
        if (!SHARED_WITH_CONSOLE.has(relative(SRC, target)))
          violations.push(`${relative(WEB, file)} imports ${relative(SRC, target)} at run time`);
      }
    }
    for (const shared of SHARED_WITH_CONSOLE) {
      const text = readFileSync(join(SRC, shared), 'utf8');
      if (/(?:^|\n)\s*(?:import|export)\b[^;]*?from\s+'/.test(text))
        violations.push(`${shared} imports something: the console would bundle it too`);
    }
    expect(violations).toEqual([]);
  });
});
