import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';

/**
 * Issue 22, item 5: in development mode `/settings/storage` showed the data folder (and the database's
 * size) to any tenant's user. Only the operator sees them: the laptop's owner (the first registered user)
 * (or the admin key); another tenant's user sees its own datasets only.
 */
describe('security: the data folder is shown to the operator only, in development mode too', () => {
  let t: TestApp;
  let owner: TestUser;
  let guest: TestUser;
  const storage = (token: string) => t.request({ method: 'GET', url: '/api/v1/settings/storage', token });

  beforeAll(async () => {
    t = await createTestApp({ SVC_OPEN_REGISTRATION: 'true' });
    owner = await t.user('laptop-owner');
    guest = await t.user('guest', { grantRoots: false });
  });
  afterAll(async () => {
    await t.close();
  });

  test("another tenant's user: no data folder, no database size", async () => {
    expect((await storage(guest.token)).json()).toMatchObject({ development_mode: true, data_dir: null, database_bytes: null });
  });

  test("the laptop's owner sees them", async () => {
    expect((await storage(owner.token)).json().data_dir).toBe(t.dataDir);
  });
});
