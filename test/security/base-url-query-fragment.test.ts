import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createTestApp, issueLocs, type TestApp, type TestUser } from '../helpers/app.ts';

/**
 * Issue 22, item 2: knode appends paths to a configured base URL (`/models`, `/chat/completions`,
 * `/api/v1/auth/login`). A base URL ending in `?` or `#` turned whatever was appended into a query or a
 * fragment, so a tenant could point every call at any path of any server. A base URL with a query string
 * or a fragment, even an empty one, is a 422 on the field that holds it; a marketplace URL may not carry a
 * user name and password either (they have their own fields).
 */
const BAD = ['http://127.0.0.1:9/admin/delete?', 'http://127.0.0.1:9/v1?x', 'http://127.0.0.1:9/v1#', 'http://127.0.0.1:9/v1#x'];

describe('security: a base URL cannot carry a query string or a fragment', () => {
  let t: TestApp;
  let user: TestUser;

  beforeAll(async () => {
    t = await createTestApp({ SVC_OUTBOUND_ALLOW: '' });
    user = await t.user('query-owner');
  });
  afterAll(async () => {
    await t.close();
  });

  const send = (method: 'POST' | 'PATCH', url: string, payload: Record<string, unknown>) =>
    t.request({ method, url, token: user.token, payload });

  test("models: configuration.base_url, when created and when changed; discovery's base_url", async () => {
    const model = await send('POST', '/api/v1/models/', {
      name: 'ok',
      dtype: 'openai',
      configuration: { model: 'm', base_url: 'http://127.0.0.1:9/v1' },
    });
    expect(model.statusCode).toBe(201);
    for (const base_url of BAD) {
      const created = await send('POST', '/api/v1/models/', { name: 'bad', dtype: 'openai', configuration: { model: 'm', base_url } });
      expect(issueLocs(created)).toEqual(['body.configuration.base_url']);
      expect(created.json().detail[0].msg).toContain('query string');
      const changed = await send('PATCH', `/api/v1/models/${model.json().id}`, { configuration: { model: 'm', base_url } });
      expect(issueLocs(changed)).toEqual(['body.configuration.base_url']);
      expect(issueLocs(await send('POST', '/api/v1/models/discover', { base_url }))).toEqual(['body.base_url']);
    }
  });

  test("datasets: an openai: embedder's base_url", async () => {
    for (const base_url of BAD) {
      const response = await send('POST', '/api/v1/datasets/', {
        name: 'embedded',
        dtype: 'local_file',
        configuration: { ingestionPath: t.dataDir, embedder: 'openai:text-embedding-3-small', base_url },
      });
      expect(issueLocs(response)).toEqual(['body.configuration.base_url']);
    }
  });

  test('marketplaces: url and accounting_url, also with a user name and password in them', async () => {
    for (const url of [...BAD, 'http://alice:secret@127.0.0.1:9']) {
      const created = await send('POST', '/api/v1/marketplaces/', { name: 'hub', url, username: 'u', password: 'p' });
      expect(issueLocs(created)).toEqual(['body.url']);
      const accounting = await send('POST', '/api/v1/marketplaces/', {
        name: 'hub',
        url: 'http://127.0.0.1:9',
        username: 'u',
        password: 'p',
        accounting_url: url,
      });
      expect(issueLocs(accounting)).toEqual(['body.accounting_url']);
    }
  });

  test("the wallet's rpc_url", async () => {
    for (const rpc_url of BAD) {
      const response = await send('POST', '/api/v1/settings/wallet', { wallet_address: `0x${'cd'.repeat(20)}`, testnet: true, rpc_url });
      expect(issueLocs(response)).toEqual(['body.rpc_url']);
    }
  });
});
