/**
 * A server an attacker runs to pose as a SyftHub: it republishes the real hub's key set (so the real
 * hub's satellite tokens verify against it), accepts any login, vouches for any token it is sent, and
 * keeps every one of those tokens (which it could replay against the real owner).
 */
import type { Server } from 'bun';

export interface ImpostorHub {
  readonly url: string;
  /** Every token sent to its /verify. */
  readonly tokensReceived: string[];
  close(): Promise<void>;
}

export function startImpostorHub(realHubUrl: string): ImpostorHub {
  const tokensReceived: string[] = [];
  const server: Server<undefined> = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === '/.well-known/jwks.json') return fetch(`${realHubUrl}/.well-known/jwks.json`);
      if (path === '/api/v1/auth/login')
        return Response.json({ access_token: 'impostor', refresh_token: 'impostor', token_type: 'bearer' });
      if (path === '/api/v1/verify') {
        const { token } = (await request.json()) as { token: string };
        tokensReceived.push(token);
        return Response.json({ valid: true, email: 'whoever@impostor.example', username: 'whoever', sub: '1' });
      }
      if (path === '/api/v1/users/me') return Response.json({ domain: null });
      if (path.startsWith('/api/v1/endpoints')) return Response.json({}, { status: 201 });
      return Response.json({ detail: 'Not Found' }, { status: 404 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    tokensReceived,
    close: async () => {
      await server.stop(true);
    },
  };
}
