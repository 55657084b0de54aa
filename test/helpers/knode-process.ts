import { join, resolve } from 'node:path';
import type { Subprocess } from 'bun';

/**
 * A real knode (`bun src/main.ts`) on a free loopback port, for tests that need a listening server: a
 * browser, a signal. Only the environment given (plus PATH) reaches it. KNODE_BINARY names a built
 * binary to start instead (`KNODE_BINARY=dist/knode bun test test/browser` runs the browser tests on it).
 */
export interface KnodeProcess {
  /** `http://127.0.0.1:<port>` */
  url: string;
  process: Subprocess<'ignore', 'pipe', 'inherit'>;
  /** Everything it logged so far (JSON lines). */
  log(): string;
  stop(): Promise<void>;
}

const PROJECT_ROOT = join(import.meta.dir, '../..');

export async function startKnodeProcess(env: Record<string, string>, timeoutMs = 30_000): Promise<KnodeProcess> {
  const binary = process.env.KNODE_BINARY;
  const command = binary ? [resolve(PROJECT_ROOT, binary)] : ['./node_modules/.bin/bun', 'src/main.ts'];
  const server = Bun.spawn(command, {
    cwd: PROJECT_ROOT,
    // The fakes listen on 127.0.0.1: loopback is allowed to every tenant, as in createTestApp.
    env: {
      PATH: process.env.PATH ?? '',
      SVC_HOST: '127.0.0.1',
      SVC_PORT: '0',
      SVC_LOG_LEVEL: 'info',
      SVC_OUTBOUND_ALLOW: 'loopback',
      ...env,
    },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'inherit',
  });
  let seen = '';
  // The pipe is read to its end, or the server's next log line would block once it fills up.
  const url = new Promise<string>((resolve, reject) => {
    void (async () => {
      const decoder = new TextDecoder();
      let found = false;
      for await (const chunk of server.stdout) {
        seen += decoder.decode(chunk, { stream: true });
        if (found) continue;
        const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(seen);
        if (match?.[1]) {
          found = true;
          resolve(match[1]);
        }
      }
      if (!found) reject(new Error(`knode exited before listening:\n${seen}`));
    })();
  });
  const timer = setTimeout(() => server.kill('SIGKILL'), timeoutMs);
  try {
    const listening = await url;
    return {
      url: listening,
      process: server,
      log: () => seen,
      stop: async () => {
        server.kill('SIGTERM');
        const exited = await Promise.race([server.exited.then(() => true), Bun.sleep(10_000).then(() => false)]);
        if (!exited) server.kill('SIGKILL');
      },
    };
  } finally {
    clearTimeout(timer);
  }
}
