/**
 * An answer's context (issue 27, item 6; API-CONTRACT 6): each passage starts with `[n] title | source |
 * date` and is read with the chunks before and after it in its file, their overlap not repeated, within a
 * budget over the whole context that drops neighbours (best passage's last) and never cuts a passage; the
 * references returned are those of a plain search. Then each store's `neighbours`, on SQLite and PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type OpenedDatabase, openDatabase } from '../src/db/database.ts';
import { chunkText } from '../src/ingestion/chunker.ts';
import {
  CONTEXT_INTRODUCTION,
  contextBudget,
  contextCeiling,
  contextText,
  DEFAULT_CONTEXT_TOKENS,
  leadingPart,
  overlapLength,
  passageHeader,
  reservedTokens,
  trailingPart,
} from '../src/query/answer-context.ts';
import { SPEC_GENERATION } from '../src/query/generation.ts';
import { vectorExtensionPath } from '../src/vectors/extension.ts';
import { PostgresVectorStore } from '../src/vectors/postgres/store.ts';
import { SqliteVectorStore } from '../src/vectors/sqlite-store.ts';
import { type ChunkNeighbours, type ChunkText, VectorIndexMissingError, type VectorStore } from '../src/vectors/store.ts';
import { type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { createTestApp, type TestApp, type TestUser } from './helpers/app.ts';
import { Dataset } from './helpers/datasets.ts';
import { createEndpoint, createModel } from './helpers/fixtures.ts';
import { type InProcessPostgres, startPglite } from './helpers/pglite.ts';

/** `count` sentences, each naming its number and a word of its own (`marker(i)`), so a query finds one chunk. */
function sentences(prefix: string, count: number): string {
  return Array.from({ length: count }, (_, i) => `${prefix} sentence ${i} tells of ${marker(prefix, i)} and nothing more.`).join(' ');
}

function marker(prefix: string, i: number): string {
  return `${prefix}mark${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}`;
}

type Passage = { document_id: string; content: string; similarity_score: number; metadata: Record<string, unknown> };

function passage(id: string, content: string, metadata: Record<string, unknown> = { source: `${id}.txt` }): Passage {
  return { document_id: id, content, similarity_score: 0.5, metadata };
}

describe('merging a chunk with its neighbours', () => {
  const text = sentences('doc', 60);
  const options = { chunkSize: 200, chunkOverlap: 40 };
  const chunks = chunkText(text, options);

  test('the chunker’s overlap is found, so chunk, neighbour and chunk again read as the document does', () => {
    expect(chunks.length).toBeGreaterThan(10);
    for (let i = 1; i < chunks.length - 1; i++) {
      const [before, chunk, after] = [chunks[i - 1], chunks[i], chunks[i + 1]] as [string, string, string];
      expect(overlapLength(before, chunk, options.chunkOverlap)).toBeGreaterThanOrEqual(16);
      const merged = `${leadingPart(before, chunk, options.chunkOverlap)}${chunk}${trailingPart(chunk, after, options.chunkOverlap)}`;
      expect(text).toContain(merged);
      expect(merged.length).toBeLessThan(before.length + chunk.length + after.length);
    }
  });

  test('chunks that do not overlap are joined on a line break, nothing of either lost', () => {
    const apart = chunkText(text, { chunkSize: 200, chunkOverlap: 0 });
    const [first, second] = apart as [string, string];
    expect(overlapLength(first, second, 0)).toBe(0);
    expect(trailingPart(first, second, 100)).toBe(`\n${second}`);
    expect(leadingPart(first, second, 100)).toBe(`${first}\n`);
  });

  test('an overlap must start a word and be long enough: a coincidence of a few letters is not one', () => {
    expect(overlapLength('the end of the line', 'line two begins', 100)).toBe(0);
    expect(overlapLength('xx a repeated phrase of words', 'a repeated phrase of words and more', 100)).toBe(26);
    // Inside a word of the first chunk: not a chunker's overlap.
    expect(overlapLength('xxa repeated phrase of words', 'a repeated phrase of words and more', 100)).toBe(0);
    // No longer than the dataset's chunkOverlap.
    expect(overlapLength('xx a repeated phrase of words', 'a repeated phrase of words and more', 20)).toBe(0);
  });
});

