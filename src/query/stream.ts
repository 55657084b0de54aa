import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import { DomainError } from '../domain/errors.ts';
import type { Clock } from '../util/clock.ts';
import type { AnswerEvent } from './running-query.ts';

/**
 * Sends a streamed answer's events (running-query.ts `stream`) as SSE. The status is sent already, so a
 * failure on the way is an `event: error` (with a domain error's detail, never an internal one), unless
 * the client went away (`signal`).
 */
export async function sendStream(
  reply: FastifyReply,
  events: Iterable<AnswerEvent> | AsyncIterable<AnswerEvent>,
  signal: AbortSignal,
  log: FastifyBaseLogger,
  clock: Clock,
): Promise<void> {
  const sse = new SseWriter(reply, Math.floor(clock.now() / 1000));
  sse.open();
  try {
    for await (const event of events) sse.write(event);
  } catch (error) {
    if (!signal.aborted) {
      log.error({ err: error }, 'query stream failed');
      sse.error(error instanceof DomainError ? error.detail : 'Internal server error');
    }
  }
  sse.end();
}

/**
 * The one SSE writer (API-CONTRACT 6): `event: references` once, OpenAI-style chunks for the text,
 * a last chunk with usage and costs beside `choices`, then `data: [DONE]`. A failure after the stream
 * began is an `event: error` before `[DONE]`. The whole answer is never sent again at the end.
 */
class SseWriter {
  private id = `chatcmpl-${crypto.randomUUID()}`;
  private model = '';
  private closed = false;

  constructor(
    private readonly reply: FastifyReply,
    /** The chunks' `created`: when the answer began, in seconds since the epoch (OpenAI's). */
    private readonly created: number,
  ) {}

  /** Takes the response over from fastify and sends the headers (CORS and request id included). */
  open(): void {
    this.reply.hijack();
    const headers = { ...this.reply.getHeaders() } as Record<string, string | string[] | number>;
    this.reply.raw.writeHead(200, {
      ...headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no', // tell reverse proxies not to buffer the stream
    });
  }

  write(event: AnswerEvent): void {
    switch (event.type) {
      case 'references':
        this.send({ references: event.references }, 'references');
        break;
      case 'start':
        this.id = event.id;
        this.model = event.model;
        break;
      case 'delta':
        if (event.text !== '') this.send(this.chunk({ content: event.text }, null));
        break;
      case 'done': {
        const summary = event.summary;
        this.send({
          ...this.chunk({}, summary?.finish_reason ?? 'stop'),
          ...(summary ? { model: summary.model } : {}),
          usage: summary?.usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
          cost: summary?.cost ?? 0,
          total_cost: event.totalCost,
          provider_info: summary?.provider_info ?? {},
          policy_metadata: event.policyMetadata,
        });
        break;
      }
    }
  }

  error(detail: string): void {
    this.send({ detail }, 'error');
  }

  end(): void {
    if (this.closed) return;
    this.sendRaw('data: [DONE]\n\n');
    this.closed = true;
    this.reply.raw.end();
  }

  private chunk(delta: Record<string, string>, finishReason: string | null) {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, finish_reason: finishReason }],
    };
  }

  private send(data: unknown, event?: string): void {
    this.sendRaw(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);
  }

  private sendRaw(text: string): void {
    if (this.closed || this.reply.raw.destroyed) return;
    this.reply.raw.write(text);
  }
}
