/**
 * Finding 2 and 3 at the level of one read: the parse thread opens the file, checks the real path of
 * what it opened, and never blocks on something that is not a regular file; a parse in progress can be
 * cancelled.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PrepareOptions } from '../../src/ingestion/parse-worker.ts';
import { ParserPool } from '../../src/ingestion/parser-pool.ts';
import { ParseError } from '../../src/ingestion/parsers/types.ts';
import { readFileLimited } from '../../src/ingestion/read-file.ts';
import { tempDir } from '../helpers/app.ts';
import { waitFor } from '../helpers/wait.ts';

const MB = 1024 * 1024;

describe('reading a file for ingestion', () => {
  let root: string;
  let folder: string;
  let outside: string;

  beforeAll(() => {
    root = realpathSync(tempDir('knode-root-'));
    folder = join(root, 'dataset');
    mkdirSync(folder);
    outside = realpathSync(tempDir('knode-outside-'));
    writeFileSync(join(outside, 'secret.txt'), 'SECRETOUTSIDE');
    writeFileSync(join(root, 'beside.txt'), 'in the root but not in the dataset folder');
    writeFileSync(join(folder, 'own.txt'), 'the dataset own text');
  });

  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  const confinement = () => ({ folder, roots: [root] });
  const limits = { maxFileBytes: MB };

  async function refusal(promise: Promise<unknown>): Promise<ParseError> {
    const error = await promise.then(
      () => undefined,
      (reason: unknown) => reason,
    );
    if (!(error instanceof ParseError)) throw new Error(`expected a ParseError, got ${String(error)}`);
    return error;
  }

  test('a file inside the dataset folder is read', async () => {
    const bytes = await readFileLimited(join(folder, 'own.txt'), limits, confinement());
    expect(Buffer.from(bytes).toString()).toBe('the dataset own text');
  });

  test('a file reached through a sub-folder that is a symbolic link to outside the roots is refused by its real path', async () => {
    symlinkSync(outside, join(folder, 'linked'));
    const error = await refusal(readFileLimited(join(folder, 'linked/secret.txt'), limits, confinement()));
    expect(error.code).toBe('outside_folder');
    expect(error.message).toBe('the file resolves outside the dataset folder (through a symbolic link): not read');
  });

  test('a link to a file of the root outside the dataset folder is refused too', async () => {
    symlinkSync(root, join(folder, 'up'));
    const error = await refusal(readFileLimited(join(folder, 'up/beside.txt'), limits, confinement()));
    expect(error.code).toBe('outside_folder');
  });

  test('a symbolic link as the file itself is never opened', async () => {
    symlinkSync(join(outside, 'secret.txt'), join(folder, 'link.txt'));
    const error = await refusal(readFileLimited(join(folder, 'link.txt'), limits, confinement()));
    expect(error.message).toBe('symbolic links are not indexed');
  });

  test('a FIFO named like a note fails at once instead of blocking the parse thread', async () => {
    const fifo = join(folder, 'pipe.txt');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const started = performance.now();
    const error = await refusal(readFileLimited(fifo, limits, confinement()));
    expect(error.message).toBe('not a regular file');
    expect(performance.now() - started).toBeLessThan(1000);
  });

  test('a file larger than the limit is refused by its size before it is read', async () => {
    writeFileSync(join(folder, 'big.txt'), Buffer.alloc(1.2 * MB, 'a'));
    const error = await refusal(readFileLimited(join(folder, 'big.txt'), limits, confinement()));
    expect(error.code).toBe('too_large');
    expect(error.message).toBe('file is 1.2 MB, larger than SVC_MAX_FILE_MB (1 MB)');
  });

  test('a parse in progress is cancelled within a second: its thread is replaced and the next file parses', async () => {
    const pool = new ParserPool({ workerUrl: new URL('../fixtures/misbehaving-parse-worker.ts', import.meta.url), timeoutMs: 60_000 });
    const options: PrepareOptions = {
      chunkSize: 100,
      chunkOverlap: 0,
      knownHash: null,
      folder,
      roots: [root],
      maxFileBytes: MB,
      maxTextBytes: MB,
    };
    try {
      const controller = new AbortController();
      const hanging = join(root, 'hang-here');
      const hung = pool.prepare(hanging, options, controller.signal);
      const waiting = pool.prepare('hang too', options, controller.signal);
      await waitFor('the parse thread to hang', async () => existsSync(`${hanging}.started`));
      const started = performance.now();
      controller.abort(new Error('file deleted'));
      await expect(hung).rejects.toThrow('file deleted');
      await expect(waiting).rejects.toThrow('file deleted');
      expect(performance.now() - started).toBeLessThan(1000);
      expect(pool.pending).toBe(0);
      // The misbehaving worker answers any other path with a document.
      expect(await pool.parse('after')).toEqual({ sections: [{ text: 'parsed after' }] });
    } finally {
      await pool.close();
    }
  });
});