describe('a passage’s first line', () => {
  test('title | source | date: the document’s title, its file, its file’s modification day', () => {
    const header = passageHeader(passage('a', 'x', { source: 'notes/guide.md', title: 'The Guide' }), Date.parse('2026-03-04T10:00:00Z'));
    expect(header).toBe('The Guide | notes/guide.md | 2026-03-04');
  });

  test('without a title, the file’s name; without a date, no date', () => {
    expect(passageHeader(passage('a', 'x', { source: 'notes/guide.txt' }))).toBe('guide.txt | notes/guide.txt');
  });

  test('a feed item: its URL and its publication day', () => {
    const metadata = {
      source: 'item-key',
      title: 'News\nof the day',
      url: 'https://example.org/news/1',
      published_at: '2026-05-01T08:00:00Z',
    };
    expect(passageHeader(passage('a', 'x', metadata))).toBe('News of the day | https://example.org/news/1 | 2026-05-01');
  });

  test('without metadata (include_metadata does not reach the prompt, but an old chunk may lack it): the id', () => {
    expect(passageHeader(passage('doc-1', 'x', {}))).toBe('doc-1 | doc-1');
  });
});

describe('the context within its budget', () => {
  const long = (label: string) => `${label} `.repeat(200).trim();
  const passages = Array.from({ length: 6 }, (_, i) => passage(`p${i}`, long(`passage${i}`)));
  const neighbours = {
    chunkOverlap: 0,
    modified: new Map<string, number>(),
    neighbours: new Map<string, ChunkNeighbours>(
      passages.map((p, i) => [
        p.document_id,
        { before: [{ id: `b${i}`, content: long(`before${i}`) }], after: [{ id: `a${i}`, content: long(`after${i}`) }] },
      ]),
    ),
  };
  const bare = contextText(passages, { chunkOverlap: 0, neighbours: new Map(), modified: new Map() }, 0);

  test('the budget only bounds the neighbours: the passages are all there, whole, even past it', () => {
    expect(contextText(passages, neighbours, 0)).toBe(bare);
    expect(bare.startsWith(`${CONTEXT_INTRODUCTION}\n\n[1] p0.txt | p0.txt\n${passages[0]?.content}\n\n[2] p1.txt`)).toBe(true);
    for (const p of passages) expect(bare).toContain(p.content);
  });

  test('a short budget gives the best passages their neighbours and drops the others’ first', () => {
    const neighbourSize = (neighbours.neighbours.get('p0')?.before[0]?.content.length ?? 0) + 1;
    const budget = bare.length + 3 * neighbourSize;
    const context = contextText(passages, neighbours, budget);
    expect(context.length).toBeLessThanOrEqual(budget);
    expect(context).toContain(`${long('before0')}\n${long('passage0')}\n${long('after0')}`);
    expect(context).toContain(`${long('before1')}\n${long('passage1')}`);
    expect(context).not.toContain('after1');
    for (let i = 2; i < passages.length; i++) expect(context).not.toContain(`before${i}`);
    for (const p of passages) expect(context).toContain(p.content);
  });

  test('a neighbour that is itself a passage, or already shown beside one, is not repeated', () => {
    const [first, second] = passages as [Passage, Passage];
    const adjacent = {
      chunkOverlap: 0,
      modified: new Map<string, number>(),
      neighbours: new Map<string, ChunkNeighbours>([
        ['p0', { before: [], after: [{ id: 'p1', content: second.content }] }],
        ['p1', { before: [{ id: 'p0', content: first.content }], after: [{ id: 'shared', content: 'the shared chunk' }] }],
      ]),
    };
    const context = contextText([first, second, passage('p2', 'third')], adjacent, 1_000_000);
    expect(context.split(second.content)).toHaveLength(2);
    expect(context.split(first.content)).toHaveLength(2);
    expect(context.split('the shared chunk')).toHaveLength(2);
  });

  test('the budget is the model’s window (else 4,096 tokens) less the answer and the prompt, three characters a token', () => {
    const messages = [{ role: 'user' as const, content: 'x'.repeat(400) }];
    const generation = { ...SPEC_GENERATION, stop_sequences: [], max_tokens: 500, system_prompt: 'y'.repeat(40) };
    const reserved = reservedTokens(messages, generation);
    expect(reserved).toBe(500 + 110 + 16);
    expect(contextBudget(undefined, reserved)).toBe((DEFAULT_CONTEXT_TOKENS - reserved) * 3);
    expect(contextBudget(32_768, reserved)).toBe((32_768 - reserved) * 3);
    expect(contextBudget(512, reserved)).toBe(0);
    // The cost ceiling counts the larger of the passages whole and the budget.
    expect(contextCeiling(5, 1000, 0)).toBeGreaterThan(5 * 1000);
    expect(contextCeiling(5, 1000, 100_000)).toBe(CONTEXT_INTRODUCTION.length + 100_000);
  });
});

