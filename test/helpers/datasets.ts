/**
 * A `local_file` dataset seen through the API, for the ingestion tests: create it on a folder, read its
 * view and its files, wait until it is settled, search it, and read its chunks straight from the store.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import type { IngestionCounts } from '../../src/datasets/repository.ts';
import { isPostgres } from '../../src/db/database.ts';
import { scanFolder } from '../../src/ingestion/folder.ts';
import { postgresTables } from '../../src/vectors/postgres/dataset-tables.ts';
import type { TestApp, TestUser } from './app.ts';
import { testEngine } from './test-engine.ts';
import { waitFor } from './wait.ts';

/** The default `fileTypes` of a dataset. */
const FILE_TYPES = new Set(['pdf', 'txt', 'md', 'docx', 'html', 'htm']);
/** Statuses of a file with work left: parsing and the keyword index, or its vectors (`searchable`). */
const PENDING = ['queued', 'indexing', 'searchable'];
/**
 * How long a dataset may take to settle. PostgreSQL writes vectors several times slower than sqlite-vec: a
 * 20 MB file's 11,651 chunks took 18 s alone there, and over 30 s in `npm run test:postgres` on a loaded machine.
 */
const SETTLE_MS = testEngine === 'postgres' ? 90_000 : 30_000;

export interface FileState {
  path: string;
  status: string;
  chunks: number;
  chunks_embedded: number;
  error: string | null;
  updated_at: string;
}

export interface DatasetView {
  status: string;
  error?: string | null;
  ingestion: IngestionCounts;
}

export interface SearchHit {
  content: string;
  similarity_score: number;
  metadata: Record<string, unknown>;
}

let written = 0;

function newFolder(t: TestApp): string {
  const folder = join(t.dataDir, 'folders', crypto.randomUUID());
  mkdirSync(folder, { recursive: true });
  return folder;
}

export class Dataset {
  constructor(
    private readonly t: TestApp,
    private readonly user: TestUser,
    readonly id: string,
    readonly folder: string,
  ) {}

