import { errorMessage } from '../domain/errors.ts';
import { redactSecrets } from '../security/redact.ts';

/**
 * Asks an OpenAI-compatible server which models it serves (`GET {base_url}/models`: OpenAI, Ollama,
 * vLLM, LM Studio and llama.cpp's server all answer it), so a person picks a model instead of typing its
 * name. The answer is a probe's: a server that cannot be reached, refuses the key or answers nonsense is
 * `reachable: false` with the reason (scrubbed of the key), not a failure of the caller's request.
 */

export interface ServerModel {
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
  fetcher: typeof fetch = fetch,
): Promise<ServerModels> {
  const url = `${baseUrl.replace(/\/+$/, '')}/models`;
  const scrub = (text: string) => redactSecrets(text, [apiKey]);
  try {
    const response = await fetcher(url, {
      headers: { accept: 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
    const text = await response.text();
    if (!response.ok) return { reachable: false, error: scrub(`The server answered ${response.status}: ${reasonOf(text)}`) };
    const body = JSON.parse(text) as { data?: unknown };
    if (!Array.isArray(body.data)) return { reachable: false, error: 'The server did not answer a model list ({"data": [...]})' };
    const models = body.data
      .filter((item): item is { id: string; owned_by?: unknown } => typeof item?.id === 'string')
      .slice(0, MAX_MODELS)
      .map((item) => ({ id: item.id, owned_by: typeof item.owned_by === 'string' ? item.owned_by : null }))
      .sort((a, b) => a.id.localeCompare(b.id));
    return { reachable: true, models };
  } catch (error) {
    const name = (error as Error)?.name;
    if (name === 'TimeoutError' || name === 'AbortError') return { reachable: false, error: `No answer within ${timeoutMs / 1000} s` };
    if (error instanceof SyntaxError) return { reachable: false, error: 'The server did not answer JSON' };
    return { reachable: false, error: scrub(`Cannot reach the server: ${errorMessage(error)}`) };
  }
}

/** OpenAI's `{"error": {"message"}}`, Ollama's `{"error": "..."}`, or the start of the text. */
function reasonOf(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; detail?: unknown };
    if (typeof body.error === 'string') return body.error;
    if (typeof body.error?.message === 'string') return body.error.message;
    if (typeof body.detail === 'string') return body.detail;
  } catch {
    // not JSON: the text itself
  }
  return text.slice(0, 200) || '(no body)';
}
