/**
 * Issue 27, item 2: a CSV of a million rows. Its rows are laid out as csv-parse reads them and counted
 * against SVC_MAX_TEXT_MB as they grow (parsers/tabular.ts), so a table past it stops at the row that
 * crosses it instead of holding every row first; one within it is indexed within the parse thread's time
 * and memory budgets (parser-pool.ts; a file over them fails with that reason instead).
 */
import { describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostileFilesThroughTheParseThread } from '../helpers/hostile-files.ts';

const MB = 1024 * 1024;
const ROWS = 1_000_000;

describe('a CSV of a million rows', () => {
  // The default budgets: 90 s and 512 MB of heap per file; the default SVC_MAX_FILE_MB and SVC_MAX_TEXT_MB.
  const files = hostileFilesThroughTheParseThread('knode-csv-rows-', { chunkOverlap: 100, maxFileBytes: 100 * MB, maxTextBytes: 20 * MB });
  const { prepare } = files;

  test('one whose rows add up to more than SVC_MAX_TEXT_MB stops at that row, with the reason', async () => {
    const lines = ['customer_id,customer_name,city'];
    for (let i = 0; i < ROWS; i++) lines.push(`${i % 1000},c${i % 100},L`);
    const csv = lines.join('\n');
    // About 10 MB: within SVC_MAX_TEXT_MB as bytes, about 45 MB once each cell carries its column's name.
    expect(csv.length).toBeLessThan(20 * MB);
    writeFileSync(join(files.folder, 'customers.csv'), csv);
    const started = performance.now();
    await expect(prepare('customers.csv')).rejects.toMatchObject({
      code: 'too_large',
      message: expect.stringMatching(/^the file holds more than 20\.\d MB of text, more than SVC_MAX_TEXT_MB \(20 MB\)$/),
    });
    // Measured on 2 busy cores: about 3 s.
    expect(performance.now() - started).toBeLessThan(45_000);
  }, 120_000);

  test('one within SVC_MAX_TEXT_MB is indexed within the time and memory budgets, its rows numbered to the last', async () => {
    const lines = ['digit'];
    for (let i = 0; i < ROWS; i++) lines.push(String(i % 10));
    writeFileSync(join(files.folder, 'digits.csv'), lines.join('\n'));
    const started = performance.now();
    const prepared = await prepare('digits.csv');
    const seconds = (performance.now() - started) / 1000;
    // "digit: 7" is 8 characters: 111 rows fit a 1000-character chunk.
    expect(prepared.chunks.length).toBe(Math.ceil(ROWS / 111));
    expect(prepared.chunks[0]?.location).toEqual({ rows: '2-112' });
    expect(prepared.chunks.at(-1)?.location?.rows).toEndWith(`-${ROWS + 1}`);
    expect(seconds).toBeLessThan(45);
  }, 120_000);
});
