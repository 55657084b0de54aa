import { describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../src/config.ts';
import { consoleUrl, startupBanner, startupFailure } from '../src/startup.ts';
import { VERSION } from '../src/version.ts';
import { tempDir } from './helpers/app.ts';
import { startKnodeProcess } from './helpers/knode-process.ts';

/**
 * What knode says when it starts (issue 24, item 2): a block a person reads at a terminal (where to go,
 * where the data is, how it is guarded, what next), the same facts as one JSON line for a service
 * manager, and one line, not a stack trace, for the failures a person can fix.
 */

const PROJECT_ROOT = join(import.meta.dir, '..');

async function run(env: Record<string, string>): Promise<{ code: number; stderr: string; stdout: string }> {
  const child = Bun.spawn(['./node_modules/.bin/bun', 'src/main.ts'], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? '', SVC_HOST: '127.0.0.1', ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [code, stderr, stdout] = await Promise.all([child.exited, new Response(child.stderr).text(), new Response(child.stdout).text()]);
  return { code, stderr, stdout };
}

/** What knode itself writes to stderr (Bun and fastify may add their own warnings). */
const knodeLines = (stderr: string) => stderr.split('\n').filter((line) => line.startsWith('knode:'));

describe('start-up', () => {
  test('the block names the version, the console, the data folder, the mode, the folders and what to do next', () => {
    const config = loadConfig({ SVC_DATA_DIR: '/srv/knode', SVC_INGESTION_ROOTS: '/srv/docs,/home/ada' });
    const first = startupBanner(config, { url: 'http://127.0.0.1:8080', ingestionRoots: config.ingestionRoots, hasUsers: false });
    expect(first).toContain(`knode ${VERSION} is ready`);
    expect(first).toContain('Console      http://127.0.0.1:8080/');
    expect(first).toContain('Data folder  /srv/knode');
    expect(first).toContain('development (no SVC_ADMIN_API_KEY)');
    expect(first).toContain('/srv/docs, /home/ada (SVC_INGESTION_ROOTS)');
    expect(first).toContain('create your account');
    const later = startupBanner(loadConfig({ SVC_ADMIN_API_KEY: 'a-long-admin-key-123' }), {
      url: 'http://0.0.0.0:9000',
      ingestionRoots: [],
      hasUsers: true,
    });
    expect(later).toContain('Console      http://localhost:9000/');
    expect(later).toContain('production: the operator settings need SVC_ADMIN_API_KEY');
    expect(later).toContain('and sign in');
    expect(consoleUrl('http://[::]:8080')).toBe('http://localhost:8080/');
  });

  test('failures a person can fix are one line; anything else is left whole', () => {
    const config = loadConfig({ SVC_PORT: '80', SVC_DATA_DIR: '/srv/knode' });
    expect(startupFailure(Object.assign(new Error('x'), { code: 'EADDRINUSE', syscall: 'listen' }), config)).toContain(
      'port 80 on 127.0.0.1 is already in use',
    );
    expect(startupFailure(Object.assign(new Error('x'), { code: 'EACCES', syscall: 'listen' }), config)).toContain('choose one above 1023');
    expect(startupFailure(Object.assign(new Error('x'), { code: 'EACCES', syscall: 'mkdir' }), config)).toContain(
      'cannot write the data folder /srv/knode',
    );
    expect(startupFailure(new TypeError('a bug'), config)).toBeUndefined();
  });

  test('a taken port: one line and exit status 1, no stack trace', async () => {
    const holder = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('taken') });
    try {
      const result = await run({ SVC_PORT: String(holder.port), SVC_DATA_DIR: join(tempDir(), 'data') });
      expect(result.code).toBe(1);
      expect(knodeLines(result.stderr)).toEqual([
        `knode: port ${holder.port} on 127.0.0.1 is already in use (another knode, or another program): stop it, or choose another port with SVC_PORT`,
      ]);
      expect(result.stderr).not.toContain('    at ');
    } finally {
      await holder.stop(true);
    }
  }, 60_000);

  test('a data folder that cannot be written: one line and exit status 1', async () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, 'not a folder');
    const result = await run({ SVC_PORT: '0', SVC_DATA_DIR: join(file, 'data') });
    expect(result.code).toBe(1);
    expect(knodeLines(result.stderr)).toEqual([
      `knode: cannot write the data folder ${join(file, 'data')} (ENOTDIR): choose one you can write with SVC_DATA_DIR`,
    ]);
  }, 60_000);

  test('a bad variable: one line naming it, exit status 2', async () => {
    const result = await run({ SVC_PORT: 'eighty' });
    expect(result.code).toBe(2);
    expect(knodeLines(result.stderr)).toEqual([
      'knode: invalid configuration: SVC_PORT: must be an integer from 0 to 65535 (got "eighty")',
    ]);
  });

  test('not at a terminal, the same facts are one JSON line; requests are logged at debug only', async () => {
    const knode = await startKnodeProcess({ SVC_DATA_DIR: join(tempDir(), 'data') });
    try {
      await fetch(`${knode.url}/api/v1/health`);
      const lines = knode
        .log()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.find((line) => line.msg === 'knode is ready')).toMatchObject({ console: `${knode.url}/`, development_mode: true });
      expect(lines.filter((line) => line.msg === 'incoming request' || line.msg === 'request completed' || line.msg === 'request')).toEqual(
        [],
      );
    } finally {
      await knode.stop();
    }
  }, 60_000);
});
