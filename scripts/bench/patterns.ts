/**
 * What an access or price pattern list can cost the event loop (issue 22, item 1): the check of the most
 * costly list the budget lets through, against a 252-character e-mail, through the API
 * (`POST /api/v1/policies/access/check`, which validates then matches every pattern), and the refusal of
 * the list that held knode 14 s before the budget (100 × `(.{0,99}a){9}z`). Meanwhile a second client asks
 * /api/v1/health, so the figures show whether other requests wait. Target: well under a second each.
 *
 * Usage: ./node_modules/.bin/bun scripts/bench/patterns.ts [--runs N]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { estimatedProgramSize, LIST_PROGRAM_MAX, PATTERN_PROGRAM_MAX } from '../../src/policies/email-patterns.ts';
import { createServices } from '../../src/services.ts';

const at = process.argv.indexOf('--runs');
const runs = at >= 0 ? Number(process.argv[at + 1]) || 20 : 20;

const dataDir = mkdtempSync(join(tmpdir(), 'knode-bench-patterns-'));
const config = { SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: 'silent', SVC_RATE_LIMIT_PER_MINUTE: '0', SVC_RATE_LIMIT_PER_HOUR: '0' };
const services = await createServices(loadConfig(config));
const app = await buildApp(services);
const address = await app.listen({ host: '127.0.0.1', port: 0 });
const email = `${'a'.repeat(240)}@example.org`;
const user = { email: 'bench@example.com', password: 'a long bench password', tenant_name: 'bench' };
await app.inject({ method: 'POST', url: '/api/v1/auth/register', payload: user });
const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: user.password } });
const token = login.json().access_token as string;

// The costliest list accepted: patterns just under the per-pattern budget, as many as the list budget allows.
const costly = `(.{0,99}a){${Math.floor(PATTERN_PROGRAM_MAX / 202)}}z`;
const allowed = Array.from({ length: Math.floor(LIST_PROGRAM_MAX / estimatedProgramSize(costly)) }, (_, i) => `${costly}${i}`);
const refused = Array.from({ length: 100 }, () => '(.{0,99}a){9}z');

async function check(patterns: string[]): Promise<{ ms: number; status: number }> {
  const started = performance.now();
  const response = await fetch(`${address}/api/v1/policies/access/check`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ configuration: { mode: 'allow', patterns }, email }),
  });
  await response.arrayBuffer();
  return { ms: performance.now() - started, status: response.status };
}

async function health(until: Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  let done = false;
  void until.then(() => {
    done = true;
  });
  while (!done) {
    const started = performance.now();
    await (await fetch(`${address}/api/v1/health`)).arrayBuffer();
    times.push(performance.now() - started);
  }
  return times;
}

const quantile = (values: number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))] ?? 0;

for (const [name, patterns] of [
  [`accepted: ${allowed.length} × ${costly}`, allowed],
  ['refused: 100 × (.{0,99}a){9}z', refused],
] as const) {
  const checks: number[] = [];
  const healths: number[] = [];
  let status = 0;
  await check([...patterns]); // warm-up: the JIT's first pass is not what a running server pays
  for (let run = 0; run < runs; run++) {
    const pending = check([...patterns]);
    healths.push(...(await health(pending)));
    const result = await pending;
    checks.push(result.ms);
    status = result.status;
  }
  console.log(
    `${name}: HTTP ${status}, check p50 ${quantile(checks, 0.5).toFixed(1)} ms, max ${Math.max(...checks).toFixed(1)} ms; ` +
      `/health meanwhile p50 ${quantile(healths, 0.5).toFixed(1)} ms, max ${Math.max(...healths).toFixed(1)} ms`,
  );
}

await app.close();
await services.close();
rmSync(dataDir, { recursive: true, force: true });
