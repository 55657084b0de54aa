/**
 * Finding 3 (stop): during a huge ingest the process ignored SIGTERM for more than 30 s, because the
 * graceful stop waited for the file's whole embedding. A real knode process is started here.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Subprocess } from 'bun';
import { type FakeOpenAIServer, startFakeOpenAI } from '../fakes/openai-server.ts';
import { tempDir } from '../helpers/app.ts';
import { waitFor } from '../helpers/wait.ts';

/**
 * Reads the server's JSON log lines until fastify names the address it listens on, and keeps reading
 * afterwards: a pipe nobody reads fills up, or breaks, and the server's next log line fails.
 */
function listeningUrl(server: Subprocess<'ignore', 'pipe', 'inherit'>): Promise<string> {
  return new Promise((resolve, reject) => {
    void (async () => {
      const decoder = new TextDecoder();
      let seen = '';
      let found = false;
      for await (const chunk of server.stdout) {
        if (found) continue;
        seen += decoder.decode(chunk, { stream: true });
        const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(seen);
        if (match?.[1]) {
          found = true;
          resolve(match[1]);
        }
      }
      if (!found) reject(new Error(`knode exited before listening:\n${seen}`));
    })();
  });
}

describe('stopping knode', () => {
  let fake: FakeOpenAIServer;
  let dataDir: string;
  let server: Subprocess<'ignore', 'pipe', 'inherit'> | undefined;

  beforeAll(() => {
    fake = startFakeOpenAI({ embeddingDimensions: 8 });
    dataDir = tempDir('knode-sigterm-');
  });

  afterAll(async () => {
    server?.kill('SIGKILL');
    await fake.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('SIGTERM exits within 10 s during a huge ingest', async () => {
    const folder = join(dataDir, 'docs');
    mkdirSync(folder);
    // 20,000 chunks at 100 ms per embedding request of 64: about 30 s of embedding.
    writeFileSync(
      join(folder, 'huge.txt'),
      Array.from({ length: 20_000 }, (_, i) => `Line ${i} of a huge file.`.padEnd(99, '.')).join('\n'),
    );
    server = Bun.spawn(['./node_modules/.bin/bun', 'src/main.ts'], {
      cwd: join(import.meta.dir, '../..'),
      env: {
        PATH: process.env.PATH ?? '',
        HOME: dataDir,
        SVC_DATA_DIR: join(dataDir, 'data'),
        SVC_HOST: '127.0.0.1',
        SVC_PORT: '0',
        SVC_INGESTION_ROOTS: dataDir,
        SVC_LOG_LEVEL: 'info',
      },
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'inherit',
    });
    const url = await listeningUrl(server);
    const json = { 'content-type': 'application/json' };
    const credentials = { email: 'owner@example.com', password: 'correct horse battery' };
    const registered = await fetch(`${url}/api/v1/auth/register`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ ...credentials, tenant_name: 'owner' }),
    });
    expect(registered.status).toBe(201);
    const login = await fetch(`${url}/api/v1/auth/login`, { method: 'POST', headers: json, body: JSON.stringify(credentials) });
    const token = ((await login.json()) as { access_token: string }).access_token;
    fake.behave({ delayMs: 100 });
    const created = await fetch(`${url}/api/v1/datasets/`, {
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${token}` },
      body: JSON.stringify({
        name: 'huge',
        dtype: 'local_file',
        configuration: { ingestionPath: folder, embedder: 'openai:fake-embed', base_url: fake.url, chunkSize: 100, chunkOverlap: 0 },
      }),
    });
    expect(created.status).toBe(201);
    const embeddings = () => fake.requests.filter((request) => request.path === '/v1/embeddings').length;
    await waitFor('the huge file to be embedded', async () => embeddings() >= 10);

    const signalled = performance.now();
    server.kill('SIGTERM');
    // A deadline in real time is the point: a stop that hangs must fail the test, not time it out.
    const code = await Promise.race([server.exited, Bun.sleep(15_000).then(() => 'still running')]);
    const seconds = (performance.now() - signalled) / 1000;
    expect(code).toBe(0); // the graceful stop finished, not the deadline
    expect(seconds).toBeLessThan(10);
  }, 40_000);
});
