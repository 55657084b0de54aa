import { SECRET_MASK } from './secret-config.ts';

/** A secret shorter than this would mask ordinary words (a dummy key such as `test` for a keyless server). */
const MIN_SECRET_LENGTH = 4;

/**
 * Text from another server (an error message, a hub's reason) as knode may show or log it: every secret
 * knode sent is replaced by the mask, and so is what servers are known to echo of a key they refused:
 * anything shaped like an API key (`sk-...`, `key_...`), the word after "provided:" (OpenAI), and keys
 * they quote partly masked (`sk-ab****wxyz`). The one redaction helper: models, embedders, hubs, the tunnel.
 */
export function redactSecrets(text: string, secrets: readonly (string | null | undefined)[]): string {
  let result = text;
  for (const secret of secrets) {
    if (secret && secret.length >= MIN_SECRET_LENGTH) result = result.split(secret).join(SECRET_MASK);
  }
  return result
    .replace(/\b(sk|rk|pk|key)[-_][A-Za-z0-9*._-]{4,}/gi, SECRET_MASK)
    .replace(/(provided:\s*)\S+/gi, `$1${SECRET_MASK}`)
    .replace(/\S*\*{3,}\S*/g, (match) => (match === SECRET_MASK ? match : SECRET_MASK));
}
