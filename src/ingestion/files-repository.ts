import { type SqlBool, sql } from 'kysely';
import type { Db, DbOrTransaction } from '../db/database.ts';
import { isPostgres } from '../db/database.ts';
import type { DatasetFileTable } from '../db/schema.ts';
import { type Clock, isoNow, systemClock } from '../util/clock.ts';
import type { FencingLease } from '../vectors/store.ts';
import type { FileFacts } from './folder.ts';

export type FileRow = Omit<DatasetFileTable, 'generation' | 'chunks_embedded'> & { generation: number; chunks_embedded: number };

/** A queued file claimed for indexing, with what is needed to tell later whether it changed meanwhile. */
export interface ClaimedFile {
  datasetId: string;
  path: string;
  generation: number;
  contentHash: string | null;
}

/** A file whose chunks are keyword-searchable and wait for their vectors (status `searchable`). */
export interface SearchableFile {
  readonly path: string;
  readonly generation: number;
}

/**
 * The per-file state of every dataset, which is also the durable job queue: a `queued` row is work to
 * do (parsing, then the keyword index), a `searchable` row waits for its vectors; both survive a crash
 * or restart. Every change seen on disk bumps the row's generation.
 *
 * The writes a dataset's runtime makes because it holds the dataset's lease take that `lease`: each is then
 * fenced first in its transaction (vectors/store.ts, FencingLease), and refused, changing nothing, once the
 * lease is lost. Without one (the API's own writes, tests) they run as they are. Each row's `updated_at` is
 * the `clock`'s. One job, the file queue's every read and write, hence a little over 400 lines.
 */
