/**
 * An OpenAI-compatible server for tests, on a random loopback port: chat completions (streamed and
 * not, with usage), embeddings, the model list, and switchable failures (an HTTP error, slowness).
 *
 * Its "tokenizer" splits text into words, each word carrying the whitespace before it, so tests can
 * predict usage: prompt_tokens counts the words of every message's content, completion_tokens the
 * words of the answer. `stop` cuts the answer before the first stop sequence (finish_reason "stop");
 * `max_tokens` / `max_completion_tokens` cut it after that many words (finish_reason "length").
 */
import type { Server } from 'bun';

export const FAKE_ANSWER = 'The fake model answers the same way every time.\nSecond line of the answer.';

export interface FakeFailure {
  status: number;
  message: string;
  /** OpenAI's `error.param`, e.g. "max_tokens". */
  param?: string;
}

export interface FakeOpenAIOptions {
  /** Answer of every chat completion. */
  answer?: string;
  /** When set, requests must carry `Authorization: Bearer <apiKey>` or get OpenAI's 401. */
  apiKey?: string;
  /** Ids listed by GET /v1/models. */
  models?: string[];
  /** Default dimension of /v1/embeddings vectors (a request's `dimensions` wins). */
  embeddingDimensions?: number;
  /**
   * The most tokens (the fake's: words) an embedding input may have: a longer one is refused with 413, as
   * Hugging Face's TEI does unless started with --auto-truncate ("Input validation error: `inputs` must have
   * less than 512 tokens. Given: 600", router's Validation error). Unset: any length.
   */
  maxInputTokens?: number;
}

export interface FakeBehaviour {
  /** Every request answers this error instead. */
  failure?: FakeFailure;
  /** Milliseconds before the response starts (headers included). */
  delayMs?: number;
  /** Milliseconds between streamed chunks. */
  chunkDelayMs?: number;
  /** Leave `usage` out, as some servers do. */
  omitUsage?: boolean;
  /** Refuse `max_tokens` as OpenAI's reasoning models do (they want `max_completion_tokens`). */
  requireMaxCompletionTokens?: boolean;
  /** The answer to one chat, from its messages (undefined: the server's answer): a model that reads what it is asked. */
  reply?: (messages: { role: string; content: string }[]) => string | undefined;
  /** Every chat whose messages `failWhen` accepts answers `failure` instead (one call of several fails). */
  failWhen?: { test: (messages: { role: string; content: string }[]) => boolean; failure: FakeFailure };
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown> | undefined;
}

export interface FakeOpenAIServer {
  /** Base URL to configure, ending in /v1. */
  readonly url: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Changes how the following requests are answered; `{}` restores normal answers. */
  behave(behaviour: FakeBehaviour): void;
  /** Requests whose responses are still being produced (slow or streaming ones). */
  readonly openResponses: number;
  close(): Promise<void>;
}

/** Words with their leading whitespace: the fake's tokens. */
export function fakeTokens(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [];
}

