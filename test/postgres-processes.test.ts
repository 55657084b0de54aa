import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { type OpenedPostgres, openPostgresDatabase } from '../src/db/postgres/database.ts';
import { type PrivatePostgres, startPostgres } from './helpers/postgres.ts';

/**
 * The shared-database counters and payment claims under two real processes, as two knode replicas run them: each process has
 * its own pool, its own event loop and no memory in common with the other; only PostgreSQL decides.
 */

const SRC = join(import.meta.dir, '../src');

/**
 * What each process does, at the same wall-clock moment: hits against one quota, claims of one credential,
 * reservations of another credential in the settlement journal.
 */
const WORKER = `
  import { openPostgresDatabase } from '${SRC}/db/postgres/database.ts';
  import { PostgresFixedWindows } from '${SRC}/db/postgres/fixed-windows.ts';
  import { ConsumedStore } from '${SRC}/payments/consumed-store.ts';
  import { SettlementJournal } from '${SRC}/payments/settlement-journal.ts';
  const [url, startAt, hits, claims] = process.argv.slice(-4);
  const { db, close } = await openPostgresDatabase(url);
  const windows = new PostgresFixedWindows(db);
  const store = new ConsumedStore(db);
  const journal = new SettlementJournal(db);
  const quota = { key: 'endpoint:bot:reader', limit: 30, periodSeconds: 3600 };
  const settlement = {
    challenge_id: 'paid-once', tenant_id: 'tenant', endpoint_id: 'endpoint', sender_email: 'carol@example.com',
    transaction_hash: '0x' + 'ab'.repeat(32), raw_transaction: '0x76', payer: '0x' + '00'.repeat(19) + '01', amount: 10000n,
    currency: '0x20c0' + '00'.repeat(18), recipient: '0x742d35Cc6634c0532925a3b844bC9e7595F8fE00', testnet: true,
    rpc_url: 'http://127.0.0.1:1', consumed_keys: ['knode:challenge:paid-once', 'knode:transaction:0xab'],
    expires_at: Date.now() + 60_000,
  };
  await Bun.sleep(Math.max(0, Number(startAt) - Date.now()));
  const [verdicts, claimed, reserved] = await Promise.all([
    Promise.all(Array.from({ length: Number(hits) }, () => windows.consume([quota]))),
    Promise.all(Array.from({ length: Number(claims) }, () => store.claim(['challenge:one', 'tx:0xone'], Date.now() + 60_000))),
    Promise.all(Array.from({ length: Number(claims) }, () => journal.reserve(settlement))),
  ]);
  console.log(JSON.stringify({
    allowed: verdicts.filter((v) => v.allowed).length,
    claimed: claimed.filter(Boolean).length,
    reserved: reserved.filter(Boolean).length,
  }));
  await close();
`;

let postgres: PrivatePostgres;
let database: OpenedPostgres;

beforeAll(async () => {
  postgres = await startPostgres();
  database = await openPostgresDatabase(postgres.url); // migrated once, before the workers start
  await database.db.insertInto('tenants').values({ id: 'tenant', name: 'tenant', created_at: new Date().toISOString() }).execute();
});

afterAll(async () => {
  await database?.close();
  await postgres?.stop();
});

describe('two processes on one PostgreSQL', () => {
  test('50 hits against a quota of 30 pass exactly 30, one credential is claimed once, and another is reserved once', async () => {
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
        return JSON.parse(stdout.trim()) as { allowed: number; claimed: number; reserved: number };
      }),
    );
    expect(results.reduce((sum, result) => sum + result.allowed, 0)).toBe(30);
    expect(results.reduce((sum, result) => sum + result.claimed, 0)).toBe(1);
    expect(results.reduce((sum, result) => sum + result.reserved, 0)).toBe(1);
    const rows = await database.db.selectFrom('payment_consumed').select('key').where('key', 'like', 'knode:%').orderBy('key').execute();
    expect(rows.map((row) => row.key)).toEqual(['knode:challenge:paid-once', 'knode:transaction:0xab']);
    // Both took part: neither process got every hit it asked for, or there was no contest.
    for (const result of results) expect(result.allowed).toBeGreaterThan(0);
  });
});
