import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { isCompiled } from '../runtime/compiled.ts';
import { type ConsoleFile, type ConsoleManifest, MANIFEST } from './build.ts';

/**
 * The console's files as they are served: each kept in memory as is, gzip and brotli, so a request costs
 * no compression. From source they are built on first use (console/build.ts, about a fifth of a second);
 * in the binary they were built by `npm run build` and embedded as the folder `console/` (read with fs,
 * which reads embedded files; nothing is written to disk).
 */

export interface ServedFile {
  type: string;
  identity: Buffer;
  gzip: Buffer;
  brotli: Buffer;
  etag: string;
}

export interface ConsoleAssets {
  index: ServedFile;
  /** A file under /console/, by name. */
  file(name: string): ServedFile | undefined;
}

let loading: Promise<ConsoleAssets> | undefined;

/** The console's files, built or read once per process. */
export function consoleAssets(): Promise<ConsoleAssets> {
  loading ??= load().catch((error) => {
    loading = undefined; // a failed build is tried again on the next request (a fixed typo, say)
    throw error;
  });
  return loading;
}

async function load(): Promise<ConsoleAssets> {
  const files = isCompiled ? embeddedFiles() : await (await import('./build.ts')).buildConsole();
  const served = new Map(await Promise.all(files.map(async (file) => [file.name, await serve(file)] as const)));
  const index = served.get('index.html');
  if (!index) throw new Error('the console has no index.html');
  served.delete('index.html');
  return { index, file: (name) => served.get(name) };
}

/** In the binary every module bundled with main.ts has /$bunfs/root as import.meta.dir (see runtime/swagger-ui.ts). */
function embeddedFiles(): ConsoleFile[] {
  const folder = join(import.meta.dir, 'console');
  const manifest = JSON.parse(readFileSync(join(folder, MANIFEST), 'utf8')) as ConsoleManifest;
  return manifest.files.map(({ name, type }) => ({ name, type, bytes: readFileSync(join(folder, name)) }));
}

const brotliAsync = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

/** Compressed on zlib's threads: brotli at its best quality takes half a second the API would otherwise wait. */
async function serve(file: ConsoleFile): Promise<ServedFile> {
  const [gzipped, brotli] = await Promise.all([
    gzipAsync(file.bytes, { level: 9 }),
    brotliAsync(file.bytes, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: file.bytes.byteLength },
    }),
  ]);
  return {
    type: file.type,
    identity: Buffer.from(file.bytes),
    gzip: gzipped,
    brotli,
    etag: `"${new Bun.CryptoHasher('sha256').update(file.bytes).digest('hex').slice(0, 16)}"`,
  };
}
