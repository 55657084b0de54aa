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

/** An answer of a knode process's API: its JSON as the contract describes it, or its text when not JSON. */
export interface KnodeAnswer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: an answer's JSON, read field by field as the contract describes it
  body: any;
}

/** One call to the API of a knode at `base` (a process, or a proxy in front of several), over real HTTP. */
export async function callKnode(
  base: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; payment?: string } = {},
): Promise<KnodeAnswer> {
  const response = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: {
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.payment ? { 'x-payment': options.payment } : {}),
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON (a stream, an error page): kept as text
  }
  return { status: response.status, headers: response.headers, body };
}
