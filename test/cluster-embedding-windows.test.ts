/**
 * The claims of embedding windows (src/coordination/postgres/embedding-windows.ts) on a private PostgreSQL,
 * as replicas make them: two pools in this process (two replicas' connections), each with several claimers
 * at once. The vectors themselves are written by the store, whose pgvector SQL runs on PGlite
 * (cluster-embedding.test.ts): Debian's server has no pgvector.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'kysely';
import { PostgresEmbeddingWindows } from '../src/coordination/postgres/embedding-windows.ts';
import { type OpenedPostgres, openPostgresDatabase } from '../src/db/postgres/database.ts';
import type { ClaimedWindow, WindowPart } from '../src/domain/embedding-windows.ts';
import { type PrivatePostgres, startPostgres } from './helpers/postgres.ts';

let postgres: PrivatePostgres;
let replicaA: OpenedPostgres;
let replicaB: OpenedPostgres;

beforeAll(async () => {
  postgres = await startPostgres();
  replicaA = await openPostgresDatabase(postgres.url);
  replicaB = await openPostgresDatabase(postgres.url);
});

afterAll(async () => {
  await replicaA?.close();
  await replicaB?.close();
  await postgres?.stop();
});

/** Files of 500 rows each, numbered once across the dataset, as the store numbers chunks. */
const FILES = Array.from({ length: 6 }, (_, index) => ({ fileKey: `file-${index}`, first: index * 500, last: index * 500 + 499 }));

/** A window as the store would plan it: each file's rows after its last claimed one, up to 70 rows, at most 3 files. */
function plan(claimed: Map<string, number>): WindowPart[] {
  const parts: WindowPart[] = [];
  let room = 70;
  for (const file of FILES) {
    if (room === 0 || parts.length === 3) break;
    const from = Math.max(file.first, (claimed.get(file.fileKey) ?? -1) + 1);
    if (from > file.last) continue;
    const to = Math.min(file.last, from + room - 1);
    parts.push({ fileKey: file.fileKey, from, to });
    room -= to - from + 1;
  }
  return parts;
}

/** Claims windows until every row is claimed; each window with the replica that claimed it. */
async function claimUntilDone(
  windows: PostgresEmbeddingWindows,
  datasetId: string,
): Promise<(ClaimedWindow & { by: PostgresEmbeddingWindows })[]> {
  const mine: (ClaimedWindow & { by: PostgresEmbeddingWindows })[] = [];
  for (;;) {
    const parts = plan(await windows.claimedUpTo(datasetId));
    if (parts.length === 0) return mine;
    const window = await windows.claim(datasetId, parts);
    if (window) mine.push({ ...window, by: windows });
    await Bun.sleep(5); // a window takes a while to embed: the claimers' turns interleave as replicas' do
  }
}

