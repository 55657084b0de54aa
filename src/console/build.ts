import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';

/**
 * Builds the console (web/, Preact + TSX) with Bun's bundler into a handful of files: one script, one
 * style sheet, the icon, and index.html naming them. Every name but index.html carries a content hash,
 * so browsers may keep them forever. Running from source, knode builds it in memory on first use
 * (console/served-files.ts); `npm run build` builds it once and embeds the files in the binary
 * (scripts/build.ts, through writeConsoleFolder). Nothing here is loaded inside the binary.
 */

export interface ConsoleFile {
  /** The file name under /console/ (index.html is served at / and at every page of the console). */
  name: string;
  type: string;
  bytes: Uint8Array;
}

/** The manifest beside the files of a written console folder. */
export interface ConsoleManifest {
  files: { name: string; type: string }[];
}

export const MANIFEST = 'manifest.json';
export const ASSET_PREFIX = '/console/';

const PROJECT_ROOT = resolve(import.meta.dir, '../..');
const WEB = join(PROJECT_ROOT, 'web');

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.html': 'text/html; charset=utf-8',
};

function typeOf(name: string): string {
  return TYPES[name.slice(name.lastIndexOf('.'))] ?? 'application/octet-stream';
}

function hashed(name: string, bytes: Uint8Array): string {
  const hash = new Bun.CryptoHasher('sha256').update(bytes).digest('hex').slice(0, 12);
  const dot = name.lastIndexOf('.');
  return `${name.slice(0, dot)}-${hash}${name.slice(dot)}`;
}

export async function buildConsole(webFolder = WEB): Promise<ConsoleFile[]> {
  const result = await Bun.build({
    entrypoints: [join(webFolder, 'main.tsx')],
    target: 'browser',
    format: 'esm',
    minify: true,
    sourcemap: 'none',
    naming: { entry: '[name]-[hash].[ext]', chunk: '[name]-[hash].[ext]', asset: '[name]-[hash].[ext]' },
    tsconfig: join(webFolder, 'tsconfig.json'),
    jsx: { runtime: 'automatic', importSource: 'preact' },
    define: { 'process.env.NODE_ENV': '"production"' },
    throw: false,
  });
  if (!result.success) {
    throw new Error(`the console did not build:\n${result.logs.map((log) => String(log)).join('\n')}`);
  }
  const files: ConsoleFile[] = [];
  for (const output of result.outputs) {
    const name = basename(output.path);
    files.push({ name, type: typeOf(name), bytes: new Uint8Array(await output.arrayBuffer()) });
  }
  const iconBytes = readFileSync(join(webFolder, 'icon.svg'));
  const icon = hashed('icon.svg', iconBytes);
  files.push({ name: icon, type: typeOf(icon), bytes: iconBytes });

  const scripts = files.filter((file) => file.name.endsWith('.js'));
  const styles = files.filter((file) => file.name.endsWith('.css'));
  if (scripts.length !== 1) throw new Error(`the console should build to one script, not ${scripts.length}`);
  const template = readFileSync(join(webFolder, 'index.html'), 'utf8');
  const head = [
    `<link rel="icon" type="image/svg+xml" href="${ASSET_PREFIX}${icon}">`,
    ...styles.map((file) => `<link rel="stylesheet" href="${ASSET_PREFIX}${file.name}">`),
    ...scripts.map((file) => `<script type="module" src="${ASSET_PREFIX}${file.name}"></script>`),
  ].join('\n    ');
  if (!template.includes('<!-- assets -->')) throw new Error('web/index.html has no <!-- assets --> placeholder');
  const html = template.replace('<!-- assets -->', head);
  files.push({ name: 'index.html', type: typeOf('index.html'), bytes: new TextEncoder().encode(html) });
  return files;
}

/** Writes the built files and their manifest to `folder` (embedded in the binary by scripts/build.ts). */
export function writeConsoleFolder(files: readonly ConsoleFile[], folder: string): void {
  mkdirSync(folder, { recursive: true });
  for (const file of files) writeFileSync(join(folder, file.name), file.bytes);
  const manifest: ConsoleManifest = { files: files.map(({ name, type }) => ({ name, type })) };
  writeFileSync(join(folder, MANIFEST), JSON.stringify(manifest));
}
