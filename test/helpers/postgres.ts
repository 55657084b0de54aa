import { accessSync, constants, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type OpenedDatabase, openDatabase } from '../../src/db/database.ts';
import { type OpenedPostgres, openPostgresDatabase } from '../../src/db/postgres/database.ts';

/**
 * A throw-away PostgreSQL cluster for one test file: Debian's server binaries (`.ci/run` installs the
 * `postgresql` package when they are missing), a data folder in memory (or the temporary directory), trust
 * authentication on 127.0.0.1 at a free port, and no durability (fsync off: a crash loses nothing a test
 * needs). `stop()` ends the server and removes the folder; a process that exits without calling it still
 * stops its servers (see `watchdog`).
 *
 * initdb refuses to run as root, and CI runs as root: the cluster then belongs to the `postgres` system
 * user that Debian's package creates, and every server command runs as that user (`runuser`).
 *
 * The first cluster of a process is made by initdb (1.5 to 3 s here, under load); the next ones copy its
 * freshly made folder (a template kept until the process exits) and start in about 0.8 s.
 */
export interface PrivatePostgres {
  /** `postgres://knode@127.0.0.1:<port>/knode` */
  readonly url: string;
  readonly port: number;
  /** The server's log so far (to explain a failure). */
  log(): string;
  stop(): Promise<void>;
}

const USER = 'knode';
const DATABASE = 'knode';

/**
 * Settings for speed, none for safety: this data is thrown away. The C locale orders text by its bytes,
 * as SQLite does (initdb's --locale=C below), so the two engines list rows in the same order.
 */
const SERVER_OPTIONS = [
  '-c fsync=off',
  '-c synchronous_commit=off',
  '-c full_page_writes=off',
  '-c shared_buffers=16MB',
  '-c max_connections=60',
  '-c listen_addresses=127.0.0.1',
  // No unix socket: its default folder (/var/run/postgresql) may not exist, and the tests connect by TCP.
  "-c unix_socket_directories=''",
];

