import { redactSecrets } from '../security/redact.ts';

/**
 * What knode may repeat of another server's error answer: its status and at most a short message from
 * its JSON (`error.message`, `error`, `detail`, `message`), cut to 200 characters and scrubbed of secrets.
 * Never the body itself: a body is whatever the server (or whoever a URL pointed at) chose to send, from an
 * internal page to a megabyte of text, and repeating it turned model tests into a way to read them.
 */

const SHORT_REASON = 200;

/** The short message of a JSON error body, or '' (not JSON, or no message in it). */
export function jsonErrorMessage(text: string, secrets: readonly (string | undefined)[] = []): string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return '';
  }
  return shortMessage(messageOf(body), secrets);
}

/** A message a client library already took out of a JSON error body (openai's `error`). */
export function shortMessage(message: unknown, secrets: readonly (string | undefined)[] = []): string {
  if (typeof message !== 'string') return '';
  // Redacted before it is cut: a secret cut in two would no longer be recognised.
  const line = redactSecrets(message.slice(0, 10 * SHORT_REASON), secrets)
    .replace(/\s+/g, ' ')
    .trim();
  return line.length > SHORT_REASON ? `${line.slice(0, SHORT_REASON)}…` : line;
}

/** `413` or `401: Invalid API key`, from an answer whose body was not read yet (it is read here, bounded by the fetch). */
export async function upstreamStatus(response: Response, secrets: readonly (string | undefined)[] = []): Promise<string> {
  const text = await response.text().catch(() => '');
  const message = jsonErrorMessage(text, secrets);
  return message ? `${response.status}: ${message}` : `${response.status}`;
}

/** OpenAI's `{"error": {"message"}}`, Ollama's `{"error": "..."}`, FastAPI's `{"detail": "..."}`, or `{"message"}`. */
export function messageOf(body: unknown): unknown {
  if (typeof body !== 'object' || body === null) return undefined;
  const { error, detail, message } = body as { error?: unknown; detail?: unknown; message?: unknown };
  if (typeof error === 'string') return error;
  if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') {
    return (error as { message: string }).message;
  }
  if (typeof detail === 'string') return detail;
  if (typeof detail === 'object' && detail !== null && typeof (detail as { message?: unknown }).message === 'string') {
    return (detail as { message: string }).message;
  }
  return typeof message === 'string' ? message : undefined;
}
