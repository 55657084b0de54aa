import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestApp, type TestApp, type TestUser } from './helpers/app.ts';
import { ADMIN_KEY } from './helpers/constants.ts';
import { Dataset } from './helpers/datasets.ts';

describe('GET /settings/storage', () => {
  let t: TestApp;
  let owner: TestUser;
  let stranger: TestUser;
  let datasetId: string;

  const storage = (token: string | undefined, headers: Record<string, string> = {}) =>
    t.request({ method: 'GET', url: '/api/v1/settings/storage', ...(token ? { token } : {}), headers });

  beforeAll(async () => {
    t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true' });
    owner = await t.user('sowner');
    stranger = await t.user('sstranger');
    const folder = join(t.dataDir, 'kb');
    mkdirSync(folder);
    writeFileSync(join(folder, 'cats.txt'), 'Cats are small domesticated carnivorous mammals that people keep as pets. '.repeat(40));
    const dataset = await Dataset.create(t, owner, folder);
    datasetId = dataset.id;
    await dataset.indexed();
  });

  afterAll(() => t.close());

  test("a user sees their datasets' disk use; the data folder is the operator's to see", async () => {
    const response = await storage(owner.token);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).toMatchObject({ development_mode: false, data_dir: null, database_bytes: null });
    expect(body.datasets).toHaveLength(1);
    expect(body.datasets[0].id).toBe(datasetId);
    // Its text (3,000 characters), its vectors (2 KB each) and their index pages.
    expect(body.datasets[0].bytes).toBeGreaterThan(5_000);
    const operator = (await storage(ADMIN_KEY, { 'x-tenant-name': owner.tenant })).json();
    expect(operator.data_dir).toBe(t.dataDir);
    expect(operator.database_bytes).toBeGreaterThan(body.datasets[0].bytes);
    expect(operator.datasets.map((dataset: { id: string }) => dataset.id)).toEqual([datasetId]);
  });

  test('another tenant sees only its own datasets; 401 without or with a bad token', async () => {
    expect((await storage(stranger.token)).json().datasets).toEqual([]);
    expect((await storage(undefined)).statusCode).toBe(401);
    expect((await storage('not-a-token')).statusCode).toBe(401);
  });

  test('in development mode the person at this machine is the operator', async () => {
    const dev = await createTestApp({ SVC_OPEN_REGISTRATION: 'true' });
    try {
      const user = await dev.user('local');
      const body = (await dev.request({ method: 'GET', url: '/api/v1/settings/storage', token: user.token })).json();
      expect(body).toMatchObject({ development_mode: true, data_dir: dev.dataDir, datasets: [] });
      expect(body.database_bytes).toBeGreaterThan(0);
    } finally {
      await dev.close();
    }
  });
});
