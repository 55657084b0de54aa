import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { createTestApp, type TestApp, type TestUser } from './helpers/app.ts';
import { Dataset } from './helpers/datasets.ts';

/**
 * The search step of a query (issue 13): keyword mode needs no embedding model, query vectors are cached,
 * and scores are calibrated relevance in every mode. The embedder is an OpenAI-compatible double, so the
 * test sees every embedding request and can make the model fail.
 */
describe('search', () => {
  let t: TestApp;
  let user: TestUser;
  let fake: FakeOpenAIServer;
  let dataset: Dataset;
  const embeddingCalls = () => fake.requests.filter((request) => request.path === '/v1/embeddings').length;
  const mode = (name: 'hybrid' | 'keyword' | 'vector') => ({ extras: { reference_options: { mode: name } } });

  beforeAll(async () => {
    fake = startFakeOpenAI();
    t = await createTestApp();
    user = await t.user();
    dataset = await Dataset.create(t, user, undefined, { embedder: 'openai:fake-embed', base_url: fake.url });
    writeFileSync(join(dataset.folder, 'lighthouses.md'), '# Lighthouses\n\nA lighthouse keeper trims the lamp wick every evening.');
    writeFileSync(join(dataset.folder, 'gardens.txt'), 'Tomatoes need sun, water and a stake to climb.');
    writeFileSync(join(dataset.folder, 'boats.txt'), 'A sailing boat tacks against the wind.');
    await dataset.settled();
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });

  test('a keyword query never waits for the embedding model, even when it is down', async () => {
    fake.behave({ failure: { status: 500, message: 'the embedding model is down' } });
    try {
      const before = embeddingCalls();
      const hits = await dataset.search('how does the keeper trim the wick?', mode('keyword'));
      expect(hits[0]?.metadata.source).toBe('lighthouses.md');
      expect(embeddingCalls()).toBe(before);
      await expect(dataset.search('how does the keeper trim the wick?', mode('hybrid'))).rejects.toThrow();
    } finally {
      fake.behave({});
    }
  });

  test('a question asked again is not embedded again', async () => {
    const question = 'which plant climbs a stake?';
    await dataset.search(question, mode('hybrid'));
    const after = embeddingCalls();
    await dataset.search(question, mode('hybrid'));
    await dataset.search(question, mode('vector'));
    expect(embeddingCalls()).toBe(after);
    await dataset.search('something else entirely', mode('hybrid'));
    expect(embeddingCalls()).toBe(after + 1);
  });

  test('in every mode scores lie in [0, 1] and never increase down the list; the threshold drops lower ones', async () => {
    for (const name of ['hybrid', 'keyword', 'vector'] as const) {
      const hits = await dataset.search('lighthouse keeper lamp', mode(name));
      expect(hits.length).toBeGreaterThan(0);
      for (const [index, hit] of hits.entries()) {
        expect(hit.similarity_score).toBeGreaterThanOrEqual(0);
        expect(hit.similarity_score).toBeLessThanOrEqual(1);
        if (index > 0) expect(hit.similarity_score).toBeLessThanOrEqual(hits[index - 1]!.similarity_score);
      }
      const strict = await dataset.search('lighthouse keeper lamp', { ...mode(name), similarity_threshold: 0.5 });
      expect(strict).toEqual(hits.filter((hit) => hit.similarity_score >= 0.5));
    }
  });

  test('in a small dataset a chunk holding the rare words of the question is more likely relevant than not', async () => {
    const [best] = await dataset.search('lighthouse keeper wick', { ...mode('hybrid'), similarity_threshold: 0.5 });
    expect(best?.metadata.source).toBe('lighthouses.md');
    const unrelated = await dataset.search('what is the capital of Peru?', { ...mode('hybrid'), similarity_threshold: 0.5 });
    expect(unrelated).toEqual([]);
  });

  test('each answer says which ranking and calibration scored it', async () => {
    const response = await t.request({
      method: 'POST',
      url: `/api/v1/endpoints/${dataset.id.slice(0, 8)}-raw/query`,
      token: user.token,
      payload: { messages: 'tomatoes', similarity_threshold: 0 },
    });
    expect(response.json().references.provider_info).toMatchObject({
      mode: 'hybrid',
      ranking: expect.stringContaining('BM25'),
      calibration: expect.stringContaining('not fitted'),
    });
  });
});