/** Each store's `neighbours`, written through its own stage and publish. */
function neighbourTests(name: string, open: () => Promise<{ store: VectorStore; close(): Promise<void> }>): void {
  describe(`${name} store: a chunk’s neighbours in its file`, () => {
    let store: VectorStore;
    let close: () => Promise<void>;
    let datasetId: string;
    const ids = (file: string, count: number) => Array.from({ length: count }, (_, i) => `${file}-${i}-${crypto.randomUUID()}`);
    const chunk = (file: string, id: string, index: number): ChunkText => ({
      id,
      content: `${file} chunk ${index}`,
      metadata: { source: file, chunk_index: index },
    });
    const write = async (file: string, chunkIds: readonly string[]) => {
      const staged = await store.stage(datasetId, file, { count: chunkIds.length, chunk: (i) => chunk(file, chunkIds[i] as string, i) });
      expect(await store.publish(staged)).toBe(true);
    };
    const texts = (around: ChunkNeighbours | undefined) => ({
      before: around?.before.map((c) => c.content),
      after: around?.after.map((c) => c.content),
    });
    let five: string[];
    let single: string[];
    let other: string[];

    beforeAll(async () => {
      ({ store, close } = await open());
      datasetId = crypto.randomUUID();
      await store.createDatasetIndex(datasetId, 8);
      other = ids('other.txt', 3);
      five = ids('five.txt', 5);
      single = ids('single.txt', 1);
      // Another file's rows lie on both sides of five.txt's: neighbours never cross a file.
      await write('other.txt', other);
      await write('five.txt', five);
      await write('single.txt', single);
    });

    afterAll(async () => {
      await close();
    });

    test('a middle chunk has the one before and the one after; radius 2 gives two on each side, in file order', async () => {
      const found = await store.neighbours(datasetId, [five[2] as string], 1);
      expect(texts(found.get(five[2] as string))).toEqual({ before: ['five.txt chunk 1'], after: ['five.txt chunk 3'] });
      expect(found.get(five[2] as string)?.before[0]?.id).toBe(five[1] as string);
      const wider = await store.neighbours(datasetId, [five[2] as string], 2);
      expect(texts(wider.get(five[2] as string))).toEqual({
        before: ['five.txt chunk 0', 'five.txt chunk 1'],
        after: ['five.txt chunk 3', 'five.txt chunk 4'],
      });
    });

    test('the first and last chunks of a file have one neighbour; a file of one chunk has none', async () => {
      const found = await store.neighbours(datasetId, [five[0] as string, five[4] as string, single[0] as string, other[2] as string], 1);
      expect(texts(found.get(five[0] as string))).toEqual({ before: [], after: ['five.txt chunk 1'] });
      expect(texts(found.get(five[4] as string))).toEqual({ before: ['five.txt chunk 3'], after: [] });
      expect(texts(found.get(single[0] as string))).toEqual({ before: [], after: [] });
      expect(texts(found.get(other[2] as string))).toEqual({ before: ['other.txt chunk 1'], after: [] });
    });

    test('only visible chunks: an unknown id, or a chunk of a replaced file, has no entry', async () => {
      const old = other[1] as string;
      const replacement = ids('other.txt', 2);
      await write('other.txt', replacement);
      const found = await store.neighbours(datasetId, [old, 'no-such-chunk', replacement[0] as string], 1);
      expect([...found.keys()]).toEqual([replacement[0] as string]);
      expect(texts(found.get(replacement[0] as string))).toEqual({ before: [], after: ['other.txt chunk 1'] });
      // A staged set is not read either: chunks being written are nobody's neighbours yet.
      const staged = await store.stage(datasetId, 'five.txt', { count: 1, chunk: () => chunk('five.txt', crypto.randomUUID(), 0) });
      const during = await store.neighbours(datasetId, [five[1] as string], 1);
      expect(texts(during.get(five[1] as string))).toEqual({ before: ['five.txt chunk 0'], after: ['five.txt chunk 2'] });
      await store.discard(staged);
    });

    test('a dataset without an index fails as every other read does; a radius below 0 is refused', async () => {
      expect(store.neighbours(crypto.randomUUID(), ['x'], 1)).rejects.toBeInstanceOf(VectorIndexMissingError);
      expect(store.neighbours(datasetId, [five[0] as string], -1)).rejects.toBeInstanceOf(RangeError);
      expect((await store.neighbours(datasetId, [], 1)).size).toBe(0);
    });
  });
}