/** A deterministic unit vector for a text: the same text always gives the same vector. */
export function fakeEmbedding(text: string, dimensions: number): number[] {
  let state = 2166136261;
  for (let i = 0; i < text.length; i++) state = Math.imul(state ^ text.charCodeAt(i), 16777619) >>> 0;
  const vector: number[] = [];
  for (let i = 0; i < dimensions; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    vector.push(state / 4294967296 - 0.5);
  }
  const norm = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0)) || 1;
  return vector.map((value) => value / norm);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (ms <= 0 || signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

function openAIError(failure: FakeFailure): Response {
  const type = failure.status === 401 ? 'invalid_request_error' : failure.status >= 500 ? 'server_error' : 'invalid_request_error';
  return json(failure.status, { error: { message: failure.message, type, param: failure.param ?? null, code: null } });
}

/** OpenAI quotes a refused key partly masked; the real one's shape, to prove we scrub it. */
function maskKey(key: string): string {
  return key.length > 9 ? `${key.slice(0, 5)}${'*'.repeat(key.length - 9)}${key.slice(-4)}` : '****';
}

interface ChatRequest {
  messages?: { role?: string; content?: unknown }[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  stop?: string | string[] | null;
  max_tokens?: number;
  max_completion_tokens?: number;
  model?: string;
}

function answerFor(request: ChatRequest, answer: string): { tokens: string[]; finishReason: 'stop' | 'length' } {
  let text = answer;
  let finishReason: 'stop' | 'length' = 'stop';
  const stops = typeof request.stop === 'string' ? [request.stop] : (request.stop ?? []);
  for (const stop of stops) {
    const at = stop === '' ? -1 : text.indexOf(stop);
    if (at >= 0) text = text.slice(0, at);
  }
  let tokens = fakeTokens(text);
  const limit = request.max_completion_tokens ?? request.max_tokens;
  if (typeof limit === 'number' && tokens.length > limit) {
    tokens = tokens.slice(0, limit);
    finishReason = 'length';
  }
  return { tokens, finishReason };
}

function promptTokens(request: ChatRequest): number {
  return (request.messages ?? []).reduce(
    (sum, message) => sum + fakeTokens(typeof message.content === 'string' ? message.content : '').length,
    0,
  );
}

export function startFakeOpenAI(options: FakeOpenAIOptions = {}): FakeOpenAIServer {
  const answer = options.answer ?? FAKE_ANSWER;
  const models = options.models ?? ['fake-model'];
  const requests: RecordedRequest[] = [];
  let behaviour: FakeBehaviour = {};
  let open = 0;
  let sequence = 0;

  async function handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const body = req.method === 'POST' ? ((await req.json().catch(() => undefined)) as Record<string, unknown> | undefined) : undefined;
    requests.push({ method: req.method, path: url.pathname, headers: Object.fromEntries(req.headers), body });
    await sleep(behaviour.delayMs ?? 0, req.signal);

    if (options.apiKey !== undefined) {
      const given = (req.headers.get('authorization') ?? '').replace(/^Bearer\s+/i, '');
      if (given !== options.apiKey) {
        return openAIError({
          status: 401,
          message: `Incorrect API key provided: ${maskKey(given)}. You can find your API key at https://platform.openai.com/account/api-keys.`,
        });
      }
    }
    if (behaviour.failure) return openAIError(behaviour.failure);

    if (req.method === 'GET' && url.pathname === '/v1/models') {
      return json(200, { object: 'list', data: models.map((id) => ({ id, object: 'model', created: 1700000000, owned_by: 'fake' })) });
    }
    if (req.method === 'POST' && url.pathname === '/v1/embeddings') return embeddings(body ?? {});
    if (req.method === 'POST' && url.pathname === '/v1/chat/completions') return chat((body ?? {}) as ChatRequest, req.signal);
    return json(404, { error: { message: `Unknown path ${url.pathname}`, type: 'invalid_request_error', param: null, code: null } });
  }

  function embeddings(body: Record<string, unknown>): Response {
    const inputs = Array.isArray(body.input) ? body.input.map(String) : [String(body.input ?? '')];
    const dimensions = typeof body.dimensions === 'number' ? body.dimensions : (options.embeddingDimensions ?? 16);
    const base64 = body.encoding_format === 'base64';
    const longest = Math.max(0, ...inputs.map((input) => fakeTokens(input).length));
    if (options.maxInputTokens !== undefined && longest > options.maxInputTokens) {
      const message = `Input validation error: \`inputs\` must have less than ${options.maxInputTokens} tokens. Given: ${longest}`;
      return json(413, { message, code: 413, type: 'Validation' });
    }
    const data = inputs.map((input, index) => {
      const vector = fakeEmbedding(input, dimensions);
      const embedding = base64 ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
      return { object: 'embedding', index, embedding };
    });
    const tokens = inputs.reduce((sum, input) => sum + fakeTokens(input).length, 0);
    return json(200, {
      object: 'list',
      data,
      model: body.model ?? 'fake-embedding',
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
  }

  function chat(request: ChatRequest, signal: AbortSignal): Response {
    if (behaviour.requireMaxCompletionTokens && request.max_tokens !== undefined) {
      return openAIError({
        status: 400,
        param: 'max_tokens',
        message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
      });
    }
    const messages = (request.messages ?? []).map((message) => ({
      role: String(message.role ?? ''),
      content: typeof message.content === 'string' ? message.content : '',
    }));
    if (behaviour.failWhen?.test(messages)) return openAIError(behaviour.failWhen.failure);
    const id = `chatcmpl-fake-${++sequence}`;
    const model = request.model ?? 'fake-model';
    const created = 1700000000;
    const { tokens, finishReason } = answerFor(request, behaviour.reply?.(messages) ?? answer);
    const usage = {
      prompt_tokens: promptTokens(request),
      completion_tokens: tokens.length,
      total_tokens: promptTokens(request) + tokens.length,
    };

    if (!request.stream) {
      return json(200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: tokens.join('') }, finish_reason: finishReason, logprobs: null }],
        ...(behaviour.omitUsage ? {} : { usage }),
      });
    }

    const includeUsage = request.stream_options?.include_usage === true && !behaviour.omitUsage;
    const chunkDelay = behaviour.chunkDelayMs ?? 0;
    const chunk = (delta: Record<string, unknown>, finish: string | null) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        open++;
        const encoder = new TextEncoder();
        const send = (text: string) => controller.enqueue(encoder.encode(text));
        try {
          send(chunk({ role: 'assistant', content: '' }, null));
          for (const token of tokens) {
            await sleep(chunkDelay, signal);
            if (signal.aborted) return;
            send(chunk({ content: token }, null));
          }
          send(chunk({}, finishReason));
          if (includeUsage) {
            send(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`);
          }
          send('data: [DONE]\n\n');
        } finally {
          open--;
          try {
            controller.close();
          } catch {
            // Already closed because the client went away.
          }
        }
      },
    });
    return new Response(stream, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } });
  }

  const server: Server<undefined> = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    fetch: handle,
  });
  const port = server.port ?? 0;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    behave(next) {
      behaviour = { ...next };
    },
    get openResponses() {
      return open;
    },
    async close() {
      await server.stop(true);
    },
  };
}

/** A base URL where nothing listens: a port that was free a moment ago. */
export async function deadServerUrl(): Promise<string> {
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') });
  const port = server.port;
  await server.stop(true);
  return `http://127.0.0.1:${port}/v1`;
}
