/**
 * One address in front of several knode replicas, as a load balancer would be: each request goes to the
 * next replica in turn, and to the one after it when that replica does not answer (killed: a real balancer's
 * health check would take it out). Bodies are passed through as they are; `answeredBy` counts what each answered.
 */
export interface RoundRobinProxy {
  readonly url: string;
  /** How many requests each replica answered, by its URL. */
  readonly answeredBy: Map<string, number>;
  close(): Promise<void>;
}

/** Headers that describe the hop, not the message: fetch decompresses, so the length and encoding change. */
const HOP_HEADERS = ['connection', 'content-encoding', 'content-length', 'keep-alive', 'transfer-encoding'];

export function startRoundRobinProxy(replicas: readonly string[]): RoundRobinProxy {
  let next = 0;
  const answeredBy = new Map<string, number>();
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 120,
    async fetch(request) {
      const { pathname, search } = new URL(request.url);
      const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer();
      for (let tried = 0; tried < replicas.length; tried++) {
        const replica = replicas[next++ % replicas.length] as string;
        let answer: Response;
        try {
          answer = await fetch(`${replica}${pathname}${search}`, {
            method: request.method,
            headers: request.headers,
            body,
            redirect: 'manual',
          });
        } catch {
          continue; // that replica is down: the next one
        }
        answeredBy.set(replica, (answeredBy.get(replica) ?? 0) + 1);
        const headers = new Headers(answer.headers);
        for (const name of HOP_HEADERS) headers.delete(name);
        return new Response(answer.body, { status: answer.status, headers });
      }
      return new Response('no replica answered', { status: 502 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    answeredBy,
    close: async () => {
      await server.stop(true);
    },
  };
}
