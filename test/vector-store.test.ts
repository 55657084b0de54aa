import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type OpenedDatabase, openDatabase } from '../src/db/database.ts';
import { closeEmbedders, createEmbedder } from '../src/embeddings/embedder.ts';
import { type Calibration, calibrationFor } from '../src/vectors/calibration.ts';
import { vectorExtensionPath } from '../src/vectors/extension.ts';
import { SqliteVectorStore } from '../src/vectors/sqlite-store.ts';
import { type SearchOptions, VectorIndexMissingError } from '../src/vectors/store.ts';
import { type ChunkInput, deleteFileChunks, indexInfo, replaceFileChunks } from './helpers/vector-store.ts';

const DIMENSION = 16;
const dataDir = mkdtempSync(join(tmpdir(), 'knode-vectors-'));
let opened: OpenedDatabase;
let store: SqliteVectorStore;

beforeAll(async () => {
  opened = await openDatabase(dataDir, [vectorExtensionPath()]);
  store = new SqliteVectorStore(opened);
});

afterAll(async () => {
  await closeEmbedders();
  await opened.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** A unit vector with the given leading components (the rest zero). */
function unit(...components: number[]): Float32Array {
  const vector = new Float32Array(DIMENSION);
  vector.set(components);
  const norm = Math.hypot(...vector);
  return vector.map((value) => value / norm);
}

function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 16807) % 2147483647;
    return state / 2147483647;
  };
}

function randomUnit(random: () => number, dimension: number): Float32Array {
  const vector = Float32Array.from({ length: dimension }, () => random() * 2 - 1);
  const norm = Math.hypot(...vector);
  return vector.map((value) => value / norm);
}

function chunk(content: string, embedding: Float32Array, metadata: Record<string, unknown> = {}): ChunkInput {
  return { content, embedding, metadata: { source: 'x.md', file_type: 'md', chunk_index: 0, ...metadata } };
}

/**
 * A calibration whose scores are easy to reason about: keyword scores grow with BM25, vector scores with
 * the cosine (0.5 at a cosine of 0.5), hybrid adds both. The fitted ones are tested in calibration.test.ts.
 */
const PLAIN: Calibration = {
  name: 'plain',
  keyword: { weights: { bm25: 1 }, intercept: 0 },
  vector: { weights: { cosine: 10 }, intercept: -5 },
  hybrid: { weights: { bm25: 1, cosine: 10 }, intercept: -5 },
};

const defaults: SearchOptions = { mode: 'hybrid', limit: 10, similarityThreshold: 0, includeMetadata: true, calibration: PLAIN };

function expectNonIncreasing(hits: readonly { similarity_score: number }[]): void {
  for (let index = 1; index < hits.length; index++)
    expect(hits[index]!.similarity_score).toBeLessThanOrEqual(hits[index - 1]!.similarity_score);
}

async function count(sql: string, ...params: (string | number)[]): Promise<number> {
  return opened.exclusive((sqlite) => (sqlite.query(sql).get(...params) as { n: number }).n);
}

async function tablesOf(datasetId: string): Promise<string[]> {
  const hex = datasetId.replaceAll('-', '');
  return opened.exclusive((sqlite) =>
    (sqlite.query('SELECT name FROM sqlite_master WHERE name LIKE ?').all(`%${hex}%`) as { name: string }[]).map((row) => row.name),
  );
}

/**
 * A dataset with three files on three topics: pets (axis 0), finance (axis 1), weather (axis 2). Against
 * the pets axis the five chunks score 1, 0.95, 0.196, 0.0999 and 0: no ties, so orders are certain.
 */