/** The folder of the newest installed server's binaries, or a clear error naming the package to install. */
export function postgresBinaries(): string {
  const fromEnvironment = process.env.KNODE_POSTGRES_BIN;
  if (fromEnvironment) return fromEnvironment;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((version) => existsSync(join(root, version, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const newest = versions[0];
  if (newest === undefined) {
    throw new Error('PostgreSQL is not installed: apt-get install postgresql (or set KNODE_POSTGRES_BIN to the folder of initdb)');
  }
  return join(root, newest, 'bin');
}

/**
 * The folder of a PostgreSQL server with pgvector: the private copy of Debian's newest server that
 * `test/vendor/build-pgvector.sh` builds pgvector into (`.ci/run` runs it), since Debian's own server lacks
 * pgvector and stays so for the tests of that case.
 */
export function pgvectorBinaries(): string {
  const root = process.env.KNODE_PGVECTOR_ROOT ?? '/var/tmp/knode-pgvector';
  const bin = join(root, postgresBinaries().replace(/^\/+/, ''));
  if (!existsSync(join(bin, 'postgres')) || !existsSync(join(root, '.built-from'))) {
    throw new Error(`PostgreSQL with pgvector is not built: bash test/vendor/build-pgvector.sh (looked in ${bin})`);
  }
  return bin;
}

/** Owner of the clusters: the `postgres` system user when this process is root, this process otherwise. */
function runAsPrefix(): string[] {
  return process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
}

async function run(command: string[], what: string): Promise<void> {
  const child = Bun.spawn([...runAsPrefix(), ...command], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  if (code !== 0) throw new Error(`${what} failed (exit ${code}): ${stderr.trim() || stdout.trim()}`);
}

/**
 * Where clusters live: memory (/dev/shm) when there is one, since a cluster is 40 MB written at once and
 * the disk is shared with every other test (measured under load: copying the template took 3.3 s on disk,
 * 0.3 s in memory; a whole start about 0.8 s in memory).
 */
function clustersRoot(): string {
  const chosen = process.env.KNODE_POSTGRES_TMP;
  if (chosen) return chosen;
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}

/** A new temporary folder the cluster's owner can write. */
async function ownedFolder(prefix: string): Promise<string> {
  const folder = mkdtempSync(join(clustersRoot(), prefix));
  if (process.getuid?.() === 0) await runPlain(['chown', 'postgres:', folder], 'chown');
  return folder;
}

async function runPlain(command: string[], what: string): Promise<void> {
  const child = Bun.spawn(command, { stdin: 'ignore', stdout: 'ignore', stderr: 'pipe' });
  const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
  if (code !== 0) throw new Error(`${what} failed (exit ${code}): ${stderr.trim()}`);
}

const templates = new Map<string, Promise<string>>();

/** A data folder made by initdb once per process and server; each cluster starts from a copy of it. */
function templateData(bin: string): Promise<string> {
  let template = templates.get(bin);
  template ??= (async () => {
    const folder = await ownedFolder('knode-pg-template-');
    watchdog(['rm', '-rf', folder]);
    const data = join(folder, 'data');
    await run(
      [join(bin, 'initdb'), '-D', data, '-A', 'trust', '-U', USER, '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'],
      'initdb',
    );
    return data;
  })();
  templates.set(bin, template);
  return template;
}

/**
 * Runs `cleanup` (as the clusters' owner) once this process closes the returned pipe, or dies: bun test
 * runs no exit handler, and a test file that crashed or timed out must not leave a server or its folder behind.
 *
 * bun test sends SIGTERM to the processes a file spawned when one of its hooks times out: a shell that
 * took it died before its cleanup (a timed-out file left its cluster running), and runuser, were it the
 * waiting process, would pass the signal on and kill its shell 2 s later. So the waiting shell is this
 * process's own child and ignores those signals (as its `cat` does, inheriting that), and only the
 * cleanup runs as the clusters' owner.
 */
function watchdog(cleanup: string[]): { end(): Promise<void> } {
  const quoted = [...runAsPrefix(), ...cleanup].map((word) => `'${word.replaceAll("'", `'\\''`)}'`).join(' ');
  const child = Bun.spawn(['sh', '-c', `trap '' TERM INT HUP; cat >/dev/null; ${quoted} >/dev/null 2>&1`], {
    stdin: 'pipe',
    stdout: 'ignore',
    stderr: 'ignore',
  });
  child.unref(); // it waits for this process, never the other way round
  return {
    async end() {
      await child.stdin.end();
      await child.exited;
    },
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts a private cluster with one database, `knode`, owned by the superuser `knode`: Debian's server
 * (without pgvector), or with `{ pgvector: true }` the copy of it that has pgvector. `settings` are more
 * server settings (`name=value`, e.g. `shared_buffers=1GB` for a bench: the tests' 16 MB is no operator's),
 * given after SERVER_OPTIONS so that they win.
 */
export async function startPostgres(options: { pgvector?: boolean; settings?: readonly string[] } = {}): Promise<PrivatePostgres> {
  const bin = options.pgvector ? pgvectorBinaries() : postgresBinaries();
  const source = await templateData(bin);
  const folder = await ownedFolder('knode-pg-');
  const data = join(folder, 'data');
  const logFile = join(folder, 'server.log');
  // Stops the server (if it started) and removes its folder: at stop(), or when this process dies.
  const teardown = watchdog(['sh', '-c', `'${join(bin, 'pg_ctl')}' -D '${data}' -m immediate -w stop; rm -rf '${folder}'`]);
  try {
    await run(['cp', '-a', source, data], 'copying the template cluster');
    const port = await startServer(bin, data, logFile, options.settings ?? []);
    const base = `postgres://${USER}@127.0.0.1:${port}`;
    await createDatabase(`${base}/postgres`);
    return {
      url: `${base}/${DATABASE}`,
      port,
      log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
      stop: teardown.end,
    };
  } catch (error) {
    await teardown.end();
    throw error;
  }
}

/** Starts the server on a free port; one taken between the probe and the bind (others test here too) is tried again. */
async function startServer(bin: string, data: string, logFile: string, settings: readonly string[]): Promise<number> {
  let lastError: unknown;
  for (let attempt = 1; attempt <= 3; attempt++) {
    const port = await freePort();
    try {
      const options = [...SERVER_OPTIONS, ...settings.map((setting) => `-c ${setting}`), `-p ${port}`].join(' ');
      await run([join(bin, 'pg_ctl'), '-D', data, '-l', logFile, '-w', '-t', '30', '-o', options, 'start'], 'pg_ctl start');
      return port;
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

async function createDatabase(maintenanceUrl: string): Promise<void> {
  const sql = new Bun.SQL(maintenanceUrl, { max: 1 });
  try {
    await sql.unsafe(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await sql.close();
  }
}

/**
 * The same schema on both engines, for a test that feeds them the same rows and compares what they answer: a
 * private PostgreSQL opened once (`pg`) and a SQLite database in a new temporary folder (`sqlite`).
 */
export interface PostgresAndSqlite {
  postgres: PrivatePostgres;
  pg: OpenedPostgres;
  sqlite: OpenedDatabase;
  /** Closes both databases, stops the cluster and removes the SQLite folder. */
  close(): Promise<void>;
}

/** Opens a `PostgresAndSqlite`; `folderPrefix` names the SQLite folder (e.g. `knode-feeds-`). */
export async function openPostgresAndSqlite(folderPrefix: string): Promise<PostgresAndSqlite> {
  const postgres = await startPostgres();
  const pg = await openPostgresDatabase(postgres.url);
  const sqliteDir = mkdtempSync(join(tmpdir(), folderPrefix));
  const sqlite = await openDatabase(sqliteDir);
  return {
    postgres,
    pg,
    sqlite,
    async close() {
      await pg.close();
      await sqlite.close();
      await postgres.stop();
      rmSync(sqliteDir, { recursive: true, force: true });
    },
  };
}

/** One private PostgreSQL and two pools on it, as two replicas of a cluster would have. */
export interface TwoReplicas {
  postgres: PrivatePostgres;
  replicaA: OpenedPostgres;
  replicaB: OpenedPostgres;
  /** Closes both pools and stops the cluster. */
  close(): Promise<void>;
}

export async function startTwoReplicas(): Promise<TwoReplicas> {
  const postgres = await startPostgres();
  const replicaA = await openPostgresDatabase(postgres.url);
  const replicaB = await openPostgresDatabase(postgres.url);
  return {
    postgres,
    replicaA,
    replicaB,
    async close() {
      await replicaA.close();
      await replicaB.close();
      await postgres.stop();
    },
  };
}
