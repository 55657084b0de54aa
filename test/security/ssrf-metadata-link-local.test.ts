import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { OutboundRefusedError } from '../../src/outbound/errors.ts';
import { outboundFetch } from '../../src/outbound/fetch.ts';
import { Reach } from '../../src/outbound/reach.ts';
import { addressKind } from '../../src/util/ip-ranges.ts';
import { startHostileServer } from '../fakes/hostile-server.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser, validationIssues } from '../helpers/app.ts';

/**
 * Issue 22, item 2: any tenant user could make knode fetch any address, a cloud metadata service included
 * (169.254.169.254 hands out the machine's cloud credentials). Link-local and metadata addresses are never
 * called now, for nobody, whatever SVC_OUTBOUND_ALLOW says, and also when a harmless-looking name resolves to
 * one. Every refusal here is decided before a connection: no traffic leaves the machine.
 */
const FORBIDDEN = [
  'http://169.254.169.254/latest/meta-data',
  'http://169.254.10.1:8080/v1',
  'http://[fe80::1]:8080/v1',
  'http://[fd00:ec2::254]/latest',
  'http://[::ffff:169.254.169.254]/latest',
  'http://metadata.google.internal/computeMetadata/v1',
  'http://100.100.100.200/latest',
];

describe('security: cloud metadata and link-local addresses are never called', () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    // Loopback and private are allowed to everyone: metadata and link-local stay refused all the same.
    t = await createTestApp({ SVC_OUTBOUND_ALLOW: 'loopback,private' });
    owner = await t.user('metadata-owner'); // the first owner: the most trusted tenant there is
  });
  afterAll(async () => {
    await t.close();
  });

  test('model discovery: 422 on base_url, saying why', async () => {
    for (const base_url of FORBIDDEN) {
      const response = await t.request({ method: 'POST', url: '/api/v1/models/discover', token: owner.token, payload: { base_url } });
      const [issue] = validationIssues(response);
      expect(issue?.loc).toEqual(['body', 'base_url']);
      expect(issue?.msg).toMatch(/metadata service|link-local/);
    }
  });

  test('a model: 422 on configuration.base_url, when created and when changed', async () => {
    for (const base_url of FORBIDDEN) {
      const created = await t.request({
        method: 'POST',
        url: '/api/v1/models/',
        token: owner.token,
        payload: { name: 'steal', dtype: 'openai', configuration: { model: 'm', base_url } },
      });
      expect(issueLocs(created)).toEqual(['body.configuration.base_url']);
    }
    const model = await t.request({
      method: 'POST',
      url: '/api/v1/models/',
      token: owner.token,
      payload: { name: 'fine', dtype: 'openai', configuration: { model: 'm', base_url: 'http://127.0.0.1:9/v1' } },
    });
    expect(model.statusCode).toBe(201);
    const changed = await t.request({
      method: 'PATCH',
      url: `/api/v1/models/${model.json().id}`,
      token: owner.token,
      payload: { configuration: { model: 'm', base_url: 'http://169.254.169.254/latest' } },
    });
    expect(issueLocs(changed)).toEqual(['body.configuration.base_url']);
  });

  test("the wallet's RPC: 422 on rpc_url", async () => {
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/settings/wallet',
      token: owner.token,
      payload: { wallet_address: `0x${'ab'.repeat(20)}`, testnet: true, rpc_url: 'http://169.254.169.254/rpc' },
    });
    expect(issueLocs(response)).toEqual(['body.rpc_url']);
  });

  test('a marketplace: 422 on url or accounting_url, before any login is sent', async () => {
    for (const [field, payload] of [
      ['url', { url: 'http://169.254.169.254/latest' }],
      ['accounting_url', { url: 'http://127.0.0.1:9', accounting_url: 'http://[fd00:ec2::254]/latest' }],
    ] as const) {
      const response = await t.request({
        method: 'POST',
        url: '/api/v1/marketplaces/',
        token: owner.token,
        payload: { name: 'imds', username: 'u', password: 'p', ...payload },
      });
      const [issue] = validationIssues(response);
      expect(issue?.loc).toEqual(['body', field]);
      expect(issue?.msg).toContain('cloud metadata service');
    }
  });

  test("a dataset's openai: embedder: 422 on configuration.base_url", async () => {
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/datasets/',
      token: owner.token,
      payload: {
        name: 'imds-embedder',
        dtype: 'local_file',
        configuration: { ingestionPath: t.dataDir, embedder: 'openai:text-embedding-3-small', base_url: 'http://169.254.169.254/v1' },
      },
    });
    expect(issueLocs(response)).toEqual(['body.configuration.base_url']);
  });

  test('SVC_OUTBOUND_ALLOW cannot allow them: one clear line at start-up', () => {
    for (const value of ['169.254.0.0/16', '0.0.0.0/0', 'fe80::/10', 'metadata.google.internal']) {
      expect(() => loadConfig({ SVC_OUTBOUND_ALLOW: value })).toThrow(ConfigError);
    }
    expect(() => loadConfig({ SVC_OUTBOUND_ALLOW: 'loopback,bogus entry' })).toThrow(/^SVC_OUTBOUND_ALLOW: /);
    expect(loadConfig({ SVC_OUTBOUND_ALLOW: 'loopback, 10.1.0.0/16, ollama.lan' }).outboundAllow).toEqual({
      loopback: true,
      private: false,
      hosts: ['ollama.lan'],
      cidrs: ['10.1.0.0/16'],
    });
  });
});