async function topicDataset(): Promise<string> {
  const id = crypto.randomUUID();
  await store.createDatasetIndex(id, DIMENSION);
  await replaceFileChunks(store, id, 'pets.md', [
    chunk('Cats purr when they are content, and cats sleep most of the day.', unit(1), { source: 'pets.md', chunk_index: 0 }),
    chunk('A kitten plays with a ball of yarn.', unit(0.9, 0, 0, 0.3), { source: 'pets.md', chunk_index: 1 }),
  ]);
  await replaceFileChunks(store, id, 'finance.md', [
    chunk('Stock markets fell as interest rates rose.', unit(0.2, 1), { source: 'finance.md' }),
    chunk('The bank raised its rates again; cats were not consulted.', unit(0.1, 0.95, 0, 0, 0.3), {
      source: 'finance.md',
      chunk_index: 1,
    }),
  ]);
  await replaceFileChunks(store, id, 'weather.md', [
    chunk('Rain and snow are expected this winter.', unit(0, 0, 1), { source: 'weather.md', title: 'Farmer almanac' }),
  ]);
  return id;
}

describe('dataset indexes', () => {
  test('creating makes a vec0 and an FTS5 table named from the id; again with the same dimension is a no-op', async () => {
    const id = crypto.randomUUID();
    await store.createDatasetIndex(id, DIMENSION);
    await store.createDatasetIndex(id, DIMENSION);
    const tables = await tablesOf(id);
    const hex = id.replaceAll('-', '');
    expect(tables).toContain(`vec_${hex}`);
    expect(tables).toContain(`fts_${hex}`);
    expect(await indexInfo(opened, id)).toEqual({ dimension: DIMENSION, chunkCount: 0 });
  });

  test('refuses another dimension for an existing index, a bad dimension, and an id that is not a UUID', async () => {
    const id = crypto.randomUUID();
    await store.createDatasetIndex(id, DIMENSION);
    await expect(store.createDatasetIndex(id, 32)).rejects.toThrow(/already has a 16-dimension index/);
    await expect(store.createDatasetIndex(crypto.randomUUID(), 0)).rejects.toThrow(/dimension/);
    await expect(store.createDatasetIndex(crypto.randomUUID(), 1.5)).rejects.toThrow(/dimension/);
    await expect(store.createDatasetIndex('x; DROP TABLE users; --', DIMENSION)).rejects.toThrow(/UUID/);
  });

  test('dropping removes the tables and every chunk; searching it afterwards says the index is missing', async () => {
    const id = await topicDataset();
    expect(await count('SELECT count(*) AS n FROM vector_chunks WHERE dataset_id = ?', id)).toBe(5);
    await store.dropDatasetIndex(id);
    expect(await tablesOf(id)).toEqual([]);
    expect(await count('SELECT count(*) AS n FROM vector_chunks WHERE dataset_id = ?', id)).toBe(0);
    expect(await indexInfo(opened, id)).toBeUndefined();
    await expect(store.search(id, unit(1), 'cats', defaults)).rejects.toThrow(VectorIndexMissingError);
    await expect(replaceFileChunks(store, id, 'a.md', [])).rejects.toThrow(VectorIndexMissingError);
    await store.dropDatasetIndex(id); // dropping twice is harmless
  });

  test('dropping one dataset leaves another untouched', async () => {
    const kept = await topicDataset();
    const dropped = await topicDataset();
    await store.dropDatasetIndex(dropped);
    const hits = await store.search(kept, unit(1), 'cats', defaults);
    expect(hits.length).toBe(5);
  });
});