export class FileRepository {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock = systemClock,
  ) {}

  /** `work` in a transaction fenced with `lease`, or on the database as it is without one. */
  private fenced<T>(lease: FencingLease | undefined, work: (db: DbOrTransaction) => Promise<T>): Promise<T> {
    if (!lease) return work(this.db);
    return this.db.transaction().execute(async (trx) => {
      await lease.fence(trx);
      return work(trx);
    });
  }

  /**
   * Records a file seen on disk. It is queued when new, changed (size or time), unfinished, or removed
   * before; a file already indexed or failed with the same facts is left alone (nothing to redo).
   */
  async seen(datasetId: string, file: FileFacts, lease?: FencingLease): Promise<boolean> {
    return this.fenced(lease, (db) => recordSeen(db, datasetId, file, isoNow(this.clock)));
  }

  /** `seen` for several files in one transaction: a folder's scan commits once per batch, not once per file. */
  async seenAll(datasetId: string, files: readonly FileFacts[], lease?: FencingLease): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await lease?.fence(trx);
      const updatedAt = isoNow(this.clock);
      for (const file of files) await recordSeen(trx, datasetId, file, updatedAt);
    });
  }

  /** Every file of the dataset is indexed again from scratch (its hash forgotten). */
  async requeueAll(datasetId: string, lease?: FencingLease): Promise<void> {
    await this.fenced(lease, (db) =>
      db
        .updateTable('dataset_files')
        .set({ status: 'queued', content_hash: null, error: null, generation: sql`generation + 1`, updated_at: isoNow(this.clock) })
        .where('dataset_id', '=', datasetId)
        .where('status', '!=', 'removed')
        .execute(),
    );
  }

  /** Work interrupted by a crash or a stop (or by the loss of the dataset's lease elsewhere) is simply queued again. */
  async requeueInterrupted(datasetId: string, lease?: FencingLease): Promise<void> {
    await this.fenced(lease, (db) =>
      db
        .updateTable('dataset_files')
        .set({ status: 'queued', updated_at: isoNow(this.clock) })
        .where('dataset_id', '=', datasetId)
        .where('status', '=', 'indexing')
        .execute(),
    );
  }

  /** Paths the index knows as present (anything not removed). */
  async livePaths(datasetId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('dataset_files')
      .select('path')
      .where('dataset_id', '=', datasetId)
      .where('status', '!=', 'removed')
      .execute();
    return rows.map((row) => row.path);
  }

  /** Paths at or under a folder, for a folder removed as a whole. */
  async livePathsUnder(datasetId: string, folder: string): Promise<string[]> {
    const prefix = `${folder}/`;
    const rows = await this.db
      .selectFrom('dataset_files')
      .select('path')
      .where('dataset_id', '=', datasetId)
      .where('status', '!=', 'removed')
      .where((eb) => eb.or([eb('path', '=', folder), eb(sql`substr(path, 1, ${prefix.length})`, '=', prefix)]))
      .execute();
    return rows.map((row) => row.path);
  }

  /**
   * Takes up to `limit` queued files of one dataset among `datasetIds` (the oldest queued first) and
   * marks them indexing. One dataset per batch: its files share one embedder.
   *
   * On PostgreSQL, replicas claim from one queue at once: the rows read are locked until the transaction
   * marks them (FOR UPDATE), and rows another claim holds are passed over (SKIP LOCKED), so no file is
   * taken twice and a second claim takes the next files instead of waiting. Read-then-update was safe on
   * SQLite only because its one connection runs one claim at a time (measured on PostgreSQL without the
   * locks: 20 claims of 3 files took the same files up to 60 times).
   *
   * Fenced with the dataset's `lease`: a former holder claims nothing once its successor started, whose
   * start queued again whatever was claimed before it (requeueInterrupted); a claim made after that would
   * stay `indexing` with nobody to finish or release it.
   */
  async claim(datasetIds: readonly string[], limit: number, lease?: FencingLease): Promise<ClaimedFile[]> {
    if (datasetIds.length === 0) return [];
    return this.db.transaction().execute(async (trx) => {
      await lease?.fence(trx);
      const shared = isPostgres(trx);
      // In the claim's own order (updated_at, then path): the row locked here to find a dataset must be the
      // first of the rows claimed below, or it stays locked and unclaimed until this transaction ends, and
      // concurrent claims pass over it (a batch of files seen at once shares one updated_at).
      const first = await trx
        .selectFrom('dataset_files')
        .select('dataset_id')
        .where('dataset_id', 'in', datasetIds)
        .where('status', '=', 'queued')
        .orderBy('updated_at')
        .orderBy('path')
        .limit(1)
        .$if(shared, (query) => query.forUpdate().skipLocked())
        .executeTakeFirst();
      if (!first) return [];
      const rows = await trx
        .selectFrom('dataset_files')
        .select(['dataset_id', 'path', 'generation', 'content_hash'])
        .where('dataset_id', '=', first.dataset_id)
        .where('status', '=', 'queued')
        .orderBy('updated_at')
        .orderBy('path')
        .limit(limit)
        .$if(shared, (query) => query.forUpdate().skipLocked())
        .execute();
      if (rows.length === 0) return [];
      await trx
        .updateTable('dataset_files')
        .set({ status: 'indexing', updated_at: isoNow(this.clock) })
        .where('dataset_id', '=', first.dataset_id)
        .where('status', '=', 'queued')
        .where(
          'path',
          'in',
          rows.map((row) => row.path),
        )
        .execute();
      return rows.map((row) => ({ datasetId: row.dataset_id, path: row.path, generation: row.generation, contentHash: row.content_hash }));
    });
  }

  /** Files of every dataset by status (the metrics' ingestion gauges). */
  async countByStatus(): Promise<{ status: string; count: number }[]> {
    const rows = await this.db
      .selectFrom('dataset_files')
      .select(['status', (eb) => eb.fn.countAll<number>().as('count')])
      .groupBy('status')
      .execute();
    return rows.map((row) => ({ status: row.status, count: Number(row.count) }));
  }

  async generationOf(datasetId: string, path: string): Promise<number | undefined> {
    const row = await this.db
      .selectFrom('dataset_files')
      .select('generation')
      .where('dataset_id', '=', datasetId)
      .where('path', '=', path)
      .executeTakeFirst();
    return row?.generation;
  }

  /**
   * The file's chunks are keyword-searchable now (`indexed` at once when it has none), unless it changed
   * while they were made (then it stays queued).
   */
  async searchable(file: ClaimedFile, contentHash: string, chunks: number, lease?: FencingLease): Promise<boolean> {
    const result = await this.fenced(lease, (db) =>
      db
        .updateTable('dataset_files')
        .set({
          status: chunks > 0 ? 'searchable' : 'indexed',
          content_hash: contentHash,
          chunks,
          chunks_embedded: 0,
          error: null,
          updated_at: isoNow(this.clock),
        })
        .where('dataset_id', '=', file.datasetId)
        .where('path', '=', file.path)
        .where('generation', '=', file.generation)
        .executeTakeFirst(),
    );
    return Number(result.numUpdatedRows) > 0;
  }

  /**
   * How many of each file's chunks have their vector (`indexed` once all do), in one statement, except
   * for files that moved on (changed, removed, failed) since they became searchable.
   */
  async embedded(datasetId: string, progress: readonly { file: SearchableFile; embedded: number }[]): Promise<void> {
    if (progress.length === 0) return;
    const embedded = sql<number>`CASE path ${sql.join(
      progress.map(({ file, embedded }) => sql`WHEN ${file.path} THEN ${embedded}`),
      sql` `,
    )} ELSE chunks_embedded END`;
    // Typed, because PostgreSQL gives a VALUES list of bare parameters the type text (and integer = text fails).
    const files = sql.join(progress.map(({ file }) => sql`(${file.path}, CAST(${file.generation} AS INTEGER))`));
    await this.db
      .updateTable('dataset_files')
      .set({
        chunks_embedded: embedded,
        status: sql`CASE WHEN ${embedded} >= chunks THEN 'indexed' ELSE 'searchable' END`,
        updated_at: isoNow(this.clock),
      })
      .where('dataset_id', '=', datasetId)
      .where('status', '=', 'searchable')
      .where(sql<SqlBool>`(path, generation) IN (VALUES ${files})`)
      .execute();
  }

  /** Files waiting for their vectors (at a dataset's start, to resume embedding them). */
  async searchableFiles(datasetId: string): Promise<SearchableFile[]> {
    return this.db
      .selectFrom('dataset_files')
      .select(['path', 'generation'])
      .where('dataset_id', '=', datasetId)
      .where('status', '=', 'searchable')
      .orderBy('updated_at')
      .orderBy('path')
      .execute();
  }

  /** Those of `files` still searchable in the same generation (their vectors are still wanted). */
  async stillSearchable<F extends SearchableFile>(datasetId: string, files: readonly F[]): Promise<F[]> {
    if (files.length === 0) return [];
    const rows = await this.db
      .selectFrom('dataset_files')
      .select(['path', 'generation'])
      .where('dataset_id', '=', datasetId)
      .where('status', '=', 'searchable')
      .where(
        'path',
        'in',
        files.map((file) => file.path),
      )
      .execute();
    const current = new Map(rows.map((row) => [row.path, row.generation]));
    return files.filter((file) => current.get(file.path) === file.generation);
  }

  /**
   * Its content is what was indexed already (only its time changed): the chunks stand as they are, and
   * the file is `searchable` again when some still wait for their vectors. Returns that status, or
   * undefined when the file changed meanwhile.
   */
  async unchanged(file: ClaimedFile, lease?: FencingLease): Promise<'searchable' | 'indexed' | undefined> {
    const row = await this.fenced(lease, (db) =>
      db
        .updateTable('dataset_files')
        .set({
          status: sql`CASE WHEN chunks_embedded < chunks THEN 'searchable' ELSE 'indexed' END`,
          error: null,
          updated_at: isoNow(this.clock),
        })
        .where('dataset_id', '=', file.datasetId)
        .where('path', '=', file.path)
        .where('generation', '=', file.generation)
        .returning('status')
        .executeTakeFirst(),
    );
    return row?.status === 'searchable' || row?.status === 'indexed' ? row.status : undefined;
  }

  /** The file is gone from the folder: its row stays as `removed` so the files route can say so. */
  async removed(datasetId: string, path: string, lease?: FencingLease): Promise<void> {
    await this.fenced(lease, (db) =>
      db
        .updateTable('dataset_files')
        .set({
          status: 'removed',
          chunks: 0,
          chunks_embedded: 0,
          error: null,
          content_hash: null,
          generation: sql`generation + 1`,
          updated_at: isoNow(this.clock),
        })
        .where('dataset_id', '=', datasetId)
        .where('path', '=', path)
        .execute(),
    );
  }

  /** Records a failure, unless the file changed meanwhile (then its new generation is queued already). */
  async failed(file: Pick<ClaimedFile, 'datasetId' | 'path' | 'generation'>, error: string, lease?: FencingLease): Promise<void> {
    await this.fenced(lease, (db) =>
      db
        .updateTable('dataset_files')
        .set({ status: 'failed', error, chunks: 0, chunks_embedded: 0, content_hash: null, updated_at: isoNow(this.clock) })
        .where('dataset_id', '=', file.datasetId)
        .where('path', '=', file.path)
        .where('generation', '=', file.generation)
        .execute(),
    );
  }

  /**
   * Puts a claimed file back in the queue (the work was interrupted, not wrong). Fenced with the lease it
   * was claimed under: once another replica holds the dataset, the file may be its own claim by now.
   */
  async release(file: ClaimedFile, lease?: FencingLease): Promise<void> {
    await this.fenced(lease, (db) =>
      db
        .updateTable('dataset_files')
        .set({ status: 'queued', updated_at: isoNow(this.clock) })
        .where('dataset_id', '=', file.datasetId)
        .where('path', '=', file.path)
        .where('status', '=', 'indexing')
        .execute(),
    );
  }

  async list(datasetId: string, skip: number, limit: number): Promise<FileRow[]> {
    return this.db
      .selectFrom('dataset_files')
      .select([
        'dataset_id',
        'path',
        'content_hash',
        'size',
        'mtime_ms',
        'status',
        'chunks',
        'chunks_embedded',
        'error',
        'generation',
        'updated_at',
      ])
      .where('dataset_id', '=', datasetId)
      .orderBy('path')
      .offset(skip)
      .limit(limit)
      .execute();
  }

  async count(datasetId: string): Promise<number> {
    const row = await this.db
      .selectFrom('dataset_files')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('dataset_id', '=', datasetId)
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }
}

/** FileRepository.seen, in a transaction or not, stamped `updatedAt`. */
async function recordSeen(db: DbOrTransaction, datasetId: string, file: FileFacts, updatedAt: string): Promise<boolean> {
  const result = await db
    .insertInto('dataset_files')
    .values({
      dataset_id: datasetId,
      path: file.path,
      size: file.size,
      mtime_ms: file.mtimeMs,
      status: 'queued',
      chunks: 0,
      generation: 1,
      updated_at: updatedAt,
    })
    .onConflict((oc) =>
      oc
        .columns(['dataset_id', 'path'])
        .doUpdateSet({
          size: file.size,
          mtime_ms: file.mtimeMs,
          status: 'queued',
          error: null,
          generation: sql`dataset_files.generation + 1`,
          updated_at: updatedAt,
        })
        .where((eb) =>
          eb.or([
            eb('dataset_files.status', 'in', ['removed', 'queued', 'indexing']),
            eb('dataset_files.size', '!=', file.size),
            eb('dataset_files.mtime_ms', '!=', file.mtimeMs),
          ]),
        ),
    )
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}
