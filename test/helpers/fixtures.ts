import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { TestApp, TestUser } from './app.ts';

/** Creates resources through the API, failing loudly so a test never runs on a half-made fixture. */
export async function createDataset(t: TestApp, user: TestUser, name = 'docs', extra: Record<string, unknown> = {}) {
  const folder = join(t.dataDir, 'folders', `${name}-${crypto.randomUUID().slice(0, 8)}`);
  mkdirSync(folder, { recursive: true });
  const response = await t.request({
    method: 'POST',
    url: '/api/v1/datasets/',
    token: user.token,
    payload: { name, dtype: 'local_file', configuration: { ingestionPath: folder, ...extra } },
  });
  if (response.statusCode !== 201) throw new Error(`dataset: ${response.statusCode} ${response.body}`);
  return response.json() as { id: string; name: string; configuration: Record<string, unknown> };
}

export async function createModel(t: TestApp, user: TestUser, name = 'gpt', configuration: Record<string, unknown> = {}) {
  const response = await t.request({
    method: 'POST',
    url: '/api/v1/models/',
    token: user.token,
    payload: {
      name,
      dtype: 'openai',
      configuration: { model: 'gpt-4o-mini', base_url: 'http://127.0.0.1:9/v1', api_key: 'sk-test-secret', ...configuration },
    },
  });
  if (response.statusCode !== 201) throw new Error(`model: ${response.statusCode} ${response.body}`);
  return response.json() as { id: string; name: string; configuration: Record<string, unknown> };
}

export async function createEndpoint(t: TestApp, user: TestUser, body: Record<string, unknown>) {
  const response = await t.request({
    method: 'POST',
    url: '/api/v1/endpoints/',
    token: user.token,
    payload: { name: 'Endpoint', ...body },
  });
  if (response.statusCode !== 201) throw new Error(`endpoint: ${response.statusCode} ${response.body}`);
  return response.json() as { id: string; slug: string };
}

export async function createPolicy(t: TestApp, user: TestUser, body: Record<string, unknown>) {
  const response = await t.request({ method: 'POST', url: '/api/v1/policies/', token: user.token, payload: { name: 'policy', ...body } });
  if (response.statusCode !== 201) throw new Error(`policy: ${response.statusCode} ${response.body}`);
  return response.json() as { id: string; policy_type: string; configuration: Record<string, unknown> };
}
