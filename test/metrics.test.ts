import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import parsePrometheusTextFormat, { type MetricFamily } from 'parse-prometheus-text-format';
import pino from 'pino';
import { Metrics } from '../src/metrics/metrics.ts';
import { Heartbeat } from '../src/publishing/heartbeat.ts';
import type { HubClient } from '../src/syfthub/hub-client.ts';
import { type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { type FakeSyftHub, startFakeSyftHub } from './fakes/syfthub.ts';
import { FakeTunnelProvider } from './fakes/tunnel.ts';
import { createTestApp, type TestApp, type TestUser } from './helpers/app.ts';
import { ADMIN_KEY } from './helpers/constants.ts';
import { Dataset } from './helpers/datasets.ts';
import { createEndpoint, createModel, createPolicy } from './helpers/fixtures.ts';
import { connectMarketplace } from './helpers/hub.ts';

/** The families of a scrape, by name; the parser throws on anything that is not the text format. */
function families(text: string): Map<string, MetricFamily> {
  return new Map(parsePrometheusTextFormat(text).map((family) => [family.name, family]));
}

function sample(family: MetricFamily | undefined, labels: Record<string, string> = {}) {
  return family?.metrics.find((metric) => Object.entries(labels).every(([key, value]) => metric.labels?.[key] === value));
}

describe('GET /metrics', () => {
  let t: TestApp;
  let owner: TestUser;
  let fake: FakeOpenAIServer;
  let hub: FakeSyftHub;
  const tunnels = new FakeTunnelProvider();

  const scrape = (headers: Record<string, string> = {}, token: string | null = ADMIN_KEY) =>
    t.request({ method: 'GET', url: '/metrics', ...(token ? { token } : {}), headers });

  beforeAll(async () => {
    hub = await startFakeSyftHub();
    t = await createTestApp(
      { SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true', SVC_TUNNEL_DOMAIN: 'tunnels.example' },
      undefined,
      { tunnelProvider: tunnels },
    );
    owner = await t.user('mowner');
    fake = startFakeOpenAI();
    const folder = join(t.dataDir, 'kb');
    mkdirSync(folder);
    writeFileSync(join(folder, 'cats.txt'), 'Cats are small domesticated carnivorous mammals that people keep as pets.');
    const dataset = await Dataset.create(t, owner, folder);
    await dataset.indexed();
    const model = await createModel(t, owner, 'fake', { model: 'fake-model', base_url: fake.url });
    await createEndpoint(t, owner, { slug: 'metered', dataset_id: dataset.id, model_id: model.id, response_type: 'both' });
    const closed = await createEndpoint(t, owner, { slug: 'closed', dataset_id: dataset.id, response_type: 'raw' });
    await createPolicy(t, owner, { endpoint_id: closed.id, policy_type: 'access', configuration: { mode: 'allow', patterns: ['x@y.z'] } });
    const ask = (slug: string) =>
      t.request({ method: 'POST', url: `/api/v1/endpoints/${slug}/query`, token: owner.token, payload: { messages: 'cats' } });
    expect((await ask('metered')).statusCode).toBe(200);
    expect((await ask('closed')).statusCode).toBe(403);
    await connectMarketplace(t, owner, hub, 'mowner-hub');
    const opened = await t.request({
      method: 'POST',
      url: '/api/v1/settings/proxy',
      token: ADMIN_KEY,
      headers: { 'x-tenant-name': owner.tenant },
      payload: { tunnel_token: 'ngrok-token' },
    });
    expect(opened.statusCode).toBe(200);
  });

  afterAll(async () => {
    await fake.close();
    await t.close();
    await hub.close();
  });

  test('scrapes cleanly: requests, queries, refusals, ingestion, embedding, generation and the tunnel', async () => {
    const response = await scrape();
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toStartWith('text/plain; version=0.0.4');
    const scraped = families(response.body);

    const requests = scraped.get('knode_http_requests_total');
    expect(requests?.type).toBe('COUNTER');
    // By route pattern: one series for every slug.
    expect(Number(sample(requests, { method: 'POST', route: '/api/v1/endpoints/:slug/query', status: '200' })?.value)).toBe(1);
    expect(Number(sample(requests, { route: '/api/v1/endpoints/:slug/query', status: '403' })?.value)).toBe(1);

    expect(scraped.get('knode_query_duration_seconds')?.type).toBe('HISTOGRAM');
    // The parser folds a labelled histogram's series into one: its counts are read from the text.
    expect(response.body).toContain(`knode_query_duration_seconds_count{endpoint="${owner.tenant}/metered",outcome="success"} 1\n`);
    expect(response.body).toContain(`knode_query_duration_seconds_count{endpoint="${owner.tenant}/closed",outcome="access_denied"} 1\n`);

    const refusals = scraped.get('knode_policy_refusals_total');
    expect(Number(sample(refusals, { policy_type: 'access', outcome: 'access_denied' })?.value)).toBe(1);

    expect(Number(sample(scraped.get('knode_ingestion_files'), { status: 'indexed' })?.value)).toBe(1);
    expect(Number(sample(scraped.get('knode_ingestion_queue_depth'))?.value)).toBe(0);
    expect(Number(sample(scraped.get('knode_embedded_chunks_total'))?.value)).toBeGreaterThanOrEqual(1);
    expect(Number(sample(scraped.get('knode_embedder_chunks_per_second'))?.value)).toBeGreaterThan(0);
    expect(Number(sample(scraped.get('knode_generated_tokens_total'))?.value)).toBeGreaterThan(0);
    expect(Number(sample(scraped.get('knode_generation_tokens_per_second'))?.value)).toBeGreaterThan(0);
    const tunnel = scraped.get('knode_tunnel_state');
    expect(Number(sample(tunnel, { tenant: owner.tenant, state: 'online' })?.value)).toBe(1);
    expect(Number(sample(tunnel, { tenant: owner.tenant, state: 'reconnecting' })?.value)).toBe(0);
    expect(scraped.has('knode_hub_heartbeat_failures_total')).toBe(true);
    expect(scraped.has('knode_process_resident_memory_bytes')).toBe(true);
    expect(scraped.has('knode_nodejs_heap_size_used_bytes')).toBe(true);
    // Left out: Bun computes them by walking the whole heap, a stalled event loop at every scrape.
    expect([...scraped.keys()].filter((name) => name.includes('heap_space'))).toEqual([]);
  });

  test('admin only: 401 without or with bad credentials, 403 for a user token, not counted against the limits', async () => {
    expect((await scrape({}, null)).statusCode).toBe(401);
    expect((await scrape({}, 'not-the-key')).statusCode).toBe(401);
    expect((await scrape({}, owner.token)).statusCode).toBe(403);
  });

  test('in development mode, open to this machine only', async () => {
    const dev = await createTestApp({ SVC_OPEN_REGISTRATION: 'true' });
    try {
      expect((await dev.request({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
      expect((await dev.request({ method: 'GET', url: '/metrics', headers: { 'x-forwarded-for': '198.51.100.7' } })).statusCode).toBe(401);
    } finally {
      await dev.close();
    }
  });
});

test('a heartbeat the marketplace does not take is counted, by marketplace', async () => {
  const metrics = new Metrics({ filesByStatus: async () => [], tunnelStates: () => [] });
  const refusing = { reportHealth: () => Promise.reject(new Error('503')) } as unknown as HubClient;
  const heartbeat = new Heartbeat({
    intervalMs: 30_000,
    log: pino({ level: 'silent' }),
    targets: async () => [
      {
        key: 'm1',
        label: 'ada/syfthub',
        client: refusing,
        report: async () => ({ url: 'https://ada.example', ttl_seconds: 90, endpoints: [] }),
      },
    ],
    onFailure: (label) => metrics.heartbeatFailed(label),
  });
  await heartbeat.beat();
  const scraped = families((await metrics.text()).body);
  expect(Number(sample(scraped.get('knode_hub_heartbeat_failures_total'), { marketplace: 'ada/syfthub' })?.value)).toBe(1);
});