describe('keyword layouts', () => {
  test('a keyword table of an older layout is searched as it is, and rebuilt with titles and file names at the next start', async () => {
    const id = await topicDataset();
    const hex = id.replaceAll('-', '');
    // As a dataset indexed before layout 2 looks: the chunk's text only.
    await opened.exclusive((sqlite) => {
      sqlite.run(`DROP TABLE fts_${hex}_vocab`);
      sqlite.run(`DROP TABLE fts_${hex}`);
      sqlite.run(
        `CREATE VIRTUAL TABLE fts_${hex} USING fts5(content, content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2')`,
      );
      sqlite.run(`CREATE VIRTUAL TABLE fts_${hex}_vocab USING fts5vocab(fts_${hex}, 'row')`);
      sqlite.run(`INSERT INTO fts_${hex} (rowid, content) SELECT row_id, content FROM vector_chunks WHERE dataset_id = '${id}'`);
      sqlite.run(`UPDATE vector_indexes SET keyword_layout = 1 WHERE dataset_id = '${id}'`);
    });
    const keyword = { ...defaults, mode: 'keyword' as const };
    expect((await store.search(id, undefined, 'kitten', keyword)).map((hit) => hit.metadata.source)).toEqual(['pets.md']);
    expect(await store.search(id, undefined, 'almanac', keyword)).toEqual([]);
    await store.createDatasetIndex(id, DIMENSION); // what the dataset's start does
    expect((await store.search(id, undefined, 'almanac', keyword)).map((hit) => hit.metadata.source)).toEqual(['weather.md']);
    expect((await store.search(id, undefined, 'kitten', keyword)).map((hit) => hit.metadata.source)).toEqual(['pets.md']);
    // Two chunks say "cats"; since layout 3 the kitten chunk holds it too, in its file's lead (pets.md opens with cats).
    expect(await count(`SELECT count(*) AS n FROM fts_${hex} WHERE fts_${hex} MATCH 'content : cats'`)).toBe(2);
    expect(await count(`SELECT count(*) AS n FROM fts_${hex} WHERE fts_${hex} MATCH 'lead : cats'`)).toBe(2);
  });
});

describe("a document's lead", () => {
  test('the opening of a file is searched on every one of its chunks, also after a layout 2 table is rebuilt', async () => {
    const id = crypto.randomUUID();
    await store.createDatasetIndex(id, DIMENSION);
    const hex = id.replaceAll('-', '');
    await replaceFileChunks(store, id, 'lighthouse.md', [
      chunk('Fresnel lenses focus the beam of a lighthouse.', unit(1)),
      chunk('Keepers trimmed wicks every night.', unit(0, 1)),
    ]);
    await replaceFileChunks(store, id, 'other.md', [chunk('Keepers of bees wear veils.', unit(0, 0, 1))]);
    const leadHolders = `SELECT count(*) AS n FROM fts_${hex} WHERE fts_${hex} MATCH 'lead : fresnel'`;
    // Both chunks of lighthouse.md hold its opening, so "keepers fresnel" ranks its second chunk above other.md's.
    expect(await count(leadHolders)).toBe(2);
    const keyword = { ...defaults, mode: 'keyword' as const };
    expect((await store.search(id, undefined, 'keepers fresnel', keyword))[0]?.content).toBe('Keepers trimmed wicks every night.');
    // As a dataset indexed before layout 3 looks: no lead column.
    await opened.exclusive((sqlite) => {
      sqlite.run(`DROP TABLE fts_${hex}_vocab`);
      sqlite.run(`DROP TABLE fts_${hex}`);
      sqlite.run(
        `CREATE VIRTUAL TABLE fts_${hex} USING fts5(content, title, source, content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2')`,
      );
      sqlite.run(`CREATE VIRTUAL TABLE fts_${hex}_vocab USING fts5vocab(fts_${hex}, 'row')`);
      sqlite.run(
        `INSERT INTO fts_${hex} (rowid, content, title, source) SELECT row_id, content, '', file_key FROM vector_chunks WHERE dataset_id = '${id}'`,
      );
      sqlite.run(`UPDATE vector_indexes SET keyword_layout = 2 WHERE dataset_id = '${id}'`);
    });
    expect((await store.search(id, undefined, 'fresnel', keyword)).length).toBe(1);
    await store.createDatasetIndex(id, DIMENSION); // what the dataset's start does
    expect(await count(leadHolders)).toBe(2);
    expect((await store.search(id, undefined, 'fresnel', keyword)).length).toBe(2);
  });
});

