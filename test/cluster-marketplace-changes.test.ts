import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { type FakeSyftHub, startFakeSyftHub } from './fakes/syfthub.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { connectMarketplace } from './helpers/hub.ts';
import { type PrivatePostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/wait.ts';

/**
 * A marketplace changed through one replica reaches the others through the change log (services.ts
 * announces it right after MarketplaceService committed it): each other replica drops the hub session it
 * kept for that marketplace, so that its next call logs in with what is stored now, and forgets a deleted
 * marketplace's pending satellite registration.
 */

const JWT_SECRET = 'a-jwt-secret-of-at-least-32-characters';
const SECRET_KEY = Buffer.alloc(32, 5).toString('base64');

describe('marketplace changes across two replicas', () => {
  let postgres: PrivatePostgres;
  let hub: FakeSyftHub;
  let replicaA: TestApp;
  let replicaB: TestApp;

  beforeAll(async () => {
    postgres = await startPostgres();
    hub = await startFakeSyftHub();
    const env = { SVC_DATABASE_URL: postgres.url, SVC_JWT_SECRET: JWT_SECRET, SVC_SECRET_KEY: SECRET_KEY };
    replicaA = await createTestApp(env);
    replicaB = await createTestApp(env);
  });

  afterAll(async () => {
    await replicaA?.close();
    await replicaB?.close();
    await hub?.close();
    await postgres?.stop();
  });

  /** Replica B logs in to the marketplace as its own calls would, keeping the session. */
  const sessionOnB = async (tenantId: string, id: string) => {
    await replicaB.services.coordination.changes.catchUp(); // B has heard of every change made so far
    const record = await replicaB.services.marketplaceStatus.marketplaces.get(tenantId, id);
    if (!record) throw new Error('the marketplace is not visible to replica B');
    await replicaB.services.hubs.client(record).connect();
    expect(replicaB.services.hubs.loggedIn(id)).toBe(true);
  };

  test('new credentials given through A: B drops its session; deleted through A: B forgets the marketplace', async () => {
    const owner = await replicaA.user('publisher');
    const tenant = await replicaA.tenant(owner);
    const marketplace = await connectMarketplace(replicaA, owner, hub, 'publisher');
    await sessionOnB(tenant.id, marketplace.id);

    hub.addUser({ username: 'publisher2', email: 'publisher2@hub.example', password: 'publisher2-hub-password' });
    const changed = await replicaA.request({
      method: 'PATCH',
      url: `/api/v1/marketplaces/${marketplace.id}`,
      token: owner.token,
      payload: { username: 'publisher2', password: 'publisher2-hub-password' },
    });
    expect(changed.statusCode).toBe(200);
    await waitFor('B dropping its session', async () => !replicaB.services.hubs.loggedIn(marketplace.id), 10_000);

    await sessionOnB(tenant.id, marketplace.id);
    const deleted = await replicaA.request({ method: 'DELETE', url: `/api/v1/marketplaces/${marketplace.id}`, token: owner.token });
    expect(deleted.statusCode).toBe(200);
    await waitFor('B forgetting the marketplace', async () => !replicaB.services.hubs.loggedIn(marketplace.id), 10_000);
  });
});
