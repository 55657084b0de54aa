import { sql } from 'kysely';
import type { Db, DbOrTransaction } from '../../db/database.ts';
import type { ClaimedWindow, WindowPart } from '../../domain/embedding-windows.ts';
import { DEFAULT_LEASE_TTL_MS } from '../leases.ts';

/**
 * The windows of a dataset's chunks that the replicas of a cluster embed (ingestion/shared-embedding.ts
 * runs the work; this is its table, `embedding_windows`, migration 0009). A window is a few files' next
 * chunks, one row per file part (rows `from_row`..`to_row`), claimed by one replica until `expires_at`.
 *
 * Claims of a dataset are made one at a time under a transaction-level advisory lock on the dataset: a
 * claim is rare (about one a second per replica) and its checks span rows (no part may overlap or precede
 * another claim of its file), which a row lock alone cannot make exact. A lapsed window is taken over whole
 * (all its parts, its id kept), first in row order. So, per file, windows are created in row order, and a
 * window may write its vectors once no window holds earlier rows of its files (`isNext`): the waits between
 * windows never form a cycle, and a window a dead replica held is taken over by whoever waits behind it.
 *
 * The server's clock alone says whether a window lapsed, as for leases (coordination/postgres/leases.ts).
 * A former claimer that writes late is harmless: the store writes a file's vectors only from its first
 * chunk without one, so of two writes of the same rows the second fails and nothing is written twice.
 */

export interface EmbeddingWindowOptions {
  /** This replica's id (its lease holder id). */
  readonly claimer: string;
  /** How long a window lives unrenewed (a dead claimer's window is taken over after it). */
  readonly ttlMs?: number;
}

interface PartRow {
  window_id: string;
  file_key: string;
  from_row: string | number;
  to_row: string | number;
}

export class PostgresEmbeddingWindows {
  readonly claimer: string;
  readonly ttlMs: number;

  constructor(
    private readonly db: Db,
    options: EmbeddingWindowOptions,
  ) {
    this.claimer = options.claimer;
    this.ttlMs = options.ttlMs ?? DEFAULT_LEASE_TTL_MS;
  }

  /** The first lapsed window of the dataset, now this replica's; undefined when none lapsed. */
  async takeLapsed(datasetId: string): Promise<ClaimedWindow | undefined> {
    return this.db.transaction().execute(async (trx) => {
      await lockDataset(trx, datasetId);
      const { rows } = await sql<PartRow>`
        UPDATE embedding_windows SET claimer = ${this.claimer}, expires_at = ${this.expiry()}
        WHERE window_id = (
          SELECT window_id FROM embedding_windows
          WHERE dataset_id = ${datasetId} AND expires_at <= clock_timestamp()
          ORDER BY from_row LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING window_id, file_key, from_row, to_row`.execute(trx);
      return windowOf(datasetId, rows);
    });
  }

  /** Each file's last claimed row (any claimer): a new window of the file starts after it. */
  async claimedUpTo(datasetId: string): Promise<Map<string, number>> {
    const { rows } = await sql<{ file_key: string; last: string | number }>`
      SELECT file_key, max(to_row) AS last FROM embedding_windows WHERE dataset_id = ${datasetId} GROUP BY file_key`.execute(this.db);
    return new Map(rows.map((row) => [row.file_key, Number(row.last)]));
  }

  /**
   * Claims a window planned from `claimedUpTo` and the store; undefined (nothing claimed) when another
   * claim of one of its files reaches its rows meanwhile: the caller plans again.
   */
  async claim(datasetId: string, parts: readonly WindowPart[]): Promise<ClaimedWindow | undefined> {
    if (parts.length === 0) return undefined;
    const id = crypto.randomUUID();
    return this.db.transaction().execute(async (trx) => {
      await lockDataset(trx, datasetId);
      const { rows } = await sql<{ clash: number }>`
        SELECT 1 AS clash FROM embedding_windows w
        JOIN json_to_recordset(${JSON.stringify(parts.map(({ fileKey, from }) => ({ file_key: fileKey, from_row: from })))}::text::json)
          AS p(file_key text, from_row bigint) ON w.file_key = p.file_key
        WHERE w.dataset_id = ${datasetId} AND w.to_row >= p.from_row LIMIT 1`.execute(trx);
      if (rows.length > 0) return undefined;
      const expiry = this.expiry();
      await sql`
        INSERT INTO embedding_windows (dataset_id, from_row, to_row, file_key, window_id, claimer, expires_at)
        VALUES ${sql.join(parts.map((part) => sql`(${datasetId}, ${part.from}, ${part.to}, ${part.fileKey}, ${id}, ${this.claimer}, ${expiry})`))}`.execute(
        trx,
      );
      return { id, datasetId, parts: [...parts].sort((a, b) => a.from - b.from) };
    });
  }