describe('writing chunks', () => {
  test('replacing a file leaves no stale rows in the chunk, vector or keyword tables', async () => {
    const id = await topicDataset();
    const hex = id.replaceAll('-', '');
    expect(await indexInfo(opened, id)).toEqual({ dimension: DIMENSION, chunkCount: 5 });
    const ids = await replaceFileChunks(store, id, 'pets.md', [chunk('Dogs bark at the mailman.', unit(1, 0, 0, 0, 0, 1))]);
    expect(ids.length).toBe(1);
    expect(await count('SELECT count(*) AS n FROM vector_chunks WHERE dataset_id = ?', id)).toBe(4);
    expect(await count(`SELECT count(*) AS n FROM vec_${hex}`)).toBe(4);
    expect(await count(`SELECT count(*) AS n FROM fts_${hex} WHERE fts_${hex} MATCH 'kitten OR purr'`)).toBe(0);
    expect(await indexInfo(opened, id)).toEqual({ dimension: DIMENSION, chunkCount: 4 });
    const hits = await store.search(id, unit(1), 'kitten purr dogs', { ...defaults, mode: 'hybrid' });
    expect(hits.map((hit) => hit.content)).not.toContain('A kitten plays with a ball of yarn.');
    expect(hits[0]?.document_id).toBe(ids[0]!);
  });

  test('chunk ids given are kept as document ids; missing ones become UUIDs', async () => {
    const id = crypto.randomUUID();
    await store.createDatasetIndex(id, DIMENSION);
    const given = crypto.randomUUID();
    const ids = await replaceFileChunks(store, id, 'a.txt', [{ ...chunk('alpha', unit(1)), id: given }, chunk('beta', unit(0, 1))]);
    expect(ids[0]).toBe(given);
    expect(ids[1]).toMatch(/^[0-9a-f-]{36}$/);
    const [hit] = await store.search(id, unit(1), '', { ...defaults, mode: 'vector', limit: 1 });
    expect(hit?.document_id).toBe(given);
  });

  test('a bad chunk fails the whole replacement and the old chunks stay searchable', async () => {
    const id = await topicDataset();
    const attempt = replaceFileChunks(store, id, 'pets.md', [chunk('fine', unit(1)), chunk('wrong size', new Float32Array(DIMENSION + 1))]);
    await expect(attempt).rejects.toThrow(/16 dimensions/);
    const nan = new Float32Array(DIMENSION).fill(Number.NaN);
    await expect(replaceFileChunks(store, id, 'pets.md', [chunk('nan', nan)])).rejects.toThrow(/finite/);
    const hits = await store.search(id, unit(1), 'kitten', { ...defaults, mode: 'keyword' });
    expect(hits.map((hit) => hit.content)).toEqual(['A kitten plays with a ball of yarn.']);
    expect(await indexInfo(opened, id)).toEqual({ dimension: DIMENSION, chunkCount: 5 });
  });

  test('a duplicate chunk id rolls the replacement back', async () => {
    const id = await topicDataset();
    const [existing] = await replaceFileChunks(store, id, 'weather.md', [chunk('Sunny all week.', unit(0, 0, 1))]);
    await expect(replaceFileChunks(store, id, 'pets.md', [{ ...chunk('clash', unit(1)), id: existing! }])).rejects.toThrow();
    expect(await count('SELECT count(*) AS n FROM vector_chunks WHERE dataset_id = ? AND file_key = ?', id, 'pets.md')).toBe(2);
  });

  test('deleting a file removes only its chunks and says how many', async () => {
    const id = await topicDataset();
    expect(await deleteFileChunks(store, id, 'pets.md')).toBe(2);
    expect(await deleteFileChunks(store, id, 'pets.md')).toBe(0);
    expect(await deleteFileChunks(store, id, 'never-indexed.md')).toBe(0);
    const hits = await store.search(id, unit(1), 'cats kitten', defaults);
    expect(hits.map((hit) => hit.metadata.source)).toEqual(['finance.md', 'finance.md', 'weather.md']);
    expect(await indexInfo(opened, id)).toEqual({ dimension: DIMENSION, chunkCount: 3 });
  });

  test('an empty replacement is a delete', async () => {
    const id = await topicDataset();
    expect(await replaceFileChunks(store, id, 'weather.md', [])).toEqual([]);
    expect(await indexInfo(opened, id)).toEqual({ dimension: DIMENSION, chunkCount: 4 });
  });
});

