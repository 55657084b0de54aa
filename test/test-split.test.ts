import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isClusterModeFile, postgresRouteFiles } from './engine-files.ts';

const ROOT = join(import.meta.dir, '..');
const files = [...new Bun.Glob('test/**/*.test.{ts,tsx}').scanSync({ cwd: ROOT })].sort();
const single = files.filter((file) => !isClusterModeFile(file));

/** How scripts/test.ts splits the files between `npm test` and `npm run test:postgres`. */
describe('the split between npm test and npm run test:postgres', () => {
  test('no file npm test runs starts a PostgreSQL server: those are named postgres-* or cluster-*', () => {
    const importsServer = /^import .* from '(\.\.?\/)+helpers\/postgres\.ts';$/m;
    const starting = single.filter((file) => importsServer.test(readFileSync(join(ROOT, file), 'utf8')));
    expect(starting).toEqual([]);
  });

  test('the route files run again on PostgreSQL are among those npm test runs', () => {
    const routes = postgresRouteFiles(ROOT, single);
    expect(routes.length).toBeGreaterThan(50);
    expect(routes).toContain('test/auth.test.ts');
    expect(routes.filter(isClusterModeFile)).toEqual([]);
    expect(postgresRouteFiles(ROOT, ['test/cluster-two-replicas.test.ts', 'test/postgres-selections.test.ts'])).toEqual([]);
  });
});
