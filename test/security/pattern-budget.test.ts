import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { RE2JS } from 're2js';
import { estimatedProgramSize, LIST_PROGRAM_MAX, PATTERN_PROGRAM_MAX } from '../../src/policies/email-patterns.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser } from '../helpers/app.ts';
import { createEndpoint, createModel, createPolicy } from '../helpers/fixtures.ts';

/**
 * Issue 22, item 1: RE2 is linear, but counted repetitions make its constant huge: 100 access patterns like
 * `(.{0,99}a){9}z` checked against a 250-character e-mail held every request 14 s. Patterns now have a
 * budget in program instructions, each and per list, refused with a 422 that names the pattern and says
 * why, before anything is compiled; what is accepted costs at most ~25 ms a check (the timing is measured
 * by scripts/bench/patterns.ts, not here).
 */
describe('security: a pattern cannot freeze the server', () => {
  let t: TestApp;
  let owner: TestUser;
  const heavy = '(.{0,99}a){9}z';
  const email = `${'a'.repeat(240)}@example.org`;

  const check = (patterns: string[]) =>
    t.request({
      method: 'POST',
      url: '/api/v1/policies/access/check',
      token: owner.token,
      payload: { configuration: { mode: 'allow', patterns }, email },
    });

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('owner');
  });
  afterAll(async () => {
    await t.close();
  });

  test('the estimate of a pattern follows what RE2 compiles it to', () => {
    for (const pattern of [heavy, '.*@example\\.org', '(alice|bob)@example\\.(org|com)', '.{0,20}@.{0,30}', '[a-z]{2,}@x\\.org']) {
      const size = RE2JS.compile(pattern, RE2JS.CASE_INSENSITIVE).programSize();
      expect(Math.abs(estimatedProgramSize(pattern) - size)).toBeLessThanOrEqual(Math.max(5, size * 0.2));
    }
  });

  test('100 patterns like (.{0,99}a){9}z: 422 naming each pattern, nothing matched', async () => {
    const response = await check(Array.from({ length: 100 }, () => heavy));
    expect(response.statusCode).toBe(422);
    const issues = response.json().detail as { loc: (string | number)[]; msg: string; type: string }[];
    expect(issues).toHaveLength(100);
    expect(issues[0]).toEqual({
      loc: ['body', 'configuration', 'patterns', 0],
      msg: expect.stringContaining(`at most ${PATTERN_PROGRAM_MAX}`),
      type: 'regex_too_complex',
    });
  });

  test('a pattern that would compile to hundreds of thousands of instructions is refused unread', async () => {
    const huge = `(${'abcdefghij'.repeat(45)}){1000}`;
    const response = await check([huge]);
    expect(issueLocs(response)).toEqual(['body.configuration.patterns.0']);
    expect(response.json().detail[0].msg).toContain('about 453000 instructions');
  });

  test('each pattern within budget but the list over it: 422 on the list', async () => {
    const medium = '(.{0,99}a){4}z'; // about 810 instructions
    const count = Math.floor(LIST_PROGRAM_MAX / estimatedProgramSize(medium)) + 1;
    const response = await check(Array.from({ length: count }, (_, index) => `${medium}${index}`));
    expect(response.statusCode).toBe(422);
    expect(response.json().detail).toEqual([
      { loc: ['body', 'configuration', 'patterns'], msg: expect.stringContaining(`at most ${LIST_PROGRAM_MAX}`), type: 'too_complex' },
    ]);
  });

  test('the same budget holds for policies and for prices; plain e-mails cost nothing', async () => {
    const endpoint = await createEndpoint(t, owner, {
      name: 'budget',
      slug: 'budget',
      model_id: (await createModel(t, owner, 'm')).id,
      response_type: 'summary',
    });
    const create = (policy_type: string, configuration: object) =>
      t.request({
        method: 'POST',
        url: '/api/v1/policies/',
        token: owner.token,
        payload: { name: 'p', policy_type, endpoint_id: endpoint.id, configuration },
      });
    expect(issueLocs(await create('access', { mode: 'deny', patterns: [heavy] }))).toEqual(['body.configuration.patterns.0']);
    expect(issueLocs(await create('mpp', { price: 0.01, applied_to: ['*', heavy] }))).toEqual(['body.configuration.applied_to.1']);
    const emails = Array.from({ length: 1000 }, (_, index) => `user${index}@example.com`);
    expect((await create('access', { mode: 'allow', patterns: emails })).statusCode).toBe(201);
  });

  test('an over-budget pattern stored before the budget refuses the query (403, fails closed) instead of matching', async () => {
    const endpoint = await createEndpoint(t, owner, {
      name: 'legacy',
      slug: 'legacy',
      model_id: (await createModel(t, owner, 'm2')).id,
      response_type: 'summary',
    });
    const policy = await createPolicy(t, owner, {
      endpoint_id: endpoint.id,
      policy_type: 'access',
      configuration: { mode: 'deny', patterns: ['x@y.z'] },
    });
    // As an older knode stored it: written past today's checks.
    const huge = `(${'abcdefghij'.repeat(45)}){1000}`;
    await t.services.database.db
      .updateTable('policies')
      .set({ configuration: JSON.stringify({ mode: 'deny', patterns: [huge] }) })
      .where('id', '=', policy.id)
      .execute();
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/endpoints/legacy/query',
      token: owner.token,
      payload: { messages: 'hello' },
    });
    expect(response.statusCode).toBe(403);
    expect(response.json().detail).toContain('cannot be checked');
  });
});