describe('search', () => {
  let id: string;
  beforeAll(async () => {
    id = await topicDataset();
  });

  test('vector mode orders by cosine similarity; scores are the calibrated relevance, never increasing', async () => {
    const hits = await store.search(id, unit(1), '', { ...defaults, mode: 'vector' });
    expect(hits.map((hit) => hit.content.slice(0, 12))).toEqual([
      'Cats purr wh',
      'A kitten pla',
      'Stock market',
      'The bank rai',
      'Rain and sno',
    ]);
    // PLAIN's vector model: 1 / (1 + e^-(10 cos - 5)); the kitten chunk is the second of pets.md: discounted 0.6.
    expect(hits[0]!.similarity_score).toBeCloseTo(1 / (1 + Math.exp(-5)), 5);
    expect(hits[1]!.similarity_score).toBeCloseTo(0.6 / (1 + Math.exp(-(10 * (0.9 / Math.hypot(0.9, 0.3)) - 5))), 5);
    expectNonIncreasing(hits);
    const opposite = await store.search(id, unit(-1), '', { ...defaults, mode: 'vector' });
    expect(opposite.at(-1)!.content.slice(0, 12)).toBe('Cats purr wh');
    for (const hit of [...hits, ...opposite]) {
      expect(hit.similarity_score).toBeGreaterThanOrEqual(0);
      expect(hit.similarity_score).toBeLessThanOrEqual(1);
    }
  });

  test('keyword mode orders by BM25, scores by keyword evidence alone and needs no query vector', async () => {
    const hits = await store.search(id, undefined, 'cats', { ...defaults, mode: 'keyword' });
    // "cats" twice in the pets chunk ranks it above the finance chunk that says it once; the kitten chunk
    // holds it only in its file's lead (pets.md opens with cats), and as a second chunk of pets.md it comes last.
    expect(hits.map((hit) => hit.metadata.source)).toEqual(['pets.md', 'finance.md', 'pets.md']);
    expectNonIncreasing(hits);
    const withVector = await store.search(id, unit(0, 1), 'cats', { ...defaults, mode: 'keyword' });
    expect(withVector.map((hit) => hit.similarity_score)).toEqual(hits.map((hit) => hit.similarity_score));
    await expect(store.search(id, undefined, 'cats', { ...defaults, mode: 'hybrid' })).rejects.toThrow(/vector/);
  });

  test('keyword mode drops the words of the question form, unless there is nothing else', async () => {
    const hits = await store.search(id, undefined, 'what are the cats doing?', { ...defaults, mode: 'keyword' });
    expect(hits.map((hit) => hit.metadata.source)).toEqual(['pets.md', 'finance.md', 'pets.md']);
    // "the" alone is still searched: the weather chunk says "this", the pets one "the".
    const only = await store.search(id, undefined, 'the', { ...defaults, mode: 'keyword' });
    expect(only.map((hit) => hit.metadata.source)).toContain('pets.md');
  });

  test("keyword mode finds a document by its title and its file name, not only by the chunk's text", async () => {
    const byName = await store.search(id, undefined, 'weather', { ...defaults, mode: 'keyword' });
    expect(byName.map((hit) => hit.metadata.source)).toEqual(['weather.md']);
    const byTitle = await store.search(id, undefined, 'almanac', { ...defaults, mode: 'keyword' });
    expect(byTitle.map((hit) => hit.metadata.source)).toEqual(['weather.md']);
  });

  test('keyword mode stems words and ignores case and accents', async () => {
    const stems = await store.search(id, unit(1), 'KITTENS Playing', { ...defaults, mode: 'keyword' });
    expect(stems.map((hit) => hit.content)).toEqual(['A kitten plays with a ball of yarn.']);
    const accents = await store.search(id, unit(1), 'ráin', { ...defaults, mode: 'keyword' });
    expect(accents.map((hit) => hit.metadata.source)).toEqual(['weather.md']);
  });

  test('hybrid mode weighs both signals: a chunk strong in both comes first, and every candidate gets both scores', async () => {
    // Near the pets axis: cats, kitten, stock, bank, rain. Keywords: kitten (kitten, yarn), bank.
    const hits = await store.search(id, unit(1), 'kitten yarn bank', { ...defaults, mode: 'hybrid' });
    expect(hits[0]!.content.slice(0, 12)).toBe('A kitten pla');
    expect(hits.map((hit) => hit.content.slice(0, 12)).sort()).toEqual([
      'A kitten pla',
      'Cats purr wh',
      'Rain and sno',
      'Stock market',
      'The bank rai',
    ]);
    expectNonIncreasing(hits);
    // The bank chunk, found by its keyword, is scored on both its BM25 and its cosine: above the stock chunk,
    // which is nearer to the query but matches no word.
    const order = hits.map((hit) => hit.content.slice(0, 12));
    expect(order.indexOf('The bank rai')).toBeLessThan(order.indexOf('Stock market'));
  });

  test('further chunks of a file already ranked are discounted, so other files are not crowded out', async () => {
    const hits = await store.search(id, unit(1), '', { ...defaults, mode: 'vector' });
    const cosine = 0.9 / Math.hypot(0.9, 0.3);
    const undiscounted = 1 / (1 + Math.exp(-(10 * cosine - 5)));
    expect(hits[1]!.similarity_score).toBeCloseTo(0.6 * undiscounted, 5);
  });

  test('the similarity threshold applies in every mode', async () => {
    for (const mode of ['vector', 'keyword', 'hybrid'] as const) {
      const all = await store.search(id, unit(1), 'cats kitten bank', { ...defaults, mode });
      const kept = await store.search(id, unit(1), 'cats kitten bank', { ...defaults, mode, similarityThreshold: 0.5 });
      expect(kept.length).toBeGreaterThan(0);
      expect(kept.length).toBeLessThan(all.length);
      for (const hit of kept) expect(hit.similarity_score).toBeGreaterThanOrEqual(0.5);
      expect(kept).toEqual(all.filter((hit) => hit.similarity_score >= 0.5));
    }
    const none = await store.search(id, unit(0, 0, 0, 0, 0, 0, 1), 'cats', { ...defaults, similarityThreshold: 0.999 });
    expect(none).toEqual([]);
  });

  test('limit cuts the results in every mode', async () => {
    for (const mode of ['vector', 'keyword', 'hybrid'] as const) {
      const hits = await store.search(id, unit(1, 1, 1), 'cats bank rain kitten stock', { ...defaults, mode, limit: 2 });
      expect(hits.length).toBe(2);
    }
    await expect(store.search(id, unit(1), 'x', { ...defaults, limit: 0 })).rejects.toThrow(/limit/);
  });

  test('metadata is returned when asked and empty otherwise', async () => {
    const [withMetadata] = await store.search(id, unit(1), '', { ...defaults, mode: 'vector', limit: 1 });
    expect(withMetadata!.metadata).toEqual({ source: 'pets.md', file_type: 'md', chunk_index: 0 });
    const [without] = await store.search(id, unit(1), '', { ...defaults, mode: 'vector', limit: 1, includeMetadata: false });
    expect(without!.metadata).toEqual({});
    expect(Object.keys(without!).sort()).toEqual(['content', 'document_id', 'metadata', 'similarity_score']);
  });

  test('query text that looks like FTS5 syntax never errors and is searched as words', async () => {
    const nasty = [
      '"',
      '""',
      "'",
      'cats"',
      'NEAR(cats bank)',
      'cats NEAR bank',
      'cats AND',
      'OR',
      'NOT cats',
      '*',
      'cat*',
      '^cats',
      '(',
      ')',
      '(cats OR',
      'content:cats',
      '{content}: cats',
      'cats -bank',
      '+',
      ':',
      '\u0000',
      '\u0301',
      '😀 cats 😀',
      'x'.repeat(5000),
      Array.from({ length: 500 }, (_, i) => `w${i}`).join(' '),
      '',
      '   ',
    ];
    for (const text of nasty) {
      for (const mode of ['keyword', 'hybrid'] as const) {
        const hits = await store.search(id, unit(1), text, { ...defaults, mode });
        expect(Array.isArray(hits)).toBe(true);
      }
    }
    const near = await store.search(id, unit(0, 0, 1), 'NEAR(cats bank)', { ...defaults, mode: 'keyword' });
    // Chunks with "near", "cats" or "bank" as words: the pets chunks (one by its file's lead) and the bank chunk.
    expect(near.map((hit) => hit.metadata.source).sort()).toEqual(['finance.md', 'pets.md', 'pets.md']);
  });

  test('a zero query vector fails nothing and gives every chunk the same vector evidence', async () => {
    for (const mode of ['vector', 'keyword', 'hybrid'] as const) {
      for (const vectorScan of ['exact', 'quantized'] as const) {
        const hits = await store.search(id, new Float32Array(DIMENSION), 'cats', { ...defaults, mode, vectorScan });
        expectNonIncreasing(hits);
        for (const hit of hits) expect(hit.similarity_score).toBeLessThanOrEqual(1);
      }
    }
  });

  test('a query vector of the wrong dimension is refused', async () => {
    await expect(store.search(id, new Float32Array(8), 'cats', defaults)).rejects.toThrow(/dimensions/);
  });

  test('an empty dataset answers nothing in every mode', async () => {
    const empty = crypto.randomUUID();
    await store.createDatasetIndex(empty, DIMENSION);
    for (const mode of ['vector', 'keyword', 'hybrid'] as const) {
      expect(await store.search(empty, unit(1), 'cats', { ...defaults, mode })).toEqual([]);
    }
  });
});

