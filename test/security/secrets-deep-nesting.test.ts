import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { SecretBox } from '../../src/security/secret-box.ts';
import {
  keepMaskedSecrets,
  maskedSecretKeys,
  maskSecrets,
  openSecrets,
  SECRET_MASK,
  sealSecrets,
} from '../../src/security/secret-config.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { createModel } from '../helpers/fixtures.ts';

/** `{"a": {"a": ... leaf}}`, `levels` objects deep, built without recursion. */
function nested(levels: number, leaf: Record<string, unknown>): Record<string, unknown> {
  let value = leaf;
  for (let level = 1; level < levels; level++) value = { a: value };
  return value;
}

/** The innermost object of `nested`, found without recursion. */
function innermost(value: Record<string, unknown>): Record<string, unknown> {
  let here = value;
  while (typeof here.a === 'object' && here.a !== null) here = here.a as Record<string, unknown>;
  return here;
}

describe('secrets of a configuration nested deeper than the call stack are handled without overflowing it', () => {
  // Rows stored before the configuration limits existed may be this deep; every view and query walks them.
  const LEVELS = 200_000;
  const box = new SecretBox(randomBytes(32));
  const leaf = { api_key: 'sk-at-the-bottom', url: 'https://u:p@deep.example/x' };

  test('maskSecrets, sealSecrets, openSecrets, keepMaskedSecrets and maskedSecretKeys', () => {
    const config = { deep: nested(LEVELS, leaf) };
    const masked = maskSecrets(config);
    expect(innermost(masked.deep as Record<string, unknown>)).toEqual({
      api_key: SECRET_MASK,
      url: `https://${SECRET_MASK}@deep.example/x`,
    });

    const sealed = sealSecrets(config, box);
    const bottom = innermost(sealed.deep as Record<string, unknown>);
    expect(bottom.api_key).toStartWith('enc:');
    expect(bottom.url).not.toContain('u:p');
    expect(innermost(openSecrets(sealed, box).deep as Record<string, unknown>)).toEqual(leaf);

    expect(innermost(keepMaskedSecrets(masked, config).deep as Record<string, unknown>)).toEqual(leaf);
    const paths = maskedSecretKeys(masked);
    expect(paths).toHaveLength(2);
    expect(paths[0]?.length).toBe(LEVELS + 1);
  });
});

describe('a model stored with a configuration 100,000 levels deep can still be opened for a query', () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user();
  });
  afterAll(() => t.close());

  test('openConfiguration (what every query of its endpoints does) does not overflow the stack', async () => {
    const model = await createModel(t, owner, 'legacy-deep');
    // Written as a row from before the limits could have been, bypassing the API that now refuses it.
    // As text: JSON.stringify itself cannot write a value this deep.
    const levels = 100_000;
    const legacy = `{"model":"m","deep":${'{"a":'.repeat(levels - 1)}{"api_key":"sk-legacy-deep"}${'}'.repeat(levels - 1)}}`;
    await t.services.database.db.updateTable('models').set({ configuration: legacy }).where('id', '=', model.id).execute();
    const tenant = await t.tenant(owner);

    const opened = await t.services.models.openConfiguration(tenant, model.id);
    expect(innermost(opened.configuration.deep as Record<string, unknown>)).toEqual({ api_key: 'sk-legacy-deep' });
  });
});
