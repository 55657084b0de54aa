/**
 * Which configuration keys name a secret: one list for the server (masked in responses, sealed at rest,
 * secret-config.ts) and the console (a password field, web/components/schema-form.tsx), so the two never
 * disagree. It imports nothing, so that the console's bundle takes this file and nothing else of the server.
 */

const SECRET_WORDS = new Set(['key', 'apikey', 'secret', 'token', 'password', 'passwd', 'credential', 'credentials', 'authorization']);

/**
 * Whether a configuration key names a secret (API-CONTRACT 3: `api_key`, `*key*`, `*secret*`, `*token*`,
 * `*password*`). Matching whole words of snake_case or camelCase names keeps `cost_per_1k_prompt_tokens`
 * or `max_tokens` (counts, not credentials) visible while `api_key`, `apiKey`, `accessToken` are hidden.
 */
export function isSecretKey(name: string): boolean {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/);
  return words.some((word) => SECRET_WORDS.has(word));
}
