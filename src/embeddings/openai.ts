import OpenAI, { APIError } from 'openai';
import { errorMessage } from '../domain/errors.ts';
import { outboundCause } from '../outbound/errors.ts';
import { messageOf, shortMessage } from '../outbound/upstream.ts';
import { redactSecrets } from '../security/redact.ts';
import { SerialQueue } from '../util/serial-queue.ts';
import { batches } from './batching.ts';
import type { Embedder } from './embedder.ts';
import { l2Normalise } from './normalise.ts';
import type { EmbedderWindow } from './pieces.ts';

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';
// Well under every server's input limit (OpenAI allows 2,048), large enough to amortise the round trip.
const BATCH_TEXTS = 64;
const TIMEOUT_MS = 60_000;

/** OpenAI's own embedding models read 8,191 tokens of a text (its API reference). */
const OPENAI_MODEL_TOKENS: Readonly<Record<string, number>> = {
  'text-embedding-3-small': 8191,
  'text-embedding-3-large': 8191,
  'text-embedding-ada-002': 8191,
};
/**
 * Another server's model: 512 tokens, the limit of the BERT-sized models these servers mostly run, and
 * where Hugging Face's TEI refuses a longer input by default (Ollama and llama.cpp cut it short instead).
 */
const OTHER_MODEL_TOKENS = 512;
/**
 * A server's tokenizer is not at hand, so a word is counted as a token per three characters: English runs
 * about four characters a token in BPE and WordPiece vocabularies, so a piece stays within the window.
 */
const CHARACTERS_PER_TOKEN = 3;

export interface OpenAiEmbedderSettings {
  readonly base_url?: string;
  readonly api_key?: string;
  /**
   * The outbound module's fetch for the dataset's tenant (outbound/fetch.ts: addresses checked, answers
   * bounded); the global fetch only where no tenant is involved (unit tests of the embedder itself).
   */
  readonly fetch?: typeof fetch;
}

/**
 * An OpenAI-compatible `/v1/embeddings` server (OpenAI, Ollama, vLLM, LM Studio, llama.cpp server).
 * One request is made here to learn the dimension. Errors name the server, never the key.
 */
export async function createOpenAiEmbedder(model: string, settings: OpenAiEmbedderSettings): Promise<Embedder> {
  const embedder = new OpenAiEmbedder(model, settings);
  await embedder.probe();
  return embedder;
}

class OpenAiEmbedder implements Embedder {
  readonly id: string;
  readonly window: EmbedderWindow;
  private width = 0;
  private readonly client: OpenAI;
  private readonly server: string;
  private readonly apiKey: string | undefined;
  private readonly queue = new SerialQueue();

  constructor(
    private readonly model: string,
    settings: OpenAiEmbedderSettings,
  ) {
    this.id = `openai:${model}`;
    this.window = {
      tokens: OPENAI_MODEL_TOKENS[model] ?? OTHER_MODEL_TOKENS,
      tokensOf: (word) => Math.ceil(word.length / CHARACTERS_PER_TOKEN),
    };
    const baseUrl = settings.base_url?.trim() || DEFAULT_BASE_URL;
    this.server = describeServer(baseUrl);
    this.apiKey = settings.api_key || undefined;
    this.client = new OpenAI({
      baseURL: baseUrl,
      // Keyless servers (Ollama, llama.cpp) ignore the header; the client insists on some key, and a
      // stand-in value keeps it from falling back to OPENAI_API_KEY and sending that to a foreign server.
      apiKey: this.apiKey ?? 'no-key',
      organization: null,
      project: null,
      adminAPIKey: null,
      timeout: TIMEOUT_MS,
      maxRetries: 2,
      ...(settings.fetch ? { fetch: settings.fetch } : {}),
    });
  }

  get dimension(): number {
    return this.width;
  }

  async probe(): Promise<void> {
    const [vector] = await this.request(['dimension probe']);
    if (!vector || vector.length === 0) throw new Error(`embedding server ${this.server} returned an empty vector`);
    this.width = vector.length;
  }

  async embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const vectors: Float32Array[] = [];
    for (const batch of batches(texts, BATCH_TEXTS)) {
      signal?.throwIfAborted();
      const embedded = await this.queue.run(() => this.request(batch, signal));
      for (const vector of embedded) {
        if (vector.length !== this.width) {
          throw new Error(`embedding server ${this.server} returned ${vector.length} dimensions for ${this.model}, expected ${this.width}`);
        }
        vectors.push(l2Normalise(vector));
      }
    }
    return vectors;
  }

  private async request(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    let response: OpenAI.Embeddings.CreateEmbeddingResponse;
    try {
      // `float` explicitly: the client otherwise asks for base64, which several compatible servers lack.
      response = await this.client.embeddings.create(
        { model: this.model, input: texts, encoding_format: 'float' },
        signal ? { signal } : undefined,
      );
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw new Error(this.describeFailure(error));
    }
    const data = Array.isArray(response?.data) ? [...response.data] : [];
    if (data.length !== texts.length) {
      throw new Error(`embedding server ${this.server} returned ${data.length} embeddings for ${texts.length} texts`);
    }
    data.sort((a, b) => a.index - b.index);
    return data.map((item) => {
      if (!Array.isArray(item.embedding) || item.embedding.some((value) => typeof value !== 'number')) {
        throw new Error(`embedding server ${this.server} returned an embedding that is not a list of numbers`);
      }
      return Float32Array.from(item.embedding);
    });
  }

  private describeFailure(error: unknown): string {
    const refused = outboundCause(error);
    if (refused) return `embedding server ${this.server} failed for model ${this.model}: ${refused.detail}`;
    // The status and a short JSON message, never the body: the server's URL is the tenant's to choose.
    const detail =
      error instanceof APIError && error.status ? shortMessage(messageOf({ error: error.error })) : shortMessage(errorMessage(error));
    const status = error instanceof APIError && error.status ? ` (HTTP ${error.status})` : '';
    return redactSecrets(`embedding server ${this.server} failed for model ${this.model}${status}: ${detail || 'no reason given'}`, [
      this.apiKey,
    ]);
  }
}

/** The server as it may be shown: no credentials, no query string. */
function describeServer(baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new Error('embedding server base_url is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error('embedding server base_url must be an http or https URL');
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}
