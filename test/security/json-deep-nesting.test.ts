/**
 * Issue 27, item 2: a JSON file nested a million levels deep. Walking it by recursion would overflow the
 * parse thread's stack; the JSON parser walks it with a stack of its own (parsers/json.ts), so the file
 * ends with a reason, or indexed, within the budgets, and the thread goes on with the next file.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ParserPool } from '../../src/ingestion/parser-pool.ts';

const MB = 1024 * 1024;
const DEPTH = 1_000_000;

describe('deeply nested JSON', () => {
  let folder: string;
  let pool: ParserPool;
  const prepare = (name: string) =>
    pool.prepare(join(folder, name), {
      chunkSize: 1000,
      chunkOverlap: 100,
      knownHash: null,
      folder,
      roots: [folder],
      maxFileBytes: 100 * MB,
      maxTextBytes: 20 * MB,
    });

  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), 'knode-json-deep-'));
    pool = new ParserPool();
  });

  afterAll(async () => {
    await pool.close();
    rmSync(folder, { recursive: true, force: true });
  });

  test('a million nested arrays with nothing inside fail as holding no text, and the next file is parsed', async () => {
    writeFileSync(join(folder, 'arrays.json'), '['.repeat(DEPTH) + ']'.repeat(DEPTH));
    const started = performance.now();
    await expect(prepare('arrays.json')).rejects.toMatchObject({ code: 'no_text', message: 'no text found in file' });
    expect(performance.now() - started).toBeLessThan(30_000);
    writeFileSync(join(folder, 'next.json'), '{"note": "parsed after the deep one"}');
    expect((await prepare('next.json')).chunks.map((chunk) => chunk.text)).toEqual(['note: parsed after the deep one']);
  }, 60_000);

  test('a million nested objects around a list give its values under their (long) path, within the budgets', async () => {
    writeFileSync(join(folder, 'objects.json'), `${'{"a":'.repeat(DEPTH)}["x","y"]${'}'.repeat(DEPTH)}`);
    const started = performance.now();
    const prepared = await prepare('objects.json');
    expect(performance.now() - started).toBeLessThan(30_000);
    // The path alone is 2 million characters ("a.a.a..."), cut into chunks like any long text.
    expect(prepared.chunks.length).toBeGreaterThan(1_900);
    expect(prepared.chunks.at(-1)?.text.endsWith('x, y')).toBe(true);
  }, 60_000);

  test('many values at that depth add up against SVC_MAX_TEXT_MB, and stop there', async () => {
    const values = Array.from({ length: 100 }, (_, i) => `"k${i}":${i}`).join(',');
    writeFileSync(join(folder, 'wide.json'), `${'{"a":'.repeat(DEPTH)}{${values}}${'}'.repeat(DEPTH)}`);
    await expect(prepare('wide.json')).rejects.toMatchObject({ code: 'too_large' });
  }, 60_000);
});