  /** Whether no other window holds earlier rows of the window's files: its vectors may be written now. */
  async isNext(window: ClaimedWindow): Promise<boolean> {
    const { rows } = await sql<{ waiting: number }>`
      SELECT 1 AS waiting FROM embedding_windows other
      JOIN embedding_windows mine ON mine.window_id = ${window.id}
        AND other.dataset_id = mine.dataset_id AND other.file_key = mine.file_key AND other.from_row < mine.from_row
      WHERE other.window_id <> ${window.id} LIMIT 1`.execute(this.db);
    return rows.length === 0;
  }

  /** Renews the windows this replica holds; returns the ids it still holds (the others lapsed and were taken over). */
  async renew(windowIds: readonly string[]): Promise<Set<string>> {
    if (windowIds.length === 0) return new Set();
    const { rows } = await sql<{ window_id: string }>`
      UPDATE embedding_windows SET expires_at = ${this.expiry()}
      WHERE window_id IN (${sql.join(windowIds.map((id) => sql`${id}`))}) AND claimer = ${this.claimer}
      RETURNING window_id`.execute(this.db);
    return new Set(rows.map((row) => row.window_id));
  }

  /** The window is done (its vectors written) or given up (its rows are claimed again later). */
  async finish(window: ClaimedWindow): Promise<void> {
    await sql`DELETE FROM embedding_windows WHERE window_id = ${window.id} AND claimer = ${this.claimer}`.execute(this.db);
  }

  /**
   * Records this replica's probe vector for the dataset's embedder (see `holderProbe`), and drops those of
   * replicas no longer alive (their `replica:<id>` liveness lease gone: replica ids are new at each start).
   */
  async saveProbe(datasetId: string, embedder: string, probe: Float32Array): Promise<void> {
    await sql`
      DELETE FROM embedding_probes p WHERE p.dataset_id = ${datasetId} AND p.replica <> ${this.claimer} AND NOT EXISTS (
        SELECT 1 FROM coordination_leases l WHERE l.name = 'replica:' || p.replica AND l.expires_at > clock_timestamp())`.execute(this.db);
    await sql`
      INSERT INTO embedding_probes (dataset_id, replica, embedder, probe) VALUES (${datasetId}, ${this.claimer}, ${embedder}, ${JSON.stringify([...probe])})
      ON CONFLICT (dataset_id, replica) DO UPDATE SET embedder = EXCLUDED.embedder, probe = EXCLUDED.probe, updated_at = clock_timestamp()`.execute(
      this.db,
    );
  }

  /**
   * The probe vector of the replica holding the dataset's lease (`dataset:<id>`, the one that started its
   * runtime with the dataset's embedder), with the embedder it was made by; undefined while there is none.
   */
  async holderProbe(datasetId: string): Promise<{ embedder: string; probe: Float32Array } | undefined> {
    const { rows } = await sql<{ embedder: string; probe: string }>`
      SELECT p.embedder, p.probe FROM embedding_probes p
      JOIN coordination_leases l ON l.name = ${`dataset:${datasetId}`} AND l.holder = p.replica AND l.expires_at > clock_timestamp()
      WHERE p.dataset_id = ${datasetId}`.execute(this.db);
    const row = rows[0];
    return row && { embedder: row.embedder, probe: Float32Array.from(JSON.parse(row.probe) as number[]) };
  }

  private expiry() {
    return sql`clock_timestamp() + ${this.ttlMs}::double precision * interval '1 millisecond'`;
  }
}

/** Serialises the dataset's claims until the transaction ends. */
async function lockDataset(trx: DbOrTransaction, datasetId: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`embedding-windows:${datasetId}`}, 0))`.execute(trx);
}

function windowOf(datasetId: string, rows: readonly PartRow[]): ClaimedWindow | undefined {
  const first = rows[0];
  if (!first) return undefined;
  const parts = rows
    .map((row) => ({ fileKey: row.file_key, from: Number(row.from_row), to: Number(row.to_row) }))
    .sort((a, b) => a.from - b.from);
  return { id: first.window_id, datasetId, parts };
}