describe('embedding windows on PostgreSQL', () => {
  test('two replicas with four claimers each claim every row of a dataset exactly once', async () => {
    const datasetId = crypto.randomUUID();
    const a = new PostgresEmbeddingWindows(replicaA.db, { claimer: 'a', ttlMs: 60_000 });
    const b = new PostgresEmbeddingWindows(replicaB.db, { claimer: 'b', ttlMs: 60_000 });
    const claimers = [a, a, a, a, b, b, b, b].map((windows) => claimUntilDone(windows, datasetId));
    const claimed = (await Promise.all(claimers)).flat();
    const rows = new Map<number, number>();
    for (const window of claimed)
      for (const part of window.parts) for (let row = part.from; row <= part.to; row++) rows.set(row, (rows.get(row) ?? 0) + 1);
    expect(rows.size).toBe(FILES.length * 500);
    expect([...rows.values()].every((times) => times === 1)).toBe(true);
    expect(claimed.filter((window) => window.by === a).length).toBeGreaterThan(0);
    expect(claimed.filter((window) => window.by === b).length).toBeGreaterThan(0);
    // Per file, a window may write only once every window with earlier rows of its files is finished.
    const ordered = [...claimed].sort((x, y) => (x.parts[0]?.from ?? 0) - (y.parts[0]?.from ?? 0));
    const [first, second] = ordered as unknown as [ClaimedWindow, ClaimedWindow];
    expect(second.parts[0]?.fileKey).toBe(first.parts[0]?.fileKey);
    expect(await a.isNext(first)).toBe(true);
    expect(await a.isNext(second)).toBe(false);
    for (const window of ordered) await window.by.finish(window);
    const { rows: left } = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM embedding_windows WHERE dataset_id = ${datasetId}`.execute(replicaA.db);
    expect(left[0]?.n).toBe(0);
  });

  test('a window left by a dead claimer is taken over whole after its TTL; the former claimer can neither renew nor finish it', async () => {
    const datasetId = crypto.randomUUID();
    const dead = new PostgresEmbeddingWindows(replicaA.db, { claimer: 'dead', ttlMs: 400 });
    const alive = new PostgresEmbeddingWindows(replicaB.db, { claimer: 'alive', ttlMs: 60_000 });
    const window = await dead.claim(datasetId, plan(new Map([['file-0', 479]]))); // the end of one file and the start of the next
    if (!window) throw new Error('expected a window');
    expect(window.parts.length).toBeGreaterThan(1);
    expect(await alive.takeLapsed(datasetId)).toBeUndefined();
    // A renewal keeps it; then the claimer dies and stops renewing.
    await Bun.sleep(250);
    expect(await dead.renew([window.id])).toEqual(new Set([window.id]));
    await Bun.sleep(250);
    expect(await alive.takeLapsed(datasetId)).toBeUndefined();
    await Bun.sleep(300);
    const taken = await alive.takeLapsed(datasetId);
    expect(taken).toEqual(window);
    expect(await dead.renew([window.id])).toEqual(new Set());
    await dead.finish(window);
    expect(await alive.renew([window.id])).toEqual(new Set([window.id]));
    // Nothing else lapsed: two replicas asking at once get one window between them.
    expect(await Promise.all([alive.takeLapsed(datasetId), dead.takeLapsed(datasetId)])).toEqual([undefined, undefined]);
    await alive.finish(window);
    expect(await alive.claimedUpTo(datasetId)).toEqual(new Map());
  });

  test('of two replicas taking the same lapsed windows at once, each window goes to one of them', async () => {
    const datasetId = crypto.randomUUID();
    const gone = new PostgresEmbeddingWindows(replicaA.db, { claimer: 'gone', ttlMs: 100 });
    const claimed: ClaimedWindow[] = [];
    for (let index = 0; index < 10; index++) {
      const window = await gone.claim(datasetId, plan(await gone.claimedUpTo(datasetId)));
      if (window) claimed.push(window);
    }
    await Bun.sleep(200);
    const a = new PostgresEmbeddingWindows(replicaA.db, { claimer: 'a', ttlMs: 60_000 });
    const b = new PostgresEmbeddingWindows(replicaB.db, { claimer: 'b', ttlMs: 60_000 });
    const taken: ClaimedWindow[] = [];
    await Promise.all(
      [a, b, a, b].map(async (windows) => {
        for (let window = await windows.takeLapsed(datasetId); window; window = await windows.takeLapsed(datasetId)) taken.push(window);
      }),
    );
    expect(taken.map((window) => window.id).sort()).toEqual(claimed.map((window) => window.id).sort());
  });

  test("a replica compares its probe with the dataset holder's; probes of replicas no longer alive are dropped", async () => {
    const datasetId = crypto.randomUUID();
    const holder = new PostgresEmbeddingWindows(replicaA.db, { claimer: 'probe-holder' });
    const helper = new PostgresEmbeddingWindows(replicaB.db, { claimer: 'probe-helper' });
    const gone = new PostgresEmbeddingWindows(replicaB.db, { claimer: 'probe-gone' });
    await sql`
      INSERT INTO coordination_leases (name, holder, token, acquired_at, expires_at) VALUES
        (${`dataset:${datasetId}`}, 'probe-holder', 1, clock_timestamp(), clock_timestamp() + interval '1 hour'),
        ('replica:probe-holder', 'probe-holder', 1, clock_timestamp(), clock_timestamp() + interval '1 hour'),
        ('replica:probe-helper', 'probe-helper', 1, clock_timestamp(), clock_timestamp() + interval '1 hour')`.execute(replicaA.db);
    expect(await helper.holderProbe(datasetId)).toBeUndefined();
    await gone.saveProbe(datasetId, 'use-lite', Float32Array.of(0, 1));
    await holder.saveProbe(datasetId, 'use-lite', Float32Array.of(0.6, 0.8));
    await helper.saveProbe(datasetId, 'use-lite', Float32Array.of(0.6, 0.8));
    expect(await helper.holderProbe(datasetId)).toEqual({ embedder: 'use-lite', probe: Float32Array.of(0.6, 0.8) });
    const { rows } = await sql<{ replica: string }>`
      SELECT replica FROM embedding_probes WHERE dataset_id = ${datasetId} ORDER BY replica`.execute(replicaA.db);
    expect(rows.map((row) => row.replica)).toEqual(['probe-helper', 'probe-holder']);
  });
});
