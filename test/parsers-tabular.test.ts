import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chunkDocument } from '../src/ingestion/chunker.ts';
import { delimiterOf } from '../src/ingestion/parsers/csv.ts';
import { NO_LIMITS, type ParsedDocument, ParseError, parseFile } from '../src/ingestion/parsers/index.ts';
import { cellValue, columnName, sheetGrid } from '../src/ingestion/parsers/xlsx.ts';
import { buildXlsx } from './fixtures/make-spreadsheets.ts';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'knode-tabular-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function file(name: string, content: string | Uint8Array): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

async function parseError(promise: Promise<unknown>): Promise<ParseError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ParseError)) throw new Error(`expected a ParseError, got ${String(error)}`);
  return error;
}

function lines(doc: ParsedDocument): string[] {
  return doc.sections.flatMap((section) => section.text.split('\n'));
}

describe('XLSX', () => {
  test('each row is a line of its cells named by the header, with the sheet and rows of each section', async () => {
    const path = await file(
      'people.xlsx',
      await buildXlsx([
        {
          name: 'People',
          rows: [
            ['Name', 'Born', 'Field', 'Alive'],
            ['Ada Lovelace', 1815, 'mathematics', false],
            ['Grace Hopper', 1906, null, false],
            [null, null, null, null],
            ['Katherine Johnson', 1918, 'orbital mechanics', false],
          ],
        },
        {
          name: 'Places',
          rows: [
            ['City', 'Founded'],
            ['London', new Date(Date.UTC(1900, 0, 1))],
          ],
          firstRow: 3,
        },
      ]),
    );
    const doc = await parseFile(path);
    expect(doc.sections).toEqual([
      {
        text: [
          'Sheet: People',
          'Name: Ada Lovelace | Born: 1815 | Field: mathematics | Alive: FALSE',
          'Name: Grace Hopper | Born: 1906 | Alive: FALSE',
          'Name: Katherine Johnson | Born: 1918 | Field: orbital mechanics | Alive: FALSE',
        ].join('\n'),
        location: { sheet: 'People', rows: '2-5' },
      },
      // The header is on row 3, so the first row is row 4, as the spreadsheet shows it.
      { text: 'Sheet: Places\nCity: London | Founded: 1900-01-01', location: { sheet: 'Places', rows: '4-4' } },
    ]);
  });

  test('rows are grouped to fit a chunk: each chunk holds whole rows under its sheet name, and says which', async () => {
    const rows = [['Id', 'Description'], ...Array.from({ length: 60 }, (_, i) => [i + 1, `item number ${i + 1} of the inventory`])];
    const path = await file('inventory.xlsx', await buildXlsx([{ name: 'Stock', rows }]));
    const doc = await parseFile(path, { ...NO_LIMITS, chunkSize: 300 });
    const chunks = chunkDocument(doc, { chunkSize: 300, chunkOverlap: 50 });
    expect(chunks.length).toBe(doc.sections.length);
    expect(chunks.length).toBeGreaterThan(5);
    let next = 2;
    for (const chunk of chunks) {
      expect(chunk.text.length).toBeLessThanOrEqual(300);
      expect(chunk.text).toStartWith('Sheet: Stock\nId: ');
      const [first, last] = (chunk.location?.rows ?? '').split('-').map(Number);
      expect(first).toBe(next);
      // Row 1 is the header: item n is on row n + 1.
      expect(chunk.text).toContain(`Id: ${(first ?? 0) - 1} | Description: item number ${(first ?? 0) - 1} of`);
      expect(chunk.text).toContain(`Id: ${(last ?? 0) - 1} | Description: item number ${(last ?? 0) - 1} of`);
      next = (last ?? 0) + 1;
    }
    expect(next).toBe(62);
  });

  test('columns without a header are named by their letter; a sheet of a header alone still says its columns', async () => {
    const path = await file(
      'unnamed.xlsx',
      await buildXlsx([
        {
          name: 'Data',
          rows: [
            ['Name', null, 'Note'],
            ['Ada', 36, 'first program', 'extra'],
          ],
        },
        { name: 'Template', rows: [['Date', 'Amount']] },
      ]),
    );
    expect(lines(await parseFile(path))).toEqual([
      'Sheet: Data',
      'Name: Ada | Column B: 36 | Note: first program | Column D: extra',
      'Sheet: Template',
      'Date | Amount',
    ]);
  });

  test('a file that is not a zip, and a zip without a workbook, fail as damaged XLSX', async () => {
    const notZip = await parseError(parseFile(await file('fake.xlsx', 'Name,Year\nAda,1843\n')));
    expect(notZip).toMatchObject({ code: 'damaged', message: 'XLSX is damaged: not a valid XLSX (zip) file' });
    const JSZip = (await import('jszip')).default;
    const empty = new JSZip();
    empty.file('xl/other.xml', '<x/>');
    const noWorkbook = await parseError(parseFile(await file('empty.xlsx', await empty.generateAsync({ type: 'uint8array' }))));
    expect(noWorkbook.code).toBe('damaged');
    expect(noWorkbook.message).toStartWith('XLSX is damaged: ');
  });

  test('cells read as a spreadsheet shows them', () => {
    expect(cellValue(0.1 + 0.2)).toBe('0.3');
    expect(cellValue(1843)).toBe('1843');
    expect(cellValue(true)).toBe('TRUE');
    expect(cellValue(new Date(Date.UTC(2024, 1, 29)))).toBe('2024-02-29');
    expect(cellValue(new Date(Date.UTC(2024, 1, 29, 13, 5, 9)))).toBe('2024-02-29 13:05:09');
    expect(cellValue('  two\nlines  ')).toBe('two lines');
    expect(cellValue(null)).toBe('');
    expect([0, 25, 26, 701, 16383].map(columnName)).toEqual(['A', 'Z', 'AA', 'ZZ', 'XFD']);
  });

  test("a sheet's grid is measured from its cells' addresses before it is read", () => {
    const xml =
      '<worksheet><sheetData><row r="1"><c r="A1"><v>1</v></c></row><row><x:c r="XFD1048576" t="s"><v>0</v></x:c></row></sheetData></worksheet>';
    expect(sheetGrid(xml)).toEqual({ rows: 1_048_577, columns: 16_384 });
    expect(sheetGrid('<sst><si><t>x</t></si></sst>')).toBeUndefined();
  });
});

