/**
 * Vectors over the whole chunk (issue 23, item 2): a chunk longer than its embedder's window is embedded as
 * pieces that each fit (src/embeddings/pieces.ts), the first piece's vector in the index and the others
 * stored with the chunk, and a search raises each candidate's cosine to its closest piece's
 * (src/vectors/piece-similarity.ts). Each embedder's window: USE-lite's 128 tokens counted by its own
 * tokenizer, a `transformers:` model's from its tokenizer and configuration, an `openai:` server's model. A
 * dataset indexed before pieces gets them in the background after an upgrade (src/ingestion/piece-backfill.ts).
 * The PostgreSQL store's side: postgres-chunk-pieces.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import pino from 'pino';
import { makeOnnxEmbedder } from '../scripts/fixtures/make-onnx-embedder.ts';
import { type OpenedDatabase, openDatabase } from '../src/db/database.ts';
import { closeEmbedders, createEmbedder } from '../src/embeddings/embedder.ts';
import { cutPieces, type EmbedderWindow, embedChunks, MAX_PIECES } from '../src/embeddings/pieces.ts';
import { UseLiteEmbedder } from '../src/embeddings/use-lite.ts';
import { useLiteModelFiles } from '../src/embeddings/use-lite-model.ts';
import { USE_LITE_MAX_TOKENS, UseLiteTokenizer, type Vocabulary } from '../src/embeddings/use-lite-tokenizer.ts';
import { PieceBackfill } from '../src/ingestion/piece-backfill.ts';
import type { Calibration } from '../src/vectors/calibration.ts';
import { vectorExtensionPath } from '../src/vectors/extension.ts';
import { packLaterPieces, raiseToBestPiece, unpackLaterPieces } from '../src/vectors/piece-similarity.ts';
import { postgresTables } from '../src/vectors/postgres/dataset-tables.ts';
import { SqliteVectorStore } from '../src/vectors/sqlite-store.ts';
import type { SearchOptions } from '../src/vectors/store.ts';
import { type FakeOpenAIServer, fakeEmbedding, fakeTokens, startFakeOpenAI } from './fakes/openai-server.ts';
import { createTestApp, tempDir } from './helpers/app.ts';
import { axis, checkIndexMadeBeforePieces, indexedWithPieces, texts } from './helpers/chunk-pieces.ts';
import { Dataset } from './helpers/datasets.ts';
import { stoppedDatabase, testEngine } from './helpers/test-engine.ts';
import { deleteFileChunks, unembedded } from './helpers/vector-store.ts';
import { waitFor } from './helpers/wait.ts';

/** A window counting one token a word: easy to reason about. */
const WORDS: EmbedderWindow = { tokens: 5, tokensOf: () => 1 };

const words = (text: string) => text.split(/\s+/).filter(Boolean);