neighbourTests('SQLite', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'knode-neighbours-'));
  const opened: OpenedDatabase = await openDatabase(dataDir, [vectorExtensionPath()]);
  const store = new SqliteVectorStore(opened);
  return {
    store,
    async close() {
      await store.close();
      await opened.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
});

neighbourTests('PostgreSQL (PGlite)', async () => {
  const postgres: InProcessPostgres = await startPglite();
  const store = await PostgresVectorStore.open(postgres.db);
  return {
    store,
    async close() {
      await store.close();
      await postgres.close();
    },
  };
});

describe('the prompt a query sends', () => {
  let t: TestApp;
  let owner: TestUser;
  let fake: FakeOpenAIServer;
  let guide: string;
  const MODIFIED = new Date('2026-03-04T10:00:00Z');

  const query = (slug: string, payload: Record<string, unknown>) =>
    t.request({
      method: 'POST',
      url: `/api/v1/endpoints/${slug}/query`,
      token: owner.token,
      payload: { similarity_threshold: 0, extras: { reference_options: { mode: 'keyword' } }, ...payload },
    });

  /** The context system message the model was sent for the last query. */
  const lastContext = () => {
    const sent = fake.requests.filter((request) => request.path.endsWith('/chat/completions')).at(-1);
    const messages = sent?.body?.messages as { role: string; content: string }[];
    expect(messages[0]?.role).toBe('system');
    return messages[0]?.content as string;
  };

  /** The passages of a context: its first line and its text, by number. */
  const blocks = (context: string) =>
    context
      .slice(CONTEXT_INTRODUCTION.length + 2)
      .split(/\n\n(?=\[\d+\] )/)
      .map((block) => ({ head: block.slice(0, block.indexOf('\n')), text: block.slice(block.indexOf('\n') + 1) }));

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('context-owner');
    fake = startFakeOpenAI();
    const folder = join(t.dataDir, 'context-kb');
    mkdirSync(folder);
    guide = sentences('guide', 40);
    writeFileSync(join(folder, 'guide.txt'), guide);
    writeFileSync(join(folder, 'single.txt'), 'A single short note about the lonelyword.');
    // Files whose middle chunk is the one found: each passage has a chunk on both sides.
    for (let f = 0; f < 8; f++) {
      writeFileSync(
        join(folder, `many-${f}.txt`),
        [sentences(`pre${f}x`, 8), `Everyone${f} mentions the commonword here.`, sentences(`post${f}x`, 8)].join(' '),
      );
    }
    for (const name of ['guide.txt', 'single.txt']) utimesSync(join(folder, name), MODIFIED, MODIFIED);
    const dataset = await Dataset.create(t, owner, folder, { chunkSize: 300, chunkOverlap: 60 });
    await dataset.indexed();
    const model = await createModel(t, owner, 'fake', { model: 'fake-model', base_url: fake.url });
    await createEndpoint(t, owner, { name: 'ctx', slug: 'ctx-both', dataset_id: dataset.id, model_id: model.id, response_type: 'both' });
    await createEndpoint(t, owner, { name: 'ctx raw', slug: 'ctx-raw', dataset_id: dataset.id, response_type: 'raw' });
  });

  afterAll(async () => {
    await fake.close();
    await t.close();
  });

  test('a passage in the middle of its file: its first line, then the text from the chunk before to the chunk after', async () => {
    const response = await query('ctx-both', { messages: marker('guide', 20), limit: 1 });
    expect(response.statusCode).toBe(200);
    const [found] = response.json().references.documents as Passage[];
    expect(found?.content).toContain(marker('guide', 20));
    const [block] = blocks(lastContext());
    expect(block?.head).toBe('[1] guide.txt | guide.txt | 2026-03-04');
    // One run of the document: the overlaps are not repeated, and it reaches past the passage on both sides.
    expect(guide).toContain(block?.text as string);
    const at = block?.text.indexOf(found?.content as string) as number;
    expect(at).toBeGreaterThan(0);
    expect(at + (found?.content.length ?? 0)).toBeLessThan(block?.text.length as number);
  });

  test('a passage at the start or the end of its file has one neighbour; a file of one chunk none', async () => {
    await query('ctx-both', { messages: marker('guide', 0), limit: 1 });
    const first = blocks(lastContext())[0]?.text as string;
    expect(guide.startsWith(first)).toBe(true);
    await query('ctx-both', { messages: marker('guide', 39), limit: 1 });
    const last = blocks(lastContext())[0]?.text as string;
    expect(guide.endsWith(last)).toBe(true);
    expect(last.length).toBeGreaterThan(chunkText(guide, { chunkSize: 300, chunkOverlap: 60 }).at(-1)?.length as number);
    const single = await query('ctx-both', { messages: 'lonelyword', limit: 1 });
    const [note] = blocks(lastContext());
    expect(note).toEqual({ head: '[1] single.txt | single.txt | 2026-03-04', text: single.json().references.documents[0].content });
  });

  test('the references returned are a plain search’s: same documents, fields and scores', async () => {
    const payload = { messages: `${marker('guide', 5)} ${marker('guide', 30)} commonword`, limit: 6 };
    const both = (await query('ctx-both', payload)).json().references;
    const raw = (await query('ctx-raw', payload)).json().references;
    expect(both.documents.length).toBeGreaterThan(2);
    expect(both.documents).toEqual(raw.documents);
    expect(both.cost).toBe(raw.cost);
    // Neighbours are only in the prompt.
    for (const document of both.documents as Passage[])
      expect(Object.keys(document).sort()).toEqual(['content', 'document_id', 'metadata', 'similarity_score']);
  });

  test('many long passages: the context stays within the budget, neighbours left out from the last passages first', async () => {
    const maxTokens = 2_800;
    const messages = 'commonword';
    const response = await query('ctx-both', { messages, limit: 8, max_tokens: maxTokens });
    const documents = response.json().references.documents as Passage[];
    expect(documents).toHaveLength(8);
    const context = lastContext();
    const budget = contextBudget(
      undefined,
      reservedTokens([{ role: 'user', content: messages }], {
        ...SPEC_GENERATION,
        stop_sequences: [],
        max_tokens: maxTokens,
        system_prompt: undefined,
      }),
    );
    const found = blocks(context);
    expect(found).toHaveLength(8);
    // Every passage is sent whole; the budget is kept, and it was short: some passages lost their neighbours.
    for (const [index, document] of documents.entries()) expect(found[index]?.text).toContain(document.content);
    expect(context.length).toBeLessThanOrEqual(budget);
    const widened = found.map((block, index) => block.text.length > (documents[index]?.content.length ?? 0));
    expect(widened[0]).toBe(true);
    expect(widened.at(-1)).toBe(false);
  });
});
