import type { Config } from './config.ts';
import { isDevelopmentMode } from './http/development-mode.ts';
import { VERSION } from './version.ts';

/** What a person needs once knode listens: where to go, where the data is, how it is guarded, what next. */
export interface StartupFacts {
  /** The address fastify listens on (`http://127.0.0.1:8080`). */
  url: string;
  ingestionRoots: readonly string[];
  /** Whether anyone has registered yet (the console's first run creates the owner's account). */
  hasUsers: boolean;
}

/** The address a browser on this machine opens: a wildcard bind is reached at localhost. */
export function consoleUrl(listening: string): string {
  const url = new URL(listening);
  if (['0.0.0.0', '[::]', '::'].includes(url.hostname)) url.hostname = 'localhost';
  return `${url.origin}/`;
}

/** The human start-up block, for a terminal. */
export function startupBanner(config: Config, facts: StartupFacts): string {
  const console = consoleUrl(facts.url);
  const mode = isDevelopmentMode(config)
    ? 'development (no SVC_ADMIN_API_KEY): requests made on this machine need no credentials'
    : 'production: the operator settings need SVC_ADMIN_API_KEY';
  const next = facts.hasUsers ? `open ${console} and sign in` : `open ${console} and create your account (the first one owns this knode)`;
  const rows: [string, string][] = [
    ['Console', console],
    ['API', `${console}api/v1 (documented at ${console}docs)`],
    ['Data folder', config.dataDir],
    ['Mode', mode],
    ['Folders', `${facts.ingestionRoots.join(', ') || '(none)'} (SVC_INGESTION_ROOTS)`],
    ['Next', next],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return [`knode ${VERSION} is ready`, ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`)].join('\n');
}

/**
 * A start-up failure a person can act on, in one line, or undefined for anything else (a bug, shown
 * whole). A taken port and a data folder knode cannot write are the usual ones.
 */
export function startupFailure(error: unknown, config: Config): string | undefined {
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
  const listening = typeof error === 'object' && error !== null && 'syscall' in error && error.syscall === 'listen';
  if (listening && code === 'EACCES') return `port ${config.port} needs privileges this user lacks: choose one above 1023 with SVC_PORT`;
  if (code === 'EADDRINUSE') {
    return `port ${config.port} on ${config.host} is already in use (another knode, or another program): stop it, or choose another port with SVC_PORT`;
  }
  if (code === 'EADDRNOTAVAIL') return `${config.host} is not an address of this machine: set SVC_HOST to one that is`;
  // Cluster mode's database (db/postgres/database.ts, PostgresStartError): its message is the line, password left out.
  if (code === 'KNODE_POSTGRES_START') return (error as Error).message;
  // A database or data folder a newer knode migrated (db/migrate.ts, NewerSchemaError).
  if (code === 'KNODE_NEWER_SCHEMA') return (error as Error).message;
  if (['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'SQLITE_CANTOPEN', 'SQLITE_READONLY'].includes(code)) {
    return `cannot write the data folder ${config.dataDir} (${code}): choose one you can write with SVC_DATA_DIR`;
  }
  return undefined;
}