describe('cutting a chunk into pieces', () => {
  test('a chunk within the window comes back whole, as it is', () => {
    expect(cutPieces('  one two  three ', WORDS)).toEqual(['  one two  three ']);
    expect(cutPieces('one two three four five', WORDS)).toEqual(['one two three four five']);
  });

  test('a longer chunk is cut between words into pieces that each fit, every word once and in order', () => {
    const text = Array.from({ length: 23 }, (_, index) => `w${index}`).join(' ');
    const pieces = cutPieces(text, WORDS);
    expect(pieces.length).toBe(5);
    for (const piece of pieces) expect(words(piece).length).toBeLessThanOrEqual(WORDS.tokens);
    expect(pieces.flatMap(words)).toEqual(words(text));
    expect(text.startsWith(pieces[0] as string)).toBe(true);
  });

  test('the words’ own token counts decide where a piece ends', () => {
    const window: EmbedderWindow = { tokens: 4, tokensOf: (word) => word.length };
    expect(cutPieces('ab cd efgh i jk', window)).toEqual(['ab cd', 'efgh', 'i jk']);
  });

  test('a word longer than a whole window is cut inside, and the pieces stop at MAX_PIECES', () => {
    const window: EmbedderWindow = { tokens: 10, tokensOf: (word) => word.length };
    expect(cutPieces(`${'x'.repeat(25)} tail`, window)).toEqual(['x'.repeat(10), 'x'.repeat(10), 'x'.repeat(5), 'tail']);
    const long = Array.from({ length: 200 }, (_, index) => `w${index}`).join(' ');
    const pieces = cutPieces(long, WORDS);
    expect(pieces.length).toBe(MAX_PIECES);
    expect(pieces.flatMap(words)).toEqual(words(long).slice(0, MAX_PIECES * WORDS.tokens));
  });

  test('embedChunks gives each text its pieces’ vectors, opening first, from one flat call', async () => {
    const calls: string[][] = [];
    const embed = async (pieces: string[]) => {
      calls.push(pieces);
      return pieces.map((piece) => Float32Array.of(words(piece).length, piece.length));
    };
    const texts = ['a b', 'a b c d e f g', 'h'];
    const vectors = await embedChunks(texts, WORDS, embed);
    expect(calls).toEqual([['a b', 'a b c d e', 'f g', 'h']]);
    expect(vectors.map((chunk) => chunk.map((vector) => vector[0]))).toEqual([[2], [5, 2], [1]]);
    await expect(embedChunks(texts, WORDS, async () => [])).rejects.toThrow('returned 0 vectors for 4 pieces');
  });
});

describe('a chunk’s similarity as its closest piece', () => {
  const unit = (...values: number[]) => {
    const norm = Math.hypot(...values);
    return Float32Array.from(values, (value) => value / norm);
  };

  test('later pieces are stored as float32s one after another, and read back from any buffer', () => {
    expect(packLaterPieces([unit(1, 0)])).toBeUndefined();
    const packed = packLaterPieces([unit(1, 0), unit(0, 1), unit(1, 1)]) as Uint8Array;
    expect(packed.byteLength).toBe(16);
    // A driver's buffer may start anywhere: an odd offset is read as well.
    const shifted = new Uint8Array(packed.byteLength + 1).subarray(1);
    shifted.set(packed);
    expect(unpackLaterPieces(shifted, 2).map((vector) => [...vector])).toEqual([[...unit(0, 1)], [...unit(1, 1)]]);
    expect(unpackLaterPieces(new Uint8Array(12), 2)).toEqual([]);
    expect(() => packLaterPieces([unit(1, 0), unit(1, 0, 0)])).toThrow('3 dimensions');
  });

  test('a candidate’s cosine rises to its closest piece, never falls, and only candidates are touched', () => {
    const cosines = new Map([
      [1, 0],
      [2, 0.9],
    ]);
    const pieces = new Map([
      [1, packLaterPieces([unit(1, 0), unit(0, 1), unit(1, 1)]) as Uint8Array],
      [2, packLaterPieces([unit(0, 1), unit(-1, 0)]) as Uint8Array],
      [3, packLaterPieces([unit(1, 0), unit(0, 1)]) as Uint8Array],
    ]);
    raiseToBestPiece(cosines, pieces, unit(0, 1));
    expect(cosines.get(1)).toBeCloseTo(1, 6);
    expect(cosines.get(2)).toBe(0.9);
    expect(cosines.has(3)).toBe(false);
  });
});

