/**
 * A marketplace accounting service for tests (API-CONTRACT 9): transactions are created against a
 * transaction token, then confirmed with the actual amount or cancelled. It checks HTTP Basic
 * credentials like the real one and remembers every call.
 */
import type { Server } from 'bun';

export interface AccountingCall {
  path: string;
  body: Record<string, unknown>;
}

export interface FakeAccounting {
  readonly url: string;
  readonly calls: AccountingCall[];
  /** Tokens the service accepts; any other token is refused with 402. */
  readonly validTokens: Set<string>;
  close(): Promise<void>;
}

export function startFakeAccounting(email: string, password: string): FakeAccounting {
  const calls: AccountingCall[] = [];
  const validTokens = new Set<string>();
  let nextId = 1;
  const expected = `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;
  const server: Server<undefined> = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      if (request.headers.get('authorization') !== expected) return Response.json({ detail: 'Invalid credentials' }, { status: 401 });
      const body = (await request.json()) as Record<string, unknown>;
      calls.push({ path, body });
      if (path === '/transaction/create') {
        if (!validTokens.has(String(body.token))) return Response.json({ detail: 'Invalid or expired token' }, { status: 402 });
        return Response.json({ transaction: { id: `tx-${nextId++}`, status: 'pending', amount: body.amount } }, { status: 201 });
      }
      if (path === '/transaction/confirm' || path === '/transaction/cancel') return Response.json({ ok: true });
      return Response.json({ detail: 'Not found' }, { status: 404 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    calls,
    validTokens,
    close: () => server.stop(true),
  };
}