describe('security: an address is judged by what it reaches, however it is spelled', () => {
  test('IPv4 inside IPv6 (mapped, NAT64, 6to4) is the IPv4 address', () => {
    expect(
      Object.fromEntries(
        [
          '169.254.169.254',
          '::ffff:169.254.169.254',
          '::ffff:a9fe:a9fe',
          '64:ff9b::a9fe:a9fe',
          '2002:a9fe:a9fe::1',
          'fd00:ec2::254',
          'fe80::1%eth0',
          '[fe80::1]',
          '127.0.0.1',
          '::ffff:7f00:1',
          '0.0.0.0',
          '::',
          '::1',
          '10.1.2.3',
          'fd12::1',
          '100.64.0.1',
          '224.0.0.1',
          '93.184.216.34',
          '2606:2800:220:1::1',
        ].map((address) => [address, addressKind(address)]),
      ),
    ).toEqual({
      '169.254.169.254': 'metadata',
      '::ffff:169.254.169.254': 'metadata',
      '::ffff:a9fe:a9fe': 'metadata',
      '64:ff9b::a9fe:a9fe': 'metadata',
      '2002:a9fe:a9fe::1': 'metadata',
      'fd00:ec2::254': 'metadata',
      'fe80::1%eth0': 'link-local',
      '[fe80::1]': 'link-local',
      '127.0.0.1': 'loopback',
      '::ffff:7f00:1': 'loopback',
      '0.0.0.0': 'loopback',
      '::': 'loopback',
      '::1': 'loopback',
      '10.1.2.3': 'private',
      'fd12::1': 'private',
      '100.64.0.1': 'private',
      '224.0.0.1': 'reserved',
      '93.184.216.34': 'public',
      '2606:2800:220:1::1': 'public',
    });
  });
});

describe('security: a name that resolves to a forbidden address is refused after resolution (DNS rebinding)', () => {
  const everything = new Reach(true, { loopback: true, private: true, hosts: [], cidrs: [] });

  test('every address of the host is checked: one forbidden address is enough to refuse', async () => {
    for (const addresses of [['169.254.169.254'], ['93.184.216.34', '169.254.169.254'], ['fe80::1'], ['::ffff:a9fe:a9fe']]) {
      const call = outboundFetch(everything, { lookup: async () => addresses });
      const error = await call('http://innocent.example/v1/models').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(OutboundRefusedError);
    }
  });

  test('the connection goes to the address that was checked, the name kept in Host (no second lookup)', async () => {
    const server = startHostileServer();
    try {
      let lookups = 0;
      const call = outboundFetch(everything, {
        lookup: async () => {
          lookups++;
          return ['127.0.0.1'];
        },
      });
      const response = await call(`http://rebinding.example:${server.port}/v1/models`);
      expect(response.status).toBe(200);
      expect(lookups).toBe(1);
      expect(server.requests).toEqual([{ method: 'GET', path: '/v1/models', host: `rebinding.example:${server.port}` }]);
    } finally {
      await server.close();
    }
  });
});