describe('each embedder’s window', () => {
  afterAll(() => closeEmbedders());

  test('USE-lite: 128 tokens of its own tokenizer; a 1,000-character chunk is cut into pieces that each fit', () => {
    const embedder = new UseLiteEmbedder();
    expect(embedder.window.tokens).toBe(USE_LITE_MAX_TOKENS);
    const tokenizer = new UseLiteTokenizer(JSON.parse(readFileSync(useLiteModelFiles().vocabulary, 'utf8')) as Vocabulary);
    const pieces = cutPieces(TELESCOPE_CHUNK, embedder.window);
    expect(pieces.length).toBeGreaterThan(1);
    expect(tokenizer.encode(TELESCOPE_CHUNK).length).toBeGreaterThan(USE_LITE_MAX_TOKENS);
    for (const piece of pieces) expect(tokenizer.encode(piece).length).toBeLessThanOrEqual(USE_LITE_MAX_TOKENS);
    expect(pieces.flatMap(words)).toEqual(words(TELESCOPE_CHUNK));
  });

  test('transformers: the least of the tokenizer’s and the model’s limits, less [CLS] and [SEP]', async () => {
    const folder = tempDir('knode-pieces-model-');
    try {
      await makeOnnxEmbedder(folder, { dimension: 8 });
      const options = { dataDir: folder, allowDownload: false };
      const embedder = await createEmbedder(`transformers:${folder}`, options);
      expect(embedder.window.tokens).toBe(126); // model_max_length and max_position_embeddings: 128
      expect(embedder.window.tokensOf('the')).toBe(1);
      // sentence-transformers' max_seq_length, where the folder has one, is the length the model was trained on.
      const trained = join(folder, 'trained');
      await makeOnnxEmbedder(trained, { dimension: 8 });
      writeFileSync(join(trained, 'sentence_bert_config.json'), JSON.stringify({ max_seq_length: 64, do_lower_case: false }));
      expect((await createEmbedder(`transformers:${trained}`, options)).window.tokens).toBe(62);
    } finally {
      await closeEmbedders();
      rmSync(folder, { recursive: true, force: true });
    }
  });

  test('openai: 8,191 tokens for OpenAI’s own models, 512 for another server’s, counted from the characters', async () => {
    const fake = startFakeOpenAI({ embeddingDimensions: 4 });
    try {
      const own = await createEmbedder('openai:text-embedding-3-small', {
        dataDir: '.',
        allowDownload: false,
        openai: { base_url: fake.url },
      });
      expect(own.window.tokens).toBe(8191);
      const other = await createEmbedder('openai:nomic-embed-text', { dataDir: '.', allowDownload: false, openai: { base_url: fake.url } });
      expect(other.window.tokens).toBe(512);
      expect(other.window.tokensOf('knowledge')).toBe(3);
    } finally {
      await closeEmbedders();
      await fake.close();
    }
  });
});

/** The vector alone decides, and a cosine of 0.5 scores 0.5. */
const PLAIN: Calibration = {
  name: 'plain',
  keyword: { weights: { bm25: 1 }, intercept: 0 },
  vector: { weights: { cosine: 10 }, intercept: -5 },
  hybrid: { weights: { bm25: 1, cosine: 10 }, intercept: -5 },
};

const vectorSearch: SearchOptions = { mode: 'vector', limit: 10, similarityThreshold: 0, includeMetadata: true, calibration: PLAIN };

