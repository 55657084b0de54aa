import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { extractEmbeddedFile, extractEmbeddedFolder } from '../src/runtime/assets.ts';

// The binary reads embedded files with the same fs calls as files on disk, so plain files stand in for them.

const ENV_KEYS = ['HOME', 'XDG_CACHE_HOME', 'TMPDIR'] as const;
let scratch: string;
let saved: Record<string, string | undefined>;

beforeEach(() => {
  scratch = mkdtempSync(join(tmpdir(), 'knode-assets-'));
  saved = Object.fromEntries(ENV_KEYS.map((key) => [key, process.env[key]]));
  process.env.HOME = join(scratch, 'home');
  process.env.TMPDIR = join(scratch, 'tmp');
  delete process.env.XDG_CACHE_HOME;
  mkdirSync(process.env.TMPDIR, { recursive: true });
});

afterEach(() => {
  for (const key of ENV_KEYS) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
  rmSync(scratch, { recursive: true, force: true });
});

function embedded(name: string, content: string | Uint8Array): string {
  const path = join(scratch, 'embedded', name);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
  return path;
}

describe('extractEmbeddedFile', () => {
  test('writes the file once to ~/.cache/knode/native/<hash>/<name>, executable, and reuses it', () => {
    const source = embedded('vec0-abc123.so', 'library bytes');
    const path = extractEmbeddedFile(source, 'vec0.so');
    expect(path.startsWith(`${join(scratch, 'home', '.cache', 'knode', 'native')}/`)).toBe(true);
    expect(path.endsWith('/vec0.so')).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe('library bytes');
    expect(statSync(path).mode & 0o111).not.toBe(0);

    const firstWrite = statSync(path).mtimeMs;
    expect(extractEmbeddedFile(source, 'vec0.so')).toBe(path);
    expect(statSync(path).mtimeMs).toBe(firstWrite);
  });

  test('other content goes to another folder, so a new release never loads an old library', () => {
    const first = extractEmbeddedFile(embedded('a.so', 'release 1'), 'lib.so');
    const second = extractEmbeddedFile(embedded('b.so', 'release 2'), 'lib.so');
    expect(second).not.toBe(first);
    expect(readFileSync(first, 'utf8')).toBe('release 1');
    expect(readFileSync(second, 'utf8')).toBe('release 2');
  });

  test('a file embedded zstd-compressed (.zst) is written decompressed', () => {
    const content = 'x'.repeat(10_000);
    const source = embedded('libonnxruntime.so.1-hash.zst', Bun.zstdCompressSync(Buffer.from(content)));
    expect(readFileSync(extractEmbeddedFile(source, 'libonnxruntime.so.1'), 'utf8')).toBe(content);
  });

  test('XDG_CACHE_HOME is used when set', () => {
    process.env.XDG_CACHE_HOME = join(scratch, 'xdg');
    const path = extractEmbeddedFile(embedded('f.so', 'bytes'), 'f.so');
    expect(path.startsWith(`${join(scratch, 'xdg', 'knode', 'native')}/`)).toBe(true);
  });

  test('falls back to a folder of this user in the temporary directory when the home cache cannot be written', () => {
    writeFileSync(join(scratch, 'home'), 'a file where the home folder should be');
    const path = extractEmbeddedFile(embedded('f.so', 'bytes'), 'f.so');
    expect(path.startsWith(`${join(scratch, 'tmp', `knode-native-${process.getuid?.()}`)}/`)).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe('bytes');
  });

  test.skipIf(process.getuid?.() !== 0)('skips a cache folder that belongs to another user', () => {
    const planted = join(scratch, 'tmp', `knode-native-${process.getuid?.()}`);
    mkdirSync(planted, { recursive: true });
    chownSync(planted, 12345, 12345);
    writeFileSync(join(scratch, 'home'), 'not a folder');
    expect(() => extractEmbeddedFile(embedded('f.so', 'bytes'), 'f.so')).toThrow(/belongs to another user/);
  });
});

describe('extractEmbeddedFolder', () => {
  test('copies every file, nested ones too, into one folder keyed by the content, and reuses it', () => {
    embedded('static/index.html', '<html></html>');
    embedded('static/theme/style.css', 'body {}');
    const folder = extractEmbeddedFolder(join(scratch, 'embedded', 'static'), 'swagger-ui');
    expect(folder.endsWith('/swagger-ui')).toBe(true);
    expect(readFileSync(join(folder, 'index.html'), 'utf8')).toBe('<html></html>');
    expect(readFileSync(join(folder, 'theme', 'style.css'), 'utf8')).toBe('body {}');
    expect(extractEmbeddedFolder(join(scratch, 'embedded', 'static'), 'swagger-ui')).toBe(folder);

    writeFileSync(join(scratch, 'embedded', 'static', 'index.html'), '<html>changed</html>');
    const changed = extractEmbeddedFolder(join(scratch, 'embedded', 'static'), 'swagger-ui');
    expect(changed).not.toBe(folder);
    expect(existsSync(join(folder, 'index.html'))).toBe(true);
  });
});
