import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { type ImpostorHub, startImpostorHub } from '../fakes/impostor-hub.ts';
import { type FakeSyftHub, startFakeSyftHub } from '../fakes/syfthub.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { createDataset, createEndpoint } from '../helpers/fixtures.ts';
import { connectMarketplace } from '../helpers/hub.ts';

/**
 * Issue 11, item 1: tenant E adds a marketplace record with the victim's hub username but a URL of its
 * own server, which republishes the real hub's keys. A consumer's genuine token must never be answered
 * by E's endpoint of the same slug, nor be sent to E's server.
 */
describe('security: another tenant cannot take over satellite tokens meant for your endpoint', () => {
  let t: TestApp;
  let hub: FakeSyftHub;
  let impostor: ImpostorHub;
  let victim: TestUser;
  let attacker: TestUser;

  const query = (token: string, headers: Record<string, string> = {}) =>
    t.request({
      method: 'POST',
      url: '/api/v1/endpoints/docs/query',
      token,
      headers,
      payload: { messages: 'hello', similarity_threshold: 0 },
    });
  const usageOf = async (user: TestUser): Promise<unknown[]> =>
    (await t.request({ method: 'GET', url: '/api/v1/endpoints/docs/usage', token: user.token })).json();

  beforeAll(async () => {
    hub = await startFakeSyftHub();
    impostor = startImpostorHub(hub.url);
    t = await createTestApp();
    victim = await t.user('victim');
    attacker = await t.user('attacker');
    // The attacker's record is the older one: "oldest record first" would have chosen it.
    const forged = await t.request({
      method: 'POST',
      url: '/api/v1/marketplaces/',
      token: attacker.token,
      payload: { name: 'not-really-syfthub', url: impostor.url, username: 'victim', password: 'anything' },
    });
    expect(forged.statusCode).toBe(201);
    await connectMarketplace(t, victim, hub, 'victim');
    for (const owner of [attacker, victim]) {
      const dataset = await createDataset(t, owner, 'docs');
      await createEndpoint(t, owner, { slug: 'docs', dataset_id: dataset.id, response_type: 'raw', published: true });
    }
    const url = await t.request({
      method: 'PATCH',
      url: '/api/v1/settings/public-url',
      token: victim.token,
      payload: { public_url: 'https://victim.example.org' },
    });
    expect(url.statusCode).toBe(200);
  });
  afterAll(async () => {
    await t.close();
    await hub.close();
    await impostor.close();
  });

  test('without X-Tenant-Name or a known Host the token is refused (421), not answered by the older record', async () => {
    const response = await query(await hub.mintToken('carol@consumers.example', 'victim'));
    expect(response.statusCode).toBe(421);
    expect(response.json().detail).toContain('X-Tenant-Name');
    expect(impostor.tokensReceived).toEqual([]);
    expect(await usageOf(attacker)).toEqual([]);
  });

  test("through the victim's public URL (its Host) the victim's endpoint answers, and the impostor never sees the token", async () => {
    const token = await hub.mintToken('carol@consumers.example', 'victim');
    const response = await query(token, { host: 'victim.example.org' });
    expect(response.statusCode).toBe(200);
    expect(impostor.tokensReceived).toEqual([]);
    expect(await usageOf(attacker)).toEqual([]);
    expect(await usageOf(victim)).toContainEqual(expect.objectContaining({ sender_email: 'carol@consumers.example' }));
  });

  test("with X-Tenant-Name naming the victim, the victim's endpoint answers", async () => {
    const response = await query(await hub.mintToken('dave@consumers.example', 'victim'), { 'x-tenant-name': victim.tenant });
    expect(response.statusCode).toBe(200);
    expect(impostor.tokensReceived).toEqual([]);
    expect(await usageOf(attacker)).toEqual([]);
  });

  test("the impostor's server going down does not cut off the victim's consumers who come through its public URL", async () => {
    await impostor.close();
    const response = await query(await hub.mintToken('erin@consumers.example', 'victim'), { host: 'victim.example.org' });
    expect(response.statusCode).toBe(200);
  });

  test('the real hub account cannot be connected by a second tenant (409), and no login is spent on trying', async () => {
    const logins = hub.logins;
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/marketplaces/',
      token: attacker.token,
      payload: {
        name: 'same-account',
        url: `${hub.url.toUpperCase().replace('HTTP://', 'http://')}/`,
        username: 'VICTIM',
        password: 'victim-hub-password',
      },
    });
    expect(response.statusCode).toBe(409);
    expect(response.json().detail).toContain('another tenant');
    expect(hub.logins).toBe(logins);
  });
});
