import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { type OpenedPostgres, openPostgresDatabase } from '../src/db/postgres/database.ts';
import { type PrivatePostgres, startPostgres } from './helpers/postgres.ts';

/**
 * The shared-database counters under two real processes, as two knode replicas run them: each process has
 * its own pool, its own event loop and no memory in common with the other; only PostgreSQL decides.
 */

const SRC = join(import.meta.dir, '../src/db/postgres');

/** What each process does, at the same wall-clock moment: hits against one quota, claims of one credential. */
const WORKER = `
  import { openPostgresDatabase } from '${SRC}/database.ts';
  import { PostgresFixedWindows } from '${SRC}/fixed-windows.ts';
  import { PostgresConsumedStore } from '${SRC}/consumed-store.ts';
  const [url, startAt, hits, claims] = process.argv.slice(-4);
  const { db, close } = await openPostgresDatabase(url);
  const windows = new PostgresFixedWindows(db);
  const store = new PostgresConsumedStore(db);
  const quota = { key: 'endpoint:bot:reader', limit: 30, periodSeconds: 3600 };
  await Bun.sleep(Math.max(0, Number(startAt) - Date.now()));
  const [verdicts, claimed] = await Promise.all([
    Promise.all(Array.from({ length: Number(hits) }, () => windows.consume([quota]))),
    Promise.all(Array.from({ length: Number(claims) }, () => store.claim(['challenge:one', 'tx:0xone'], Date.now() + 60_000))),
  ]);
  console.log(JSON.stringify({ allowed: verdicts.filter((v) => v.allowed).length, claimed: claimed.filter(Boolean).length }));
  await close();
`;

let postgres: PrivatePostgres;
let database: OpenedPostgres;

beforeAll(async () => {
  postgres = await startPostgres();
  database = await openPostgresDatabase(postgres.url); // migrated once, before the workers start
});

afterAll(async () => {
  await database?.close();
  await postgres?.stop();
});

describe('two processes on one PostgreSQL', () => {
  test('50 hits against a quota of 30 pass exactly 30, and one credential is claimed once', async () => {
    const startAt = Date.now() + 2_000; // both processes loaded and connected by then
    const workers = [0, 1].map(() =>
      Bun.spawn([process.execPath, '-e', WORKER, postgres.url, String(startAt), '25', '10'], {
        cwd: join(import.meta.dir, '..'),
        stdout: 'pipe',
        stderr: 'pipe',
      }),
    );
    const results = await Promise.all(
      workers.map(async (worker) => {
        const [stdout, stderr, code] = await Promise.all([
          new Response(worker.stdout).text(),
          new Response(worker.stderr).text(),
          worker.exited,
        ]);
        if (code !== 0) throw new Error(`worker failed (exit ${code}): ${stderr}`);
        return JSON.parse(stdout.trim()) as { allowed: number; claimed: number };
      }),
    );
    expect(results.reduce((sum, result) => sum + result.allowed, 0)).toBe(30);
    expect(results.reduce((sum, result) => sum + result.claimed, 0)).toBe(1);
    // Both took part: neither process got every hit it asked for, or there was no contest.
    for (const result of results) expect(result.allowed).toBeGreaterThan(0);
  });
});
