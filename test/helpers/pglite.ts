import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { Kysely, Migrator, PostgresDialect, type PostgresPool, type PostgresPoolClient, type PostgresQueryResult } from 'kysely';
import type { Db } from '../../src/db/database.ts';
import { postgresMigrations } from '../../src/db/postgres/migrations/index.ts';
import type { Database } from '../../src/db/schema.ts';

/**
 * PostgreSQL in-process for tests: PGlite (PostgreSQL compiled to WebAssembly) with its pgvector package,
 * so the pgvector SQL of cluster mode runs without a server that has pgvector (Debian 12's has none: see
 * docs/STACK.md). PGlite is one session; Kysely's PostgresDialect asks for a connection per statement and
 * per transaction, so this adapter hands out the one session to one caller at a time (a second waits
 * for the first's release), which keeps a transaction's statements together as a server would. Concurrency
 * itself is tested on a real server (test/helpers/postgres.ts).
 *
 * A tiny adapter rather than the kysely-pglite package: the pool subset Kysely uses is four methods.
 */
export interface InProcessPostgres {
  readonly db: Db;
  readonly pglite: PGlite;
  close(): Promise<void>;
}

/** A fresh in-memory database with pgvector loaded (not created: the store does that) and the control tables migrated. */
export async function startPglite(options: { withVector?: boolean } = {}): Promise<InProcessPostgres> {
  const pglite = await PGlite.create(options.withVector === false ? {} : { extensions: { vector } });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new PgliteSessionPool(pglite) }) });
  const migrator = new Migrator({ db, provider: { getMigrations: async () => postgresMigrations } });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
  return {
    db,
    pglite,
    async close() {
      await db.destroy();
    },
  };
}

class PgliteSessionPool implements PostgresPool {
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly pglite: PGlite) {}

  async connect(): Promise<PostgresPoolClient> {
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const previous = this.queue;
    this.queue = previous.then(() => released);
    await previous;
    return new PgliteClient(this.pglite, release) as unknown as PostgresPoolClient;
  }

  async end(): Promise<void> {
    await this.queue;
    await this.pglite.close();
  }
}

class PgliteClient {
  private released = false;

  constructor(
    private readonly pglite: PGlite,
    private readonly onRelease: () => void,
  ) {}

  async query<R>(text: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> {
    const result = await this.pglite.query<R>(text, parameters as unknown[]);
    const command = text.trimStart().split(/\s/, 1)[0]?.toUpperCase() as PostgresQueryResult<R>['command'];
    return { command, rowCount: result.affectedRows ?? result.rows.length, rows: result.rows };
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.onRelease();
  }
}