  /**
   * Creates a dataset on `folder` (a new empty one in the data directory unless given), with a raw
   * endpoint (`<first 8 of its id>-raw`) that `search` queries.
   */
  static async create(t: TestApp, user: TestUser, folder = newFolder(t), configuration: Record<string, unknown> = {}): Promise<Dataset> {
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/datasets/',
      token: user.token,
      payload: {
        name: `ds-${crypto.randomUUID().slice(0, 8)}`,
        dtype: 'local_file',
        configuration: { ingestionPath: folder, ...configuration },
      },
    });
    if (response.statusCode !== 201) throw new Error(`dataset: ${response.statusCode} ${response.body}`);
    const id = response.json().id as string;
    const endpoint = await t.request({
      method: 'POST',
      url: '/api/v1/endpoints/',
      token: user.token,
      payload: { name: 'raw', slug: `${id.slice(0, 8)}-raw`, dataset_id: id, response_type: 'raw' },
    });
    if (endpoint.statusCode !== 201) throw new Error(`endpoint: ${endpoint.statusCode} ${endpoint.body}`);
    return new Dataset(t, user, id, folder);
  }

  async view(): Promise<DatasetView> {
    return (await this.t.request({ method: 'GET', url: `/api/v1/datasets/${this.id}`, token: this.user.token })).json();
  }

  /** Waits until the dataset's view satisfies `ready`, and returns it. */
  async until(what: string, ready: (view: DatasetView) => boolean): Promise<DatasetView> {
    return waitFor(`dataset ${this.id}: ${what}`, async () => {
      const view = await this.view();
      return ready(view) ? view : undefined;
    });
  }

  async files(): Promise<FileState[]> {
    return (await this.t.request({ method: 'GET', url: `/api/v1/datasets/${this.id}/files`, token: this.user.token })).json();
  }

  async file(path: string): Promise<FileState | undefined> {
    return (await this.files()).find((file) => file.path === path);
  }

  /** Waits until `path` has left the queue, vectors included (indexed, failed or removed), and returns its state. */
  async settledFile(path: string, timeoutMs = 30_000): Promise<FileState> {
    return waitFor(
      `${path} to be indexed or failed`,
      async () => {
        const file = await this.file(path);
        return file && !PENDING.includes(file.status) ? file : undefined;
      },
      timeoutMs,
    );
  }

  /**
   * Waits until nothing is pending and the index equals the folder: every indexable file on disk is
   * indexed or failed, nothing else is, and the store holds chunks of exactly the indexed files.
   */
  async settled(): Promise<FileState[]> {
    return waitFor(
      `dataset ${this.id} to equal its folder`,
      async () => {
        const files = await this.files();
        if (files.some((file) => PENDING.includes(file.status))) return undefined;
        const onDisk = (await scanFolder(this.folder, FILE_TYPES)).map((file) => file.path).sort();
        const live = files.filter((file) => file.status !== 'removed');
        if (JSON.stringify(live.map((file) => file.path).sort()) !== JSON.stringify(onDisk)) return undefined;
        const indexed = live
          .filter((file) => file.status === 'indexed')
          .map((file) => file.path)
          .sort();
        if (JSON.stringify(await this.indexedSources()) !== JSON.stringify(indexed)) return undefined;
        return files;
      },
      SETTLE_MS,
    );
  }

  /** Waits until the dataset is settled, and fails naming the reason when a file on disk was not indexed. */
  async indexed(): Promise<FileState[]> {
    const files = await this.settled();
    const notIndexed = files.filter((file) => file.status !== 'indexed' && file.status !== 'removed');
    if (notIndexed.length > 0) throw new Error(`not indexed: ${JSON.stringify(notIndexed)}`);
    return files;
  }

  /**
   * For a running dataset: writes a new file into its folder and waits until it is indexed. By then any
   * watcher has had far longer than it needs to see a file written before, so what another dataset has
   * not picked up by then, it is not going to. Tests that check that nothing happens wait on this
   * instead of sleeping for a guess of how long a watcher takes.
   */
  async caughtUp(): Promise<void> {
    const name = `caught-up-${++written}.txt`;
    writeFileSync(join(this.folder, name), `A file written to see the watcher catch up, number ${written}.`);
    const file = await this.settledFile(name);
    if (file.status !== 'indexed') throw new Error(`${name} was not indexed: ${file.status} ${file.error}`);
  }

  /** POST /stop, /start or /reindex. */
  async action(name: 'stop' | 'start' | 'reindex'): Promise<LightMyRequestResponse> {
    return this.t.request({ method: 'POST', url: `/api/v1/datasets/${this.id}/${name}`, token: this.user.token });
  }

  /** Queries the dataset's raw endpoint (every chunk counts: no similarity threshold). */
  async search(text: string, extra: Record<string, unknown> = {}): Promise<SearchHit[]> {
    const response = await this.t.request({
      method: 'POST',
      url: `/api/v1/endpoints/${this.id.slice(0, 8)}-raw/query`,
      token: this.user.token,
      payload: { messages: text, similarity_threshold: 0, limit: 20, ...extra },
    });
    if (response.statusCode !== 200) throw new Error(`search: ${response.statusCode} ${response.body}`);
    return response.json().references.documents;
  }

  /** Paths whose chunks are in the vector store, straight from the database (none once its index is dropped). */
  async indexedSources(): Promise<string[]> {
    if (!(await this.hasIndex())) return [];
    const rows = await this.chunkRows()
      .select('file_key' as never)
      .distinct()
      .execute();
    return (rows as { file_key: string }[]).map((row) => row.file_key).sort();
  }

  /** Every chunk of the dataset in the store, whatever the embedder: what a search could ever return. */
  async storedText(): Promise<string> {
    const rows = await this.chunkRows()
      .select('content' as never)
      .execute();
    return (rows as { content: string }[]).map((row) => row.content).join('\n');
  }

  /** How many vectors the store holds for the dataset, of every state (its vec0 table's rows, or pgvector's). */
  async storedVectors(): Promise<number> {
    const { database } = this.t.services;
    const hex = this.id.replaceAll('-', '');
    if (!isPostgres(database.db)) {
      return database.exclusive((sqlite) => (sqlite.query(`SELECT count(*) AS n FROM vec_${hex}`).get() as { n: number }).n);
    }
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(postgresTables(this.id).embeddings)}`.execute(
      database.db,
    );
    return rows[0]?.n ?? 0;
  }

  /** The names of the database's tables and indexes that belong to the dataset (named by its id). */
  async storedTables(): Promise<string[]> {
    const { database } = this.t.services;
    const pattern = `%${this.id.replaceAll('-', '')}%`;
    if (!isPostgres(database.db)) {
      return database.exclusive((sqlite) =>
        (sqlite.query('SELECT name FROM sqlite_master WHERE name LIKE ?').all(pattern) as { name: string }[]).map((row) => row.name),
      );
    }
    const { rows } = await sql<{ name: string }>`SELECT relname AS name FROM pg_class WHERE relname LIKE ${pattern}`.execute(database.db);
    return rows.map((row) => row.name);
  }

  /** Whether the dataset's index is there: on PostgreSQL its chunks' table goes when the index is dropped. */
  private async hasIndex(): Promise<boolean> {
    const { db } = this.t.services.database;
    if (!isPostgres(db)) return true;
    const { rows } = await sql<{ present: boolean }>`SELECT to_regclass(${postgresTables(this.id).chunks}) IS NOT NULL AS present`.execute(
      db,
    );
    return rows[0]?.present === true;
  }

  /**
   * The dataset's chunk rows, of every state: SQLite's store keeps them in `vector_chunks` with the dataset's
   * id, PostgreSQL's in a table of the dataset's own (vectors/postgres/dataset-tables.ts), with the same columns.
   */
  private chunkRows() {
    const { db } = this.t.services.database;
    if (isPostgres(db)) return db.selectFrom(postgresTables(this.id).chunks as never);
    return db.selectFrom('vector_chunks' as never).where('dataset_id' as never, '=', this.id as never);
  }
}
