import { errorMessage } from '../domain/errors.ts';
import { OutboundRefusedError, OutboundTooLargeError } from '../outbound/errors.ts';
import { jsonErrorMessage, shortMessage } from '../outbound/upstream.ts';

/**
 * Asks an OpenAI-compatible server which models it serves (`GET {base_url}/models`: OpenAI, Ollama,
 * vLLM, LM Studio and llama.cpp's server all answer it), so a person picks a model instead of typing its
 * name. The answer is a probe's: a server that cannot be reached, refuses the key or answers nonsense is
 * `reachable: false` with the reason (scrubbed of the key), not a failure of the caller's request. The
 * reason is the status and a short JSON message at most, never the body: the URL is the caller's, so the
 * body could be any page knode can reach. An address knode may not call is the caller's failure (403).
 */

interface ServerModel {
  id: string;
  owned_by: string | null;
}

export type ServerModels = { reachable: true; models: ServerModel[] } | { reachable: false; error: string };

/** A list the size of OpenRouter's is fine; a server that answers megabytes is not a model server. */
const MAX_MODELS = 5000;

export async function listServerModels(
  baseUrl: string,
  apiKey: string | undefined,
  timeoutMs: number,
  /** The outbound module's fetch for the caller (outbound/fetch.ts). */
  fetcher: (url: string, init: RequestInit) => Promise<Response>,
): Promise<ServerModels> {
  const url = `${baseUrl.replace(/\/+$/, '')}/models`;
  try {
    const response = await fetcher(url, {
      headers: { accept: 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    if (!response.ok) {
      const message = jsonErrorMessage(text, [apiKey]);
      return { reachable: false, error: `The server answered ${response.status}${message ? `: ${message}` : ''}` };
    }
    const body = JSON.parse(text) as { data?: unknown };
    if (!Array.isArray(body.data)) return { reachable: false, error: 'The server did not answer a model list ({"data": [...]})' };
    const models = body.data
      .filter((item): item is { id: string; owned_by?: unknown } => typeof item?.id === 'string')
      .slice(0, MAX_MODELS)
      .map((item) => ({ id: item.id, owned_by: typeof item.owned_by === 'string' ? item.owned_by : null }))
      .sort((a, b) => a.id.localeCompare(b.id));
    return { reachable: true, models };
  } catch (error) {
    if (error instanceof OutboundRefusedError) throw error;
    if (error instanceof OutboundTooLargeError) return { reachable: false, error: error.detail };
    const name = (error as Error)?.name;
    if (name === 'TimeoutError' || name === 'AbortError') return { reachable: false, error: `No answer within ${timeoutMs / 1000} s` };
    if (error instanceof SyntaxError) return { reachable: false, error: 'The server did not answer JSON' };
    return { reachable: false, error: `Cannot reach the server: ${shortMessage(errorMessage(error), [apiKey])}` };
  }
}