describe('keyword search in a large dataset', () => {
  test('leaves out words found in more than half of the chunks, and counts stems, not spellings', async () => {
    const id = crypto.randomUUID();
    await store.createDatasetIndex(id, 8);
    const vector = new Float32Array(8).fill(1 / Math.sqrt(8));
    for (let file = 0; file < 20; file++) {
      const chunks = Array.from({ length: 500 }, (_, i) => {
        const n = file * 500 + i;
        // No file opens with a rare word: its lead would put the word on all of the file's 500 chunks.
        const extra = i === 0 ? '' : n < 4 ? ' zebra' : n === 4 ? ' zebras running' : n % 3 === 0 ? ' medium' : '';
        return chunk(`common filler ${n}${extra}`, vector);
      });
      await replaceFileChunks(store, id, `file-${file}.txt`, chunks);
    }
    expect((await indexInfo(opened, id))?.chunkCount).toBe(10_000);
    const keyword = { ...defaults, mode: 'keyword' as const, limit: 50 };
    // "common" is in every chunk: BM25 gives it no weight, so it only costs; the query rests on "zebras".
    const zebras = await store.search(id, vector, 'Zebras COMMON', keyword);
    expect(zebras.map((hit) => hit.content).sort()).toEqual([
      'common filler 1 zebra',
      'common filler 2 zebra',
      'common filler 3 zebra',
      'common filler 4 zebras running',
    ]);
    expect(await store.search(id, vector, 'common filler', keyword)).toEqual([]);
    const medium = await store.search(id, vector, 'medium', keyword);
    expect(medium.length).toBe(50);
    expect(await store.search(id, vector, 'run', keyword)).toHaveLength(1);
  });
});

