import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { ADMIN_KEY } from '../helpers/constants.ts';
import { Dataset } from '../helpers/datasets.ts';
import { createEndpoint, createPolicy } from '../helpers/fixtures.ts';

/**
 * Issue 22, item 5: a price per document used to be charged for the documents the search found, so the
 * amount of an unpaid caller's 402 told how many documents match any question it asked, for free and as
 * often as it liked. The price is now per document asked for (API-CONTRACT 10.3 point 4): the 402 is the
 * same whatever matches, and says nothing of the search, which has not run.
 */
describe('security: an unpaid caller cannot count the documents that match a question', () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true' });
    owner = await t.user('count-owner');
    const folder = join(t.dataDir, 'kb');
    mkdirSync(folder);
    writeFileSync(join(folder, 'salaries.txt'), 'The salaries of the board were raised by forty percent in March.');
    writeFileSync(join(folder, 'merger.txt'), 'The merger with Acme was approved by the board in secret.');
    writeFileSync(join(folder, 'garden.txt'), 'Tomatoes grow best in full sun with regular watering.');
    const dataset = await Dataset.create(t, owner, folder);
    await dataset.indexed();
    const endpoint = await createEndpoint(t, owner, { name: 'leaks', slug: 'leaks', dataset_id: dataset.id, response_type: 'raw' });
    await createPolicy(t, owner, { endpoint_id: endpoint.id, policy_type: 'mpp', configuration: { price: 0.002, unit_type: 'document' } });
    const wallet = await t.request({
      method: 'POST',
      url: '/api/v1/settings/wallet',
      token: owner.token,
      payload: { wallet_address: '0x742d35Cc6634c0532925a3b844bC9e7595F8fE00', testnet: true },
    });
    expect(wallet.statusCode).toBe(200);
  });
  afterAll(async () => {
    await t.close();
  });

  const unpaid = (messages: string, similarity_threshold: number) =>
    t.request({
      method: 'POST',
      url: '/api/v1/endpoints/leaks/query',
      token: owner.token,
      payload: { messages, similarity_threshold, limit: 3 },
    });

  /** What a 402 tells, without the parts that differ at every challenge (its id and expiry). */
  const told = (body: Record<string, unknown>) => {
    const entry = (body.policy_metadata as { entries: Record<string, unknown>[] }).entries[0] as Record<string, unknown>;
    const { challenge_id: _id, expires: _expires, ...details } = entry.details as Record<string, unknown>;
    return { ...body, policy_metadata: { entries: [{ ...entry, details }] } };
  };

  test('a question matching everything and one matching nothing get the same 402', async () => {
    const everything = await unpaid('board salaries merger tomatoes', 0);
    const nothing = await unpaid('quantum chromodynamics lattice', 1);
    expect(everything.statusCode).toBe(402);
    expect(nothing.statusCode).toBe(402);
    expect(everything.json().detail).toBe('Payment of $0.006 required to query this endpoint');
    expect(told(nothing.json())).toEqual(told(everything.json()));
    expect(everything.json().references).toBeUndefined();
  });
});
