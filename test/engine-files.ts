import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Which test files `npm run test:postgres` (scripts/test.ts --engine=postgres) runs on PostgreSQL: the route
 * tests, i.e. the files that build apps through `createTestApp` (test/helpers/app.ts, which puts an app's
 * state in PostgreSQL under KNODE_TEST_ENGINE=postgres), but for those below. Every other file runs once,
 * in `npm test`: the pure units have no engine, and the repositories are compared on both engines by
 * postgres-repositories.test.ts, one of the cluster-mode files (isClusterModeFile) `npm run test:postgres`
 * runs as they are, beside the route files.
 */

/** Route test files that are about SQLite itself, each with why: they run on SQLite only. */
const SQLITE_ONLY: Readonly<Record<string, string>> = {
  'test/analytics-scale.test.ts':
    'seeds 70,000 rows through raw bun:sqlite statements, and its time bounds are SQLite figures (postgres-analytics.test.ts compares the answers)',
};

/**
 * Route files whose subject is the parse threads and a file's limits (parser-pool.ts, ingestion/limits.ts),
 * which work before and apart from the state: they pass on PostgreSQL (checked when this list was made) but
 * add about 18 s to a run that should stay near two minutes on two cores.
 */
const LEFT_OUT_FOR_TIME: Readonly<Record<string, string>> = {
  'test/security/ingestion-limits.test.ts': 'file sizes and inflated sizes, refused by the parse thread',
  'test/security/ingestion-memory-budget.test.ts': "the parse thread's heap budget",
  'test/security/ingestion-page-budget.test.ts': "a PDF's page budget, checked before parsing",
  'test/security/ingestion-parse-lanes.test.ts': "the parse threads' lanes per dataset",
  'test/security/ingestion-time-budget.test.ts': "the parse thread's time budget",
};

/**
 * Files about cluster mode itself (named `postgres-*` or `cluster-*`): most start their own PostgreSQL
 * server (test/helpers/postgres.ts), the others run its store on PGlite. They run in `npm run test:postgres`
 * only, so that `npm test` needs no PostgreSQL and stays within issue 24's three minutes.
 */
const CLUSTER_MODE = /^test\/(postgres-|cluster-)/;

export function isClusterModeFile(file: string): boolean {
  return CLUSTER_MODE.test(file);
}

/** The route files among `files` (paths relative to `root`, as `test/…`) to run on PostgreSQL. */
export function postgresRouteFiles(root: string, files: readonly string[]): string[] {
  return files.filter(
    (file) =>
      !isClusterModeFile(file) &&
      SQLITE_ONLY[file] === undefined &&
      LEFT_OUT_FOR_TIME[file] === undefined &&
      /\bcreateTestApp\(/.test(readFileSync(join(root, file), 'utf8')),
  );
}