describe('vector scans', () => {
  test('the quantized scan re-scores with full vectors and finds what the exact scan finds', async () => {
    const dimension = 64;
    const id = crypto.randomUUID();
    await store.createDatasetIndex(id, dimension);
    const random = seededRandom(42);
    const vectors = Array.from({ length: 600 }, () => randomUnit(random, dimension));
    for (let file = 0; file < 6; file++) {
      await replaceFileChunks(
        store,
        id,
        `file-${file}.txt`,
        vectors.slice(file * 100, (file + 1) * 100).map((vector, i) => chunk(`chunk ${file * 100 + i}`, vector)),
      );
    }
    for (const target of [0, 123, 599]) {
      const query = vectors[target]!.map((value) => value + (random() - 0.5) * 0.02);
      const options: SearchOptions = { ...defaults, mode: 'vector', limit: 3 };
      const exact = await store.search(id, query, '', { ...options, vectorScan: 'exact' });
      const quantized = await store.search(id, query, '', { ...options, vectorScan: 'quantized' });
      expect(exact[0]!.content).toBe(`chunk ${target}`);
      expect(quantized[0]!.content).toBe(`chunk ${target}`);
      expect(quantized[0]!.similarity_score).toBeCloseTo(exact[0]!.similarity_score, 5);
    }
  });

  test('a dimension that is not a multiple of 8 works (exact scan only)', async () => {
    const id = crypto.randomUUID();
    await store.createDatasetIndex(id, 12);
    const vector = new Float32Array(12);
    vector[3] = 1;
    await replaceFileChunks(store, id, 'a.txt', [chunk('twelve', vector)]);
    const hits = await store.search(id, vector, 'twelve', { ...defaults, vectorScan: 'quantized' });
    expect(hits.map((hit) => hit.content)).toEqual(['twelve']);
  });
});

