import { describe, expect, test } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestApp, issueLocs, type TestApp, type TestUser, tempDir } from '../helpers/app.ts';
import { ADMIN_KEY } from '../helpers/constants.ts';

/**
 * Issue 11, item 4: SVC_INGESTION_ROOTS (the home folder by default) belongs to the first owner; other
 * tenants index only what the operator grants them, so a stranger cannot read the owner's documents.
 */
describe('security: ingestion roots belong to tenants', () => {
  const createDataset = (t: TestApp, user: TestUser, folder: string) =>
    t.request({
      method: 'POST',
      url: '/api/v1/datasets/',
      token: user.token,
      payload: { name: `ds-${crypto.randomUUID()}`, dtype: 'local_file', configuration: { ingestionPath: folder } },
    });
  /** An app whose SVC_INGESTION_ROOTS is a "home" folder inside its data directory (removed with it). */
  const appWithHome = async (env: Record<string, string> = {}) => {
    const dataDir = tempDir();
    const home = join(dataDir, 'home');
    mkdirSync(home);
    return { t: await createTestApp({ SVC_INGESTION_ROOTS: home, ...env }, dataDir), home };
  };
  const folderIn = (root: string, name: string) => {
    const folder = join(root, name);
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'private.txt'), 'The owner keeps private notes here.');
    return folder;
  };

  test("a newly registered stranger cannot index the owner's folders in development mode", async () => {
    const { t, home } = await appWithHome();
    try {
      const owner = await t.user('owner', { grantRoots: false });
      const stranger = await t.user('stranger', { grantRoots: false });
      const notes = folderIn(home, 'notes');
      expect((await createDataset(t, owner, notes)).statusCode).toBe(201);
      for (const folder of [notes, home]) {
        expect(issueLocs(await createDataset(t, stranger, folder))).toEqual(['body.configuration.ingestionPath']);
      }
      const view = await t.request({ method: 'GET', url: `/api/v1/tenants/${stranger.tenant}`, token: stranger.token });
      expect(view.json()).toMatchObject({ name: stranger.tenant, ingestion_roots: [] });
      const ownerView = await t.request({ method: 'GET', url: `/api/v1/tenants/${owner.tenant}`, token: owner.token });
      expect(ownerView.json().ingestion_roots).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  test('with an admin key only the default tenant owns SVC_INGESTION_ROOTS; the operator grants each tenant its own folders', async () => {
    const { t, home } = await appWithHome({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true' });
    try {
      const alice = await t.user('alice', { grantRoots: false });
      const bob = await t.user('bob', { grantRoots: false });
      const aliceFolder = folderIn(home, 'alice');
      const bobFolder = folderIn(home, 'bob');
      expect((await createDataset(t, alice, aliceFolder)).statusCode).toBe(422);
      const grant = await t.request({
        method: 'PATCH',
        url: `/api/v1/tenants/${alice.tenant}`,
        token: ADMIN_KEY,
        payload: { ingestion_roots: [aliceFolder] },
      });
      expect(grant.statusCode).toBe(200);
      expect(grant.json()).toMatchObject({ name: alice.tenant, ingestion_roots: [aliceFolder] });
      expect((await createDataset(t, alice, aliceFolder)).statusCode).toBe(201);
      // Granting alice a folder gives bob nothing, and alice nothing beyond it.
      expect((await createDataset(t, bob, aliceFolder)).statusCode).toBe(422);
      expect((await createDataset(t, alice, bobFolder)).statusCode).toBe(422);
      // The admin key's default tenant owns SVC_INGESTION_ROOTS.
      const admin = await t.request({
        method: 'POST',
        url: '/api/v1/datasets/',
        token: ADMIN_KEY,
        payload: { name: 'operator', dtype: 'local_file', configuration: { ingestionPath: bobFolder } },
      });
      expect(admin.statusCode).toBe(201);
    } finally {
      await t.close();
    }
  });

  test('a tenant cannot grant itself folders: a user token is 403, a request through the tunnel 401', async () => {
    const { t, home } = await appWithHome();
    try {
      await t.user('owner', { grantRoots: false });
      const stranger = await t.user('stranger', { grantRoots: false });
      const patch = { method: 'PATCH' as const, url: `/api/v1/tenants/${stranger.tenant}`, payload: { ingestion_roots: [home] } };
      expect((await t.request({ ...patch, token: stranger.token })).statusCode).toBe(403);
      expect((await t.request({ ...patch, headers: { 'x-forwarded-for': '198.51.100.7', host: 'localhost' } })).statusCode).toBe(401);
      // The operator, at this machine, can.
      expect((await t.request(patch)).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });

  test('granted folders must exist; members see them, other tenants do not', async () => {
    const t = await createTestApp();
    try {
      const alice = await t.user('alice', { grantRoots: false });
      const bob = await t.user('bob', { grantRoots: false });
      const bad = await t.request({
        method: 'PATCH',
        url: `/api/v1/tenants/${alice.tenant}`,
        payload: { ingestion_roots: ['relative/folder', '/no/such/folder', t.dataDir] },
      });
      expect(issueLocs(bad)).toEqual(['body.ingestion_roots.0', 'body.ingestion_roots.1']);
      expect(
        (await t.request({ method: 'PATCH', url: '/api/v1/tenants/no-such-tenant', payload: { ingestion_roots: [] } })).statusCode,
      ).toBe(404);
      expect((await t.request({ method: 'GET', url: `/api/v1/tenants/${alice.tenant}`, token: bob.token })).statusCode).toBe(403);
      expect((await t.request({ method: 'GET', url: `/api/v1/tenants/${alice.tenant}` })).statusCode).toBe(401);
    } finally {
      await t.close();
    }
  });
});
