/**
 * How many chunks hold each query word (src/vectors/keyword-search.ts, countWords): kept while the keyword
 * table is unchanged, so they must follow every write: a file added, replaced (by as many chunks), deleted.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type OpenedDatabase, openDatabase } from '../src/db/database.ts';
import { vectorExtensionPath } from '../src/vectors/extension.ts';
import { countWords } from '../src/vectors/keyword-search.ts';
import { SqliteVectorStore } from '../src/vectors/sqlite-store.ts';
import { datasetTables } from '../src/vectors/tables.ts';
import { deleteFileChunks, replaceFileChunks } from './helpers/vector-store.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'knode-keyword-counts-'));
let opened: OpenedDatabase;
let store: SqliteVectorStore;
const datasetId = crypto.randomUUID();
const tables = datasetTables(datasetId);

function chunks(texts: readonly string[], file: string) {
  return texts.map((content, index) => ({
    content,
    metadata: { source: file, file_type: 'txt', chunk_index: index },
    embedding: Float32Array.from([1, 0, 0, 0]),
  }));
}

async function counts(words: readonly string[]): Promise<Record<string, number>> {
  const counted = await opened.exclusive((sqlite) => countWords(sqlite, tables, words));
  return Object.fromEntries(counted.map((entry) => [entry.word, entry.chunks]));
}

beforeAll(async () => {
  opened = await openDatabase(dataDir, [vectorExtensionPath()]);
  store = new SqliteVectorStore(opened);
  await store.createDatasetIndex(datasetId, 4);
});

afterAll(async () => {
  await opened.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('chunks holding each query word', () => {
  test('follow every write of the keyword table, asked again and again', async () => {
    // The lead (the first chunk's opening) is on every chunk of a file: "otters" is on both of a.txt's.
    await replaceFileChunks(store, datasetId, 'a.txt', chunks(['otters swim in rivers', 'badgers dig setts'], 'a.txt'));
    expect(await counts(['otters', 'badgers', 'herons'])).toEqual({ otters: 2, badgers: 1 });
    expect(await counts(['otters', 'badgers', 'herons'])).toEqual({ otters: 2, badgers: 1 });

    await replaceFileChunks(store, datasetId, 'b.txt', chunks(['herons wade', 'badgers again'], 'b.txt'));
    expect(await counts(['otters', 'badgers', 'herons'])).toEqual({ otters: 2, badgers: 2, herons: 2 });

    // Replaced by as many chunks: the same count of rows, other words.
    await replaceFileChunks(store, datasetId, 'b.txt', chunks(['kingfishers dive', 'kingfishers nest'], 'b.txt'));
    expect(await counts(['otters', 'badgers', 'herons', 'kingfishers'])).toEqual({ otters: 2, badgers: 1, kingfishers: 2 });

    await deleteFileChunks(store, datasetId, 'a.txt');
    expect(await counts(['otters', 'badgers', 'kingfishers'])).toEqual({ kingfishers: 2 });
  });
});
