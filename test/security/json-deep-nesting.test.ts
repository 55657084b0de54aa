/**
 * Issue 27, item 2: a JSON file nested a million levels deep. Walking it by recursion would overflow the
 * parse thread's stack; the JSON parser walks it with a stack of its own (parsers/json.ts), so the file
 * ends with a reason, or indexed, within the budgets, and the thread goes on with the next file.
 */
import { describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostileFilesThroughTheParseThread } from '../helpers/hostile-files.ts';

const MB = 1024 * 1024;
const DEPTH = 1_000_000;

describe('deeply nested JSON', () => {
  const files = hostileFilesThroughTheParseThread('knode-json-deep-', { chunkOverlap: 100, maxFileBytes: 100 * MB, maxTextBytes: 20 * MB });
  const { prepare } = files;

  test('a million nested arrays with nothing inside fail as holding no text, and the next file is parsed', async () => {
    writeFileSync(join(files.folder, 'arrays.json'), '['.repeat(DEPTH) + ']'.repeat(DEPTH));
    const started = performance.now();
    await expect(prepare('arrays.json')).rejects.toMatchObject({ code: 'no_text', message: 'no text found in file' });
    expect(performance.now() - started).toBeLessThan(30_000);
    writeFileSync(join(files.folder, 'next.json'), '{"note": "parsed after the deep one"}');
    expect((await prepare('next.json')).chunks.map((chunk) => chunk.text)).toEqual(['note: parsed after the deep one']);
  }, 60_000);

  test('a million nested objects around a list give its values under their (long) path, within the budgets', async () => {
    writeFileSync(join(files.folder, 'objects.json'), `${'{"a":'.repeat(DEPTH)}["x","y"]${'}'.repeat(DEPTH)}`);
    const started = performance.now();
    const prepared = await prepare('objects.json');
    expect(performance.now() - started).toBeLessThan(30_000);
    // The path alone is 2 million characters ("a.a.a..."), cut into chunks like any long text.
    expect(prepared.chunks.length).toBeGreaterThan(1_900);
    expect(prepared.chunks.at(-1)?.text.endsWith('x, y')).toBe(true);
  }, 60_000);

  test('many values at that depth add up against SVC_MAX_TEXT_MB, and stop there', async () => {
    const values = Array.from({ length: 100 }, (_, i) => `"k${i}":${i}`).join(',');
    writeFileSync(join(files.folder, 'wide.json'), `${'{"a":'.repeat(DEPTH)}{${values}}${'}'.repeat(DEPTH)}`);
    await expect(prepare('wide.json')).rejects.toMatchObject({ code: 'too_large' });
  }, 60_000);
});
