/**
 * Issue 27, item 2, through the API: spreadsheets and data files are indexed only by a dataset whose
 * `fileTypes` names them (the default stays API-CONTRACT 4's), and a search hit from one says where it
 * is: the sheet (or the JSON array's path) and the rows, beside the usual source, file type and index.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildXlsx } from './fixtures/make-spreadsheets.ts';
import { createTestApp, type TestApp, type TestUser } from './helpers/app.ts';
import { Dataset } from './helpers/datasets.ts';

const KEYWORD = { extras: { reference_options: { mode: 'keyword' } } };

describe('spreadsheets and data files through the API', () => {
  let t: TestApp;
  let user: TestUser;
  let folder: string;

  beforeAll(async () => {
    t = await createTestApp();
    user = await t.user('tabular');
    folder = join(t.dataDir, 'tables');
    mkdirSync(folder);
    writeFileSync(
      join(folder, 'people.xlsx'),
      await buildXlsx([
        { name: 'Summary', rows: [['Count'], [3]] },
        {
          name: 'People',
          rows: [
            ['Name', 'Born', 'Known for'],
            ['Ada Lovelace', 1815, 'the first published algorithm'],
            ['Grace Hopper', 1906, 'the first compiler'],
            ['Katherine Johnson', 1918, 'orbital trajectories'],
          ],
        },
      ]),
    );
    writeFileSync(join(folder, 'prices.csv'), 'Product,Price,Unit\nSourdough loaf,4.20,EUR\nRye crispbread,2.10,EUR\n');
    writeFileSync(
      join(folder, 'stations.json'),
      JSON.stringify({
        network: 'coastal tide gauges',
        stations: [
          { id: 'brest', lat: 48.38 },
          { id: 'dunkerque', lat: 51.05 },
        ],
      }),
    );
    writeFileSync(join(folder, 'note.txt'), 'A note about tide gauges and bread.');
  });

  afterAll(() => t.close());

  test('a dataset with the default fileTypes leaves spreadsheets and data files alone', async () => {
    const dataset = await Dataset.create(t, user, folder);
    const files = await dataset.settled();
    expect(files.map((file) => file.path)).toEqual(['note.txt']);
  });

  test('a dataset naming xlsx, csv and json indexes them, and a hit says its sheet and rows', async () => {
    const dataset = await Dataset.create(t, user, folder, { fileTypes: 'txt,xlsx,csv,json' });
    // settled() compares with the default file types; each file is waited for instead.
    for (const path of ['note.txt', 'people.xlsx', 'prices.csv', 'stations.json']) {
      expect(await dataset.settledFile(path)).toMatchObject({ status: 'indexed', error: null });
    }

    const people = (await dataset.search('Grace Hopper compiler', KEYWORD)).find((hit) => hit.metadata.source === 'people.xlsx');
    expect(people?.content).toContain('Name: Grace Hopper | Born: 1906 | Known for: the first compiler');
    expect(people?.content).toStartWith('Sheet: People\n');
    expect(people?.metadata).toEqual({ source: 'people.xlsx', file_type: 'xlsx', chunk_index: 1, sheet: 'People', rows: '2-4' });

    const bread = (await dataset.search('Rye crispbread price', KEYWORD)).find((hit) => hit.metadata.source === 'prices.csv');
    expect(bread?.content).toBe('Product: Sourdough loaf | Price: 4.20 | Unit: EUR\nProduct: Rye crispbread | Price: 2.10 | Unit: EUR');
    expect(bread?.metadata).toEqual({ source: 'prices.csv', file_type: 'csv', chunk_index: 0, rows: '2-3' });

    const station = (await dataset.search('dunkerque', KEYWORD)).find((hit) => hit.metadata.source === 'stations.json');
    expect(station?.content).toBe('id: brest | lat: 48.38\nid: dunkerque | lat: 51.05');
    expect(station?.metadata).toEqual({ source: 'stations.json', file_type: 'json', chunk_index: 1, json_path: 'stations', rows: '1-2' });
  });

  test('a file type the parsers do not know is refused, naming the ones they do', async () => {
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/datasets/',
      token: user.token,
      payload: { name: 'old-excel', dtype: 'local_file', configuration: { ingestionPath: folder, fileTypes: 'xls' } },
    });
    expect(response.statusCode).toBe(422);
    expect(response.body).toContain('Unsupported file type(s): xls. Supported: pdf, docx, html, htm, txt, md, markdown, xlsx, csv, json');
  });
});