describe('with USE-lite embeddings', () => {
  test('a paraphrase query finds its chunk first in every mode it can, above 0.5 in hybrid mode', async () => {
    const embedder = await createEmbedder('use-lite', { dataDir, allowDownload: false });
    const id = crypto.randomUUID();
    await store.createDatasetIndex(id, embedder.dimension);
    const texts = [
      'Steps to reset a forgotten password for your account.',
      'Photosynthesis lets plants turn sunlight, water and carbon dioxide into sugar.',
      'The recipe needs two eggs, flour and a cup of milk.',
      'The football team won the championship last night.',
    ];
    const embeddings = await embedder.embed(texts);
    // One note a file: in one file the first note's words would be every chunk's lead.
    for (const [i, content] of texts.entries()) {
      await replaceFileChunks(store, id, `note-${i}.md`, [chunk(content, embeddings[i]!, { source: `note-${i}.md` })]);
    }
    const question = 'How can I recover my account password?';
    const [query] = await embedder.embed([question]);
    const calibration = calibrationFor('use-lite');
    for (const mode of ['vector', 'hybrid'] as const) {
      const hits = await store.search(id, query!, question, { ...defaults, calibration, mode, limit: 4 });
      expect(hits[0]!.content).toBe(texts[0]!);
      expect(hits[1]!.similarity_score).toBeLessThan(hits[0]!.similarity_score);
    }
    // With its words matched too, the chunk is more likely relevant than not: it passes the clients' 0.5.
    const [best] = await store.search(id, query!, question, { ...defaults, calibration, mode: 'hybrid', similarityThreshold: 0.5 });
    expect(best!.content).toBe(texts[0]!);
  });
});