describe('CSV', () => {
  test('the header names every cell; rows are numbered as a spreadsheet shows them', async () => {
    const path = await file(
      'people.csv',
      'Name,Born,Note\r\n"Lovelace, Ada",1815,"wrote the\nfirst program"\r\n\r\nHopper,1906,\r\n,,\r\n',
    );
    const doc = await parseFile(path);
    expect(doc.sections).toEqual([
      {
        text: 'Name: Lovelace, Ada | Born: 1815 | Note: wrote the first program\nName: Hopper | Born: 1906',
        location: { rows: '2-4' },
      },
    ]);
  });

  test('the delimiter is the one the header line uses most: semicolons, tabs and pipes too', async () => {
    expect(delimiterOf('a;b;c\n1,5;2;3')).toBe(';');
    expect(delimiterOf('a\tb\n')).toBe('\t');
    expect(delimiterOf('"x;y",b,c\n')).toBe(',');
    expect(delimiterOf('single column\n')).toBe(',');
    const doc = await parseFile(await file('semicolon.csv', 'Produit;Prix\nPain;1,20\n'));
    expect(lines(doc)).toEqual(['Produit: Pain | Prix: 1,20']);
  });

  test('ragged rows keep their extra cells; a header-only file still says its columns', async () => {
    expect(lines(await parseFile(await file('ragged.csv', 'a,b\n1\n2,3,4\n')))).toEqual(['a: 1', 'a: 2 | b: 3 | Column 3: 4']);
    expect(lines(await parseFile(await file('header.csv', 'Date,Amount\n')))).toEqual(['Date | Amount']);
  });

  test('a CSV or JSON file with more bytes than SVC_MAX_TEXT_MB is refused before it is decoded', async () => {
    const MB = 1024 * 1024;
    const limits = { maxFileBytes: 10 * MB, maxTextBytes: MB };
    const reason = 'the file holds more than 1.5 MB of text, more than SVC_MAX_TEXT_MB (1 MB)';
    const csv = await parseError(parseFile(await file('big.csv', 'a,b\n'.repeat((3 * MB) / 4)), limits));
    expect(csv).toMatchObject({ code: 'too_large', message: reason });
    const json = await parseError(parseFile(await file('big.json', `[${'1,'.repeat((3 * MB) / 2 - 1)}1]`), limits));
    expect(json).toMatchObject({ code: 'too_large', message: reason });
  });

  test('an unclosed quote fails as damaged, and binary bytes are not a CSV', async () => {
    const error = await parseError(parseFile(await file('open.csv', 'a,b\n"never closed,1\n')));
    expect(error.code).toBe('damaged');
    expect(error.message).toStartWith('CSV could not be parsed: ');
    const binary = await parseError(parseFile(await file('image.csv', new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 1, 2]))));
    expect(binary.code).toBe('binary');
  });
});

describe('JSON', () => {
  test('an array of objects is a table: each object a row, its keys the header, nested keys by their path', async () => {
    const people = [
      { name: 'Ada Lovelace', born: 1815, address: { city: 'London' }, tags: ['mathematics', 'poetry'] },
      { name: 'Grace Hopper', born: 1906, alive: false, note: null },
    ];
    const doc = await parseFile(await file('people.json', JSON.stringify(people)));
    expect(doc.sections).toEqual([
      {
        text: 'name: Ada Lovelace | born: 1815 | address.city: London | tags: mathematics, poetry\nname: Grace Hopper | born: 1906 | alive: false',
        location: { rows: '1-2' },
      },
    ]);
  });

  test('other values are `path: value` lines, and the arrays of objects inside are tables with their path', async () => {
    const config = {
      service: { name: 'knode', port: 8080, hosts: ['a.example', 'b.example'] },
      matrix: [
        [1, 2],
        [3, 4],
      ],
      datasets: { items: [{ id: 'd1', files: 3 }, { id: 'd2' }] },
    };
    const doc = await parseFile(await file('config.json', JSON.stringify(config, null, 2)));
    expect(doc.sections).toEqual([
      { text: 'service.name: knode\nservice.port: 8080\nservice.hosts: a.example, b.example\nmatrix[0]: 1, 2\nmatrix[1]: 3, 4' },
      { text: 'id: d1 | files: 3\nid: d2', location: { json_path: 'datasets.items', rows: '1-2' } },
    ]);
  });

  test('a top-level value, invalid JSON and an empty document', async () => {
    expect(lines(await parseFile(await file('number.json', '42')))).toEqual(['value: 42']);
    const invalid = await parseError(parseFile(await file('invalid.json', '{"a": ')));
    expect(invalid.code).toBe('damaged');
    expect(invalid.message).toStartWith('JSON could not be parsed: ');
    const empty = await parseError(parseFile(await file('empty.json', '{"a": [], "b": {}}')));
    expect(empty).toMatchObject({ code: 'no_text', message: 'no text found in file' });
  });
});