describe('the SQLite store', () => {
  const dataDir = tempDir('knode-pieces-');
  let opened: OpenedDatabase;
  let store: SqliteVectorStore;

  beforeAll(async () => {
    opened = await openDatabase(dataDir, [vectorExtensionPath()]);
    store = new SqliteVectorStore(opened);
  });

  afterAll(async () => {
    await store.close();
    await opened.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const indexed = (contents: string[], vectors: Float32Array[][]) => indexedWithPieces(store, contents, vectors);

  const laterPieces = (id: string) =>
    opened.exclusive(
      (sqlite) =>
        sqlite.query('SELECT content, later_pieces FROM vector_chunks WHERE dataset_id = ? ORDER BY row_id').all(id) as {
          content: string;
          later_pieces: Uint8Array | null;
        }[],
    );

  test('a chunk’s later pieces are kept with it, and a query near one of them finds the chunk at that cosine', async () => {
    const id = await indexed(['opening only', 'opening then more', 'other'], [[axis(0)], [axis(0), axis(1), axis(2)], [axis(3)]]);
    const stored = await laterPieces(id);
    expect(stored[0]?.later_pieces).toBeNull();
    expect(unpackLaterPieces(stored[1]?.later_pieces as Uint8Array, 4).map((vector) => [...vector])).toEqual([[...axis(1)], [...axis(2)]]);
    // The query is the second chunk's third piece: its opening alone is orthogonal to it.
    const near = Float32Array.of(0.6, 0, 0.8, 0);
    const [first] = await store.search(id, near, '', vectorSearch);
    expect(first?.content).toBe('opening then more');
    const { candidates } = await store.candidates(id, near, '', 'vector', 10);
    const byRow = new Map(candidates.map((candidate) => [candidate.rowid, candidate.cosine]));
    const rows = await opened.exclusive(
      (sqlite) =>
        sqlite.query('SELECT row_id, content FROM vector_chunks WHERE dataset_id = ?').all(id) as { row_id: number; content: string }[],
    );
    const cosine = (content: string) => byRow.get(rows.find((row) => row.content === content)?.row_id as number);
    expect(cosine('opening then more')).toBeCloseTo(0.8, 5);
    expect(cosine('opening only')).toBeCloseTo(0.6, 5);
    // The chunk's pieces go with it.
    await deleteFileChunks(store, id, 'a.txt');
    expect(await laterPieces(id)).toEqual([]);
  });

  test('an index made before pieces: its chunks without them are found, given them once, and the index moves on', async () => {
    const setVectorLayout = (id: string, layout: number) =>
      opened.exclusive((sqlite) => void sqlite.query('UPDATE vector_indexes SET vector_layout = ? WHERE dataset_id = ?').run(layout, id));
    await checkIndexMadeBeforePieces(store, setVectorLayout, PLAIN);
  });

  test('the backfill gives every long chunk its later pieces, embeds nothing else, and stops on a failing embedder', async () => {
    const id = await indexed(['w1 w2 w3 w4 w5 w6 w7', 'w1 w2'], [[axis(0)], [axis(1)]]);
    await opened.exclusive((sqlite) => sqlite.query('UPDATE vector_indexes SET vector_layout = 1 WHERE dataset_id = ?').run(id));
    const embedded: string[] = [];
    const backfill = (embed: (texts: string[]) => Promise<Float32Array[]>) =>
      new PieceBackfill({
        datasetId: id,
        store,
        embedder: { id: 'words', dimension: 4, window: { tokens: 3, tokensOf: () => 1 }, embed },
        window: { texts: 1, characters: 1_000 },
        embed,
        log: pino({ level: 'silent' }),
      });
    await backfill(async () => {
      throw new Error('the embedding server is down');
    }).done;
    expect(await store.piecesComplete(id)).toBe(false);
    await backfill(async (texts) => {
      embedded.push(...texts);
      return texts.map(() => axis(2));
    }).done;
    expect(embedded).toEqual(['w4 w5 w6', 'w7']);
    expect(await store.piecesComplete(id)).toBe(true);
    const stored = await laterPieces(id);
    expect(unpackLaterPieces(stored[0]?.later_pieces as Uint8Array, 4)).toHaveLength(2);
    expect(stored[1]?.later_pieces).toBeNull();
  });

  test('a piece of the wrong dimension writes nothing: no vector, no count, no pieces', async () => {
    const id = crypto.randomUUID();
    await store.createDatasetIndex(id, 4);
    expect(await store.publish(await store.stage(id, 'a.txt', texts('a.txt', ['one', 'two'])))).toBe(true);
    const waiting = await unembedded(store, id, 'a.txt', undefined, { texts: 100, characters: 1_000_000 });
    const from = waiting?.from as number;
    await expect(
      store.addVectorsOf(id, [{ fileKey: 'a.txt', from, vectors: [[axis(0)], [axis(1), new Float32Array(3)]] }]),
    ).rejects.toThrow('4 dimensions');
    expect((await unembedded(store, id, 'a.txt', undefined, { texts: 100, characters: 1_000_000 }))?.from).toBe(from);
    expect((await laterPieces(id)).every((row) => row.later_pieces === null)).toBe(true);
  });

  test('with USE-lite, a question about a chunk’s end scores it by its later piece, well above its opening alone', async () => {
    const embedder = new UseLiteEmbedder();
    try {
      const contents = [TELESCOPE_CHUNK, ...DISTRACTORS];
      const vectors = await embedChunks(contents, embedder.window, (pieces) => embedder.embed(pieces));
      expect(vectors[0]?.length).toBeGreaterThan(1);
      const [question] = await embedder.embed(['which eyepiece and filter to use when observing Saturn’s rings and Jupiter’s moons']);
      const withPieces = await indexed(contents, vectors);
      const openingsOnly = await indexed(
        contents,
        vectors.map((pieces) => pieces.slice(0, 1)),
      );
      const scoreOf = async (id: string) => {
        const hits = await store.search(id, question, '', vectorSearch);
        return { first: hits[0]?.content, telescope: hits.find((hit) => hit.content === TELESCOPE_CHUNK)?.similarity_score ?? 0 };
      };
      const pieces = await scoreOf(withPieces);
      const opening = await scoreOf(openingsOnly);
      expect(pieces.first).toBe(TELESCOPE_CHUNK);
      // 0.89 against 0.66 when written (PLAIN: ten times the cosine, less five, through the logistic).
      expect(pieces.telescope).toBeGreaterThan(opening.telescope + 0.1);
    } finally {
      await embedder.close();
    }
  });
});

describe('ingestion, end to end', () => {
  let fake: FakeOpenAIServer;

  beforeAll(() => {
    // Refuses any input over 512 tokens, as TEI does by default.
    fake = startFakeOpenAI({ embeddingDimensions: 8, maxInputTokens: 512 });
  });

  afterAll(() => fake.close());

  test('a chunk longer than the server’s limit is embedded as pieces that fit, and the file is indexed', async () => {
    const t = await createTestApp();
    try {
      const user = await t.user();
      const folder = join(t.dataDir, 'docs');
      mkdirSync(folder, { recursive: true });
      // 700 words in one chunk: more than the 512 tokens the server takes.
      const long = Array.from({ length: 700 }, (_, index) => `word${index % 97}`).join(' ');
      writeFileSync(join(folder, 'long.txt'), long);
      const dataset = await Dataset.create(t, user, folder, {
        embedder: 'openai:bge-small-en',
        base_url: fake.url,
        chunkSize: 6000,
        chunkOverlap: 0,
      });
      const file = await dataset.settledFile('long.txt');
      expect(file.status).toBe('indexed');
      const inputs = fake.requests
        .filter((request) => request.path === '/v1/embeddings')
        .flatMap((request) => (request.body?.input as string[]) ?? [])
        .filter((input) => input.startsWith('word'));
      expect(inputs.length).toBeGreaterThan(1);
      for (const input of inputs) expect(fakeTokens(input).length).toBeLessThanOrEqual(512);
      expect(inputs.join(' ').split(' ')).toEqual(long.split(' '));
      // The chunk is found by its last piece, at that piece's cosine, on either engine.
      const last = Float32Array.from(fakeEmbedding(inputs.at(-1) as string, 8));
      const { candidates } = await t.services.vectorStore.candidates(dataset.id, last, '', 'vector', 10);
      expect(candidates.length).toBe(1);
      expect(candidates[0]?.cosine).toBeCloseTo(1, 5);
    } finally {
      await t.close();
    }
  });

  test('a dataset indexed before whole-chunk vectors gets its chunks’ later pieces after an upgrade, without a reindex', async () => {
    const dataDir = tempDir();
    const first = await createTestApp({}, dataDir);
    const user = await first.user('pieces-upgrade');
    const folder = join(dataDir, 'docs');
    mkdirSync(folder, { recursive: true });
    const long = Array.from({ length: 700 }, (_, index) => `term${index % 89}`).join(' ');
    writeFileSync(join(folder, 'long.txt'), long);
    writeFileSync(join(folder, 'short.txt'), 'term1 term2 term3');
    const dataset = await Dataset.create(first, user, folder, {
      embedder: 'openai:bge-small-en',
      base_url: fake.url,
      chunkSize: 6000,
      chunkOverlap: 0,
    });
    await dataset.settled();
    await first.close({ keepData: true });
    // What an earlier knode left: one vector a chunk (its opening), the index in vector layout 1.
    const stored = await stoppedDatabase(dataDir, { writable: true });
    const chunks = testEngine === 'postgres' ? postgresTables(dataset.id).chunks : 'vector_chunks';
    await sql`UPDATE ${sql.table(chunks)} SET later_pieces = NULL`.execute(stored.db);
    await sql`UPDATE vector_indexes SET vector_layout = 1`.execute(stored.db);
    await stored.close();
    const requestsBefore = fake.requests.length;

    const second = await createTestApp({}, dataDir);
    try {
      const store = second.services.vectorStore;
      await waitFor('the later pieces', async () => ((await store.piecesComplete(dataset.id)) ? true : undefined));
      const inputs = fake.requests
        .slice(requestsBefore)
        .filter((request) => request.path === '/v1/embeddings')
        .flatMap((request) => (request.body?.input as string[]) ?? [])
        .filter((input) => input.startsWith('term'));
      // Only the long chunk's later pieces were embedded: not its opening, not the short file.
      const pieces = cutPieces(long, { tokens: 512, tokensOf: (word) => Math.ceil(word.length / 3) });
      expect(inputs).toEqual(pieces.slice(1));
      const last = Float32Array.from(fakeEmbedding(pieces.at(-1) as string, 8));
      const { candidates } = await store.candidates(dataset.id, last, '', 'vector', 10);
      expect(Math.max(...candidates.map((candidate) => candidate.cosine ?? 0))).toBeCloseTo(1, 5);
      expect((await new Dataset(second, user, dataset.id, folder).file('long.txt'))?.status).toBe('indexed');
    } finally {
      await second.close();
    }
  });
});

/** About 1,000 characters: its opening is about buying a telescope, its end about observing the planets. */
const TELESCOPE_CHUNK =
  'Buying a first telescope is mostly a question of budget and of where it will be kept. A small refractor sits ' +
  'in a cupboard and is ready in minutes; a large reflector gathers more light but needs a car, a garden and time ' +
  'to cool down. Shops sell kits with flimsy tripods that shake at every touch, and a steady mount matters more ' +
  'than the glass. Second-hand instruments are often a bargain, since many are bought as gifts and barely used. ' +
  'Check the mirror for scratches and the focuser for play before paying. When the night comes, point at Saturn ' +
  'first: with a 10 mm eyepiece its rings stand out clearly, and the Cassini division shows on steady nights. ' +
  'Jupiter follows, with its four Galilean moons changing places from one hour to the next and its cloud belts ' +
  'sharpened by a light blue filter. A moon filter dims the glare of the full Moon. Keep a log of what you saw, ' +
  'the eyepiece you used and the seeing, so that later nights can be compared.';

const DISTRACTORS = [
  'Bread needs flour, water, salt and yeast; the dough rests for an hour before it is shaped and baked in a hot oven.',
  'A bicycle chain wears out slowly: measure its stretch every few months and replace it before it damages the cogs.',
  'Tax returns are due at the end of the fiscal year; keep receipts for deductible expenses in a single folder.',
  'Tomatoes grow best in full sun, watered at the roots in the morning, with a stake to hold the stem upright.',
];
