import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestApp, issueLocs, type TestApp, type TestUser } from '../helpers/app.ts';

/**
 * Issue 22, item 5: a GGUF model file and a `transformers:` model folder could be anywhere on disk, and the
 * errors told whether a path existed (a probe of the whole file system). Like a dataset's folder, they must
 * lie inside the tenant's folders, symbolic links followed; a path outside gets the same answer whether or
 * not anything is there.
 */
describe("security: model files and folders come from the tenant's own folders, and nothing outside is probed", () => {
  let t: TestApp;
  let owner: TestUser;
  let outside: string;
  const GGUF = Buffer.concat([Buffer.from('GGUF'), Buffer.from([3, 0, 0, 0]), Buffer.alloc(64)]);

  const llama = (model_path: string) =>
    t.request({
      method: 'POST',
      url: '/api/v1/models/',
      token: owner.token,
      payload: { name: 'local', dtype: 'llama_cpp', configuration: { model_path } },
    });
  const dataset = (configuration: Record<string, unknown>) =>
    t.request({
      method: 'POST',
      url: '/api/v1/datasets/',
      token: owner.token,
      payload: { name: `d-${crypto.randomUUID()}`, dtype: 'local_file', configuration },
    });

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('roots-owner');
    outside = mkdtempSync(join(tmpdir(), 'knode-outside-'));
    writeFileSync(join(outside, 'model.gguf'), GGUF);
    mkdirSync(join(outside, 'folder'));
  });
  afterAll(async () => {
    await t.close();
    rmSync(outside, { recursive: true, force: true });
  });

  test('a GGUF file outside the folders: 422, the same words whether it exists or not', async () => {
    const existing = await llama(join(outside, 'model.gguf'));
    const missing = await llama(join(outside, 'nothing-here.gguf'));
    expect(issueLocs(existing)).toEqual(['body.configuration.model_path']);
    expect(existing.json().detail[0].msg).toStartWith("Must be inside one of this tenant's folders");
    expect(missing.json().detail[0].msg).toBe(existing.json().detail[0].msg);
  });

  test('a link inside the folders that leads outside is refused too; a file inside is taken', async () => {
    const link = join(t.dataDir, 'linked.gguf');
    symlinkSync(join(outside, 'model.gguf'), link);
    expect((await llama(link)).json().detail[0].msg).toStartWith("Must be inside one of this tenant's folders");
    const inside = join(t.dataDir, 'inside.gguf');
    writeFileSync(inside, GGUF);
    expect((await llama(inside)).statusCode).toBe(201);
  });

  test('a transformers: model folder outside the folders: 422 on embedder, without saying whether it exists', async () => {
    const ingestionPath = join(t.dataDir, 'docs');
    mkdirSync(ingestionPath, { recursive: true });
    const existing = await dataset({ ingestionPath, embedder: `transformers:${join(outside, 'folder')}` });
    const missing = await dataset({ ingestionPath, embedder: `transformers:${join(outside, 'nothing')}` });
    expect(issueLocs(existing)).toEqual(['body.configuration.embedder']);
    expect(missing.json().detail[0].msg).toBe(existing.json().detail[0].msg);
  });

  test("a dataset's folder outside the roots: the same words whether it exists or not", async () => {
    const existing = await dataset({ ingestionPath: join(outside, 'folder') });
    const missing = await dataset({ ingestionPath: join(outside, 'nothing') });
    expect(issueLocs(existing)).toEqual(['body.configuration.ingestionPath']);
    expect(missing.json().detail[0].msg).toBe(existing.json().detail[0].msg);
  });
});
