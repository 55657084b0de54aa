import { describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { openDatabase } from '../src/db/database.ts';
import { NewerSchemaError } from '../src/db/migrate.ts';
import { tempDir } from './helpers/app.ts';

/**
 * Going back to an older knode on a data folder a newer one migrated (db/migrate.ts): refused with what
 * happened and what to do, in one line at start-up, rather than Kysely's "corrupted migrations".
 */
const PROJECT_ROOT = join(import.meta.dir, '..');

async function folderMigratedByANewerKnode(): Promise<string> {
  const dataDir = join(tempDir(), 'data');
  const opened = await openDatabase(dataDir);
  await opened.exclusive((sqlite) =>
    sqlite.run(`INSERT INTO kysely_migration (name, timestamp) VALUES ('9999-from-a-newer-knode', '2027-01-01T00:00:00.000Z')`),
  );
  await opened.close();
  return dataDir;
}

describe('a data folder a newer knode migrated', () => {
  test('is refused, saying a newer knode last opened it and which migration this one lacks', async () => {
    const dataDir = await folderMigratedByANewerKnode();
    const error = await openDatabase(dataDir).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(NewerSchemaError);
    expect((error as Error).message).toBe(
      `the database ${join(dataDir, 'knode.db')} was last opened by a newer knode (its migration 9999-from-a-newer-knode is unknown to this one): run that version of knode or a newer one`,
    );
  });

  test('stops the start-up with that one line and exit status 1', async () => {
    const dataDir = await folderMigratedByANewerKnode();
    const child = Bun.spawn(['./node_modules/.bin/bun', 'src/main.ts'], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH ?? '', SVC_HOST: '127.0.0.1', SVC_PORT: '0', SVC_DATA_DIR: dataDir },
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()]);
    expect(code).toBe(1);
    expect(stderr.split('\n').filter((line) => line.startsWith('knode:'))).toEqual([
      `knode: the database ${join(dataDir, 'knode.db')} was last opened by a newer knode (its migration 9999-from-a-newer-knode is unknown to this one): run that version of knode or a newer one`,
    ]);
    expect(stderr).not.toContain('    at ');
  }, 60_000);
});
