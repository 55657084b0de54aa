import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiPath } from '../../web/api.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';

/**
 * Issue 22, item 5: the console built some API paths from its page URL without encoding them, so a crafted
 * link (`/datasets/..%2F..%2Fsettings%2Fwallet`) could make the user's own token call another route.
 * Every path the console sends is built with `apiPath`, which encodes each value as one segment.
 */
describe('security: a console link cannot steer API calls to another route', () => {
  let t: TestApp;
  let owner: TestUser;
  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('owner');
  });
  afterAll(async () => {
    await t.close();
  });

  test('apiPath encodes each value: no extra segment, no `..`, no query', () => {
    const id = '../../settings/wallet?x=1#y';
    expect(apiPath`/datasets/${id}/start`).toBe('/datasets/..%2F..%2Fsettings%2Fwallet%3Fx%3D1%23y/start');
    expect(apiPath`/endpoints/${'my-papers'}/usage?limit=${100}`).toBe('/endpoints/my-papers/usage?limit=100');
  });

  test('the server takes such a value as one id (not a UUID: 422), never as the other route', async () => {
    const path = `/api/v1${apiPath`/datasets/${'../settings/wallet'}`}`;
    const response = await t.request({ method: 'DELETE', url: path, token: owner.token });
    expect(response.statusCode).toBe(422);
    expect(response.json().detail[0].loc).toEqual(['path', 'id']);
  });

  test('no page of the console sends a path with a value that apiPath did not encode', () => {
    const calls = /\b(?:useResource|get|post|patch|del|send)(?:<[^()]*?>)?\((?:'[A-Z]+', )?`[^`]*\$\{/g;
    const offenders: string[] = [];
    const walk = (folder: string) => {
      for (const entry of readdirSync(folder, { withFileTypes: true })) {
        const path = join(folder, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (/\.tsx?$/.test(entry.name)) {
          for (const match of readFileSync(path, 'utf8').matchAll(calls)) offenders.push(`${path}: ${match[0]}`);
        }
      }
    };
    walk(join(import.meta.dir, '..', '..', 'web'));
    expect(offenders).toEqual([]);
  });
});
