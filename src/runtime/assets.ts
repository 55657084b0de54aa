import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { errorMessage } from '../domain/errors.ts';

/**
 * Files embedded in the binary (`import p from '...' with { type: 'file' }` gives a path under
 * /$bunfs/) can be read with fs and Bun.file, but the dynamic loader (dlopen, SQLite's loadExtension)
 * and stream-based readers (@fastify/static) need real files. Such files are therefore written once to
 * `<cache folder>/<first 16 hex of their SHA-256>/<name>` and used from there: a release whose
 * files changed gets a new folder, and two knode processes starting together write the same bytes to
 * the same place, each through its own temporary copy moved into place whole (so a copy that exists is
 * complete).
 *
 * The cache folder is $XDG_CACHE_HOME/knode/native, else ~/.cache/knode/native; when that cannot be
 * written (no home, read-only home), `knode-native-<uid>` in the system temporary directory.
 *
 * A file embedded zstd-compressed (its embedded name ends in .zst, see scripts/build/compressed-files.ts)
 * is decompressed when written; its hash is that of the compressed bytes, just as much a content hash.
 */

const HASH_CHARS = 16;

/** Returns the path of a real file with the embedded file's content, writing it on first use. */
export function extractEmbeddedFile(embeddedPath: string, name: string): string {
  const stored = readFileSync(embeddedPath);
  const hash = new Bun.CryptoHasher('sha256').update(stored).digest('hex').slice(0, HASH_CHARS);
  return inCache(hash, name, (temporary) => {
    const bytes = embeddedPath.endsWith('.zst') ? Bun.zstdDecompressSync(stored) : stored;
    writeFileSync(temporary, bytes, { mode: 0o755 });
  });
}

/**
 * The same for a folder of embedded files (scripts/build.ts embeds folders with `compile.assets`),
 * keyed by the hash of every file's name and content.
 */
export function extractEmbeddedFolder(embeddedFolder: string, name: string): string {
  const files = (readdirSync(embeddedFolder, { recursive: true }) as string[])
    .filter((file) => statSync(join(embeddedFolder, file)).isFile())
    .sort();
  const hasher = new Bun.CryptoHasher('sha256');
  const contents = files.map((file) => {
    const bytes = readFileSync(join(embeddedFolder, file));
    hasher.update(`${file}\0${bytes.byteLength}\0`).update(bytes);
    return bytes;
  });
  return inCache(hasher.digest('hex').slice(0, HASH_CHARS), name, (temporary) => {
    files.forEach((file, index) => {
      mkdirSync(dirname(join(temporary, file)), { recursive: true, mode: 0o700 });
      writeFileSync(join(temporary, file), contents[index] as Uint8Array);
    });
  });
}

/**
 * A file knode derives once and keeps (e.g. the USE-lite model converted to ONNX):
 * `<cache>/knode/<kind>/<key>/<name>`, in the same cache folders as the native files (with `kind` in
 * place of `native`), written by `write` to a temporary path and moved into place whole unless it is
 * already there. `key` must change whenever the content would (a hash of what it is made from).
 */
export function cachedFile(kind: string, key: string, name: string, write: (temporary: string) => void): string {
  if (!/^[a-z0-9-]+$/.test(kind) || !/^[a-zA-Z0-9._-]+$/.test(key)) throw new Error(`invalid cache kind or key: ${kind}/${key}`);
  return inCache(key, name, write, kind);
}

/** `<root>/<hash>/<name>` in the first cache root that can be written, made by `write` unless it exists. */
function inCache(hash: string, name: string, write: (temporary: string) => void, kind = 'native'): string {
  const failures: string[] = [];
  for (const root of cacheRoots(kind)) {
    const target = join(root, hash, name);
    try {
      mkdirSync(root, { recursive: true, mode: 0o700 });
      // A shared folder (the temporary one) could hold another account's files, to be loaded as ours.
      const uid = process.getuid?.();
      if (uid !== undefined && statSync(root).uid !== uid) throw new Error('the folder belongs to another user');
      if (!existsSync(target)) moveIntoPlace(target, write);
      return target;
    } catch (error) {
      failures.push(`${target}: ${errorMessage(error)}`);
    }
  }
  throw new Error(`cannot write ${name} from the binary to a cache folder (${failures.join('; ')})`);
}

function moveIntoPlace(target: string, write: (temporary: string) => void): void {
  mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
  // Unique to this write (the process id alone repeats across containers): no other writer's half-made copy.
  const temporary = `${target}.${process.pid}.${crypto.randomUUID()}.tmp`;
  try {
    write(temporary);
    renameSync(temporary, target);
  } catch (error) {
    // Another knode process may have moved its identical copy into place first.
    if (existsSync(target)) return;
    // Leave no empty folder behind for content that could not be made (a model that failed to convert).
    rmSync(temporary, { recursive: true, force: true });
    try {
      rmdirSync(dirname(target));
    } catch {
      // not empty: another process is writing there
    }
    throw error;
  } finally {
    rmSync(temporary, { recursive: true, force: true });
  }
}

function cacheRoots(kind: string): string[] {
  const roots: string[] = [];
  const xdg = process.env.XDG_CACHE_HOME;
  if (xdg) roots.push(join(xdg, 'knode', kind));
  // $HOME first, as XDG says; Bun's homedir() does not follow a HOME changed after start (tests do).
  const home = process.env.HOME || homedir();
  if (home && home !== '/') roots.push(join(home, '.cache', 'knode', kind));
  // Per user and directly in the temporary folder (whose sticky bit stops others renaming it), so that
  // another account cannot plant a library for this one to load (inCache checks the owner).
  roots.push(join(tmpdir(), `knode-${kind}-${process.getuid?.() ?? 'user'}`));
  return roots;
}
