/**
 * A server on a random loopback port that answers every request the way it is told to, for the tests of
 * the outbound rules (test/security/): an endless error body, an error page full of internal words, a
 * redirect elsewhere, or a model list. It records every request it sees and whether a body it was sending
 * was cancelled by the other side (the client closed the connection).
 */

export type HostileAnswer =
  /** 500 with `bytes` of `x`, streamed in 64 KB pieces as the client reads them. */
  | { kind: 'endless'; bytes: number }
  /** `status` with `body` as text/html (or whatever `contentType` says). */
  | { kind: 'page'; status: number; body: string; contentType?: string }
  /** `status` (302 unless told) to `location`. */
  | { kind: 'redirect'; location: string; status?: number }
  /** 200 with an OpenAI-style model list. */
  | { kind: 'models'; ids: string[] };

export interface HostileServer {
  readonly url: string;
  readonly port: number;
  readonly requests: { method: string; path: string; host: string | null }[];
  /** Bytes of the endless body handed to the connection so far. */
  readonly sent: number;
  /** Resolves when the client cancelled the endless body (the connection closed before its end). */
  readonly cancelled: Promise<void>;
  answer(answer: HostileAnswer): void;
  close(): Promise<void>;
}

const PIECE = 64 * 1024;

export function startHostileServer(hostname = '127.0.0.1'): HostileServer {
  let current: HostileAnswer = { kind: 'models', ids: ['m'] };
  let sent = 0;
  let markCancelled: () => void = () => {};
  const cancelled = new Promise<void>((resolve) => {
    markCancelled = resolve;
  });
  const requests: HostileServer['requests'] = [];
  const server = Bun.serve({
    hostname,
    port: 0,
    fetch(request) {
      requests.push({ method: request.method, path: new URL(request.url).pathname, host: request.headers.get('host') });
      const answer = current;
      switch (answer.kind) {
        case 'endless': {
          const piece = new Uint8Array(PIECE).fill(0x78); // "xxxx..."
          const body = new ReadableStream<Uint8Array>({
            pull(controller) {
              if (sent >= answer.bytes) {
                controller.close();
                return;
              }
              sent += PIECE;
              controller.enqueue(piece);
            },
            cancel() {
              markCancelled();
            },
          });
          return new Response(body, { status: 500, headers: { 'content-type': 'text/plain' } });
        }
        case 'page':
          return new Response(answer.body, { status: answer.status, headers: { 'content-type': answer.contentType ?? 'text/html' } });
        case 'redirect':
          return new Response(null, { status: answer.status ?? 302, headers: { location: answer.location } });
        case 'models':
          return Response.json({ object: 'list', data: answer.ids.map((id) => ({ id, object: 'model', owned_by: 'hostile' })) });
      }
    },
  });
  const url = `http://${hostname}:${server.port}`;
  return {
    url,
    port: server.port as number,
    requests,
    get sent() {
      return sent;
    },
    cancelled,
    answer(next) {
      current = next;
    },
    close: () => server.stop(true),
  };
}
