import { DomainError, type ErrorKind } from '../domain/errors.ts';

/**
 * The one interface every model type implements (local GGUF through node-llama-cpp, remote
 * OpenAI-compatible servers), and the errors they throw. Shapes are snake_case because they are the
 * specification's wire objects (`summary` of a query response, without `cost`, which the query pipeline
 * adds from the model's prices: see costs.ts).
 */

type ChatRole = 'system' | 'user' | 'assistant';

export interface ChatMessage {
  role: ChatRole;
  content: string;
}

/** OpenAI's `response_format`; only honoured where the model type can (see each provider). */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null } };

export interface ChatOptions {
  max_tokens: number;
  temperature: number;
  /** Generation ends before any of these; empty strings are ignored. */
  stop_sequences: string[];
  presence_penalty: number;
  frequency_penalty: number;
  /** The `extras.summarize_options` that are honoured (API-CONTRACT 6). */
  top_p?: number;
  seed?: number;
  response_format?: ResponseFormat;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** Free-form per the specification; these keys are always there. */
export interface ProviderInfo {
  provider: 'openai' | 'llama_cpp';
  response_time_ms: number;
  /** Present (true) when the server reported no usage and the counts are characters / 4. */
  usage_estimated?: boolean;
  [key: string]: unknown;
}

export type FinishReason = 'stop' | 'length' | (string & {});

/** The specification's summary object without `cost`. */
export interface ChatSummary {
  id: string;
  model: string;
  /** `tokens` is the number of completion tokens (API-CONTRACT 6). */
  message: { role: 'assistant'; content: string; tokens: number };
  finish_reason: FinishReason;
  usage: Usage;
  provider_info: ProviderInfo;
}

/**
 * What a stream yields: text as it is generated, then exactly one `done`. The concatenated deltas are the
 * whole answer; `done` never repeats it (the hub's aggregator would print it twice).
 */
export type StreamEvent =
  | { type: 'delta'; text: string }
  | {
      type: 'done';
      id: string;
      model: string;
      finish_reason: FinishReason;
      usage: Usage;
      provider_info: ProviderInfo;
    };

export interface ProviderHealth {
  healthy: boolean;
  message: string;
}

export interface ChatProvider {
  /**
   * One answer. Aborting `signal` stops generation and rejects with `signal.reason` (an `AbortError`
   * unless the caller gave another reason). Model failures reject with ModelError / ModelTimeoutError.
   */
  chat(messages: ChatMessage[], options: ChatOptions, signal?: AbortSignal): Promise<ChatSummary>;
  /**
   * The same answer as it is generated. Leaving the loop early (`break`, a thrown error) stops generation
   * as an abort does. Failures are thrown from the iteration, possibly after some deltas.
   */
  stream(messages: ChatMessage[], options: ChatOptions, signal?: AbortSignal): AsyncIterable<StreamEvent>;
  /** Can the model answer? Never throws; a failure is `healthy: false` with the reason. */
  health(signal?: AbortSignal): Promise<ProviderHealth>;
}

/**
 * The model could not answer (an upstream failure): the message names the model and the reason, and
 * never carries a credential (providers redact them before building it).
 */
export class ModelError extends DomainError {
  override readonly name: string = 'ModelError';

  constructor(message: string, options?: { cause?: unknown }) {
    super('upstream', message, options);
  }
}

/**
 * The model did not answer within its configured time (a timeout): retrying later may work, where an
 * upstream failure says the model itself failed. Callers that want one kind can treat it as the
 * ModelError it extends.
 */
export class ModelTimeoutError extends ModelError {
  override readonly name: string = 'ModelTimeoutError';
  override readonly kind: ErrorKind = 'timeout';
}

/** Ids in OpenAI's style for answers whose server gives none (local models). */
export function newCompletionId(): string {
  return `chatcmpl-${crypto.randomUUID().replaceAll('-', '')}`;
}

export function sumUsage(prompt: number, completion: number): Usage {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** The summary's last stream event. */
export function doneEvent(summary: ChatSummary): StreamEvent {
  return {
    type: 'done',
    id: summary.id,
    model: summary.model,
    finish_reason: summary.finish_reason,
    usage: summary.usage,
    provider_info: summary.provider_info,
  };
}
