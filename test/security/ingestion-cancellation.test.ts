/**
 * Finding 3 (work): a huge file kept both embedding threads busy for hours, deleting it or stopping its
 * dataset did not stop that work, and other datasets' files stayed queued behind it.
 *
 * The "huge file" here is 20,000 chunks embedded by the OpenAI-compatible test double, slowed down to
 * 100 ms per request: about half a minute of embedding, deterministic and light on the CPU.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type FakeOpenAIServer, startFakeOpenAI } from '../fakes/openai-server.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { Dataset } from '../helpers/datasets.ts';
import { waitFor } from '../helpers/wait.ts';

const CHUNKS = 20_000;
const CHUNK_SIZE = 100;

/** One sentence per chunk: 20,000 chunks of about 100 characters. */
function hugeText(): string {
  return Array.from({ length: CHUNKS }, (_, i) =>
    `Sentence ${String(i).padStart(6, '0')} of a very long file about the tides.`.padEnd(CHUNK_SIZE - 1, '.'),
  ).join('\n');
}

describe('cancelling and sharing ingestion work', () => {
  let t: TestApp;
  let owner: TestUser;
  let fake: FakeOpenAIServer;

  beforeAll(async () => {
    fake = startFakeOpenAI({ embeddingDimensions: 8 });
    t = await createTestApp();
    owner = await t.user('cancel-owner');
  });

  afterEach(() => fake.behave({}));

  afterAll(async () => {
    await t.close();
    await fake.close();
  });

  const embeddingCalls = () => fake.requests.filter((request) => request.path === '/v1/embeddings').length;

  /**
   * A dataset whose one file takes about 30 s to embed, and that is being embedded when this returns: its
   * chunks are keyword-searchable already (`searchable`), their vectors are being made.
   */
  async function embeddingHugeFile(name: string) {
    const folder = join(t.dataDir, name);
    mkdirSync(folder);
    writeFileSync(join(folder, 'huge.txt'), hugeText());
    fake.behave({ delayMs: 100 });
    const before = embeddingCalls();
    const dataset = await Dataset.create(t, owner, folder, {
      embedder: 'openai:fake-embed',
      base_url: fake.url,
      chunkSize: CHUNK_SIZE,
      chunkOverlap: 0,
    });
    await waitFor('the huge file to be embedded', async () => embeddingCalls() >= before + 5);
    expect((await dataset.file('huge.txt'))?.status).toBe('searchable');
    return { folder, dataset };
  }

  /**
   * Embedding calls made between `from` and `to` ms after now (the window after a cancellation). These
   * sleeps are the point of the test: real time passes, and no request may be sent in it.
   */
  async function callsBetween(from: number, to: number): Promise<number> {
    await Bun.sleep(from);
    const start = embeddingCalls();
    await Bun.sleep(to - from);
    return embeddingCalls() - start;
  }

  test('deleting a file cancels its embedding within a second', async () => {
    const { folder, dataset } = await embeddingHugeFile('delete-me');
    const deleted = performance.now();
    rmSync(join(folder, 'huge.txt'));
    // Not one embedding request is sent for it after the first second.
    expect(await callsBetween(1000, 2500)).toBe(0);
    const file = await dataset.file('huge.txt');
    expect(file?.status).toBe('removed');
    expect((await dataset.view()).ingestion).toMatchObject({ files_pending: 0, chunks: 0 });
    expect(performance.now() - deleted).toBeLessThan(5000);
  }, 30_000);

  test('stopping the dataset cancels the work within a second', async () => {
    const { dataset } = await embeddingHugeFile('stop-me');
    const started = performance.now();
    expect((await dataset.action('stop')).statusCode).toBe(200);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(await callsBetween(1000, 2500)).toBe(0);
    // Not failed: it stays keyword-searchable, and its vectors are made once the dataset starts again.
    expect((await dataset.file('huge.txt'))?.status).toBe('searchable');
    expect((await dataset.view()).status).toBe('stopped');
  }, 30_000);

  test("a second dataset's file is indexed while the first embeds a huge file", async () => {
    const { dataset: busy } = await embeddingHugeFile('busy');
    const folder = join(t.dataDir, 'small');
    mkdirSync(folder);
    writeFileSync(join(folder, 'small.txt'), 'A small note about lighthouses.');
    const started = performance.now();
    const other = await Dataset.create(t, owner, folder, { embedder: 'openai:fake-embed', base_url: fake.url });
    // Before, it waited for every one of the 20,000 chunks (half a minute); now for a slice or two.
    const file = await other.settledFile('small.txt', 10_000);
    expect(file.status).toBe('indexed');
    expect(performance.now() - started).toBeLessThan(10_000);
    expect((await busy.file('huge.txt'))?.status).toBe('searchable');
    expect((await busy.action('stop')).statusCode).toBe(200);
  }, 30_000);
});
