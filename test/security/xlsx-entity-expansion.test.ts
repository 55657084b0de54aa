/**
 * Issue 27, item 2: the "billion laughs" (nested XML entities declared in a DOCTYPE, each ten of the one
 * before) in an XLSX's shared strings. read-excel-file's XML reader (saxen) does not expand declared
 * entities: the reference stays as written, nothing grows, and the workbook is read as it stands.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseFile } from '../../src/ingestion/parsers/index.ts';
import { buildXlsx } from '../fixtures/make-spreadsheets.ts';

const MB = 1024 * 1024;
const MAIN = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';

/** Ten levels of ten: 10 billion "lol"s once expanded. */
function laughs(): string {
  const entities = ['<!ENTITY l0 "lol">'];
  for (let level = 1; level <= 10; level++) entities.push(`<!ENTITY l${level} "${`&l${level - 1};`.repeat(10)}">`);
  return `<?xml version="1.0"?><!DOCTYPE sst [${entities.join('')}]><sst xmlns="${MAIN}"><si><t>Joke</t></si><si><t>&l10;</t></si></sst>`;
}

describe('XML entity expansion in an XLSX', () => {
  let folder: string;

  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), 'knode-xlsx-laughs-'));
  });

  afterAll(() => {
    rmSync(folder, { recursive: true, force: true });
  });

  test('nested entities in the shared strings are not expanded', async () => {
    // The sheet's two cells point at shared strings 0 and 1, which the hostile table replaces.
    const workbook = await buildXlsx([{ name: 'Laughs', rows: [['Joke'], ['placeholder']] }], { 'xl/sharedStrings.xml': laughs() });
    const path = join(folder, 'laughs.xlsx');
    writeFileSync(path, workbook);
    const started = performance.now();
    const doc = await parseFile(path, { maxFileBytes: 2 * MB, maxTextBytes: MB });
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(doc.sections).toEqual([{ text: 'Sheet: Laughs\nJoke: &l10;', location: { sheet: 'Laughs', rows: '2-2' } }]);
  });
});
