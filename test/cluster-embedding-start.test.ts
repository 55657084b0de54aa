/**
 * Cluster mode's shared embedding (src/ingestion/shared-embedding.ts) starts with the ingestion engine that
 * owns it: its first claim round asks the engine's keyword-first gate whether it may embed, and ran while
 * the engine was still being constructed (its dataset runtimes not there yet), so every replica's start
 * logged "claiming an embedding window failed" with a TypeError and waited a poll before claiming anything.
 * Found by the route tests on PostgreSQL (`npm run test:postgres`). Needs pgvector: without it no replica
 * shares embedding.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { createTestApp } from './helpers/app.ts';
import { logCollector } from './helpers/hub.ts';
import { type PrivatePostgres, startPostgres } from './helpers/postgres.ts';

let postgres: PrivatePostgres;

beforeAll(async () => {
  postgres = await startPostgres({ pgvector: true });
});

afterAll(async () => {
  await postgres?.stop();
});

test("a replica starts its shared embedding without a warning: the first claim waits for the engine's construction", async () => {
  const logs = logCollector();
  const t = await createTestApp(
    {
      SVC_DATABASE_URL: postgres.url,
      SVC_JWT_SECRET: 'a-jwt-secret-of-at-least-32-characters',
      SVC_SECRET_KEY: Buffer.alloc(32, 5).toString('base64'),
      SVC_LOG_LEVEL: 'warn',
    },
    undefined,
    { logDestination: logs.destination },
  );
  try {
    // The first claim round has run once the loop's first turn is over.
    await Bun.sleep(50);
    expect(logs.lines.filter((line) => line.includes('claiming an embedding window failed'))).toEqual([]);
  } finally {
    await t.close();
  }
});
