import { SecretBox } from './secret-box.ts';

/** What a response shows in place of a secret; a PATCH that sends it back keeps the stored value. */
export const SECRET_MASK = '********';

export type Configuration = Record<string, unknown>;

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

function mapSecrets(config: Configuration, transform: (value: unknown) => unknown): Configuration {
  const result: Configuration = {};
  for (const [key, value] of Object.entries(config)) {
    if (isSecretKey(key) && value !== null && value !== undefined && value !== '') {
      result[key] = transform(value);
    } else if (isPlainObject(value)) {
      result[key] = mapSecrets(value, transform);
    } else {
      result[key] = value;
    }
  }
  return result;
}

function isPlainObject(value: unknown): value is Configuration {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The configuration as responses show it. */
export function maskSecrets(config: Configuration): Configuration {
  return mapSecrets(config, () => SECRET_MASK);
}

/** The configuration as stored: secret values sealed, everything else as given. */
export function sealSecrets(config: Configuration, box: SecretBox): Configuration {
  return mapSecrets(config, (value) => box.encrypt(JSON.stringify(value)));
}

/** The configuration as knode uses it: secret values opened again. */
export function openSecrets(config: Configuration, box: SecretBox): Configuration {
  return mapSecrets(config, (value) => (SecretBox.isSealed(value) ? JSON.parse(box.decrypt(value)) : value));
}

/** For PATCH: every secret sent back as the mask keeps its stored value (both configurations opened). */
export function keepMaskedSecrets(incoming: Configuration, stored: Configuration): Configuration {
  const result: Configuration = {};
  for (const [key, value] of Object.entries(incoming)) {
    if (isSecretKey(key) && value === SECRET_MASK) {
      if (key in stored) result[key] = stored[key];
    } else if (isPlainObject(value) && isPlainObject(stored[key])) {
      result[key] = keepMaskedSecrets(value, stored[key]);
    } else {
      result[key] = value;
    }
  }
  return result;
}

/** The mask is what responses show, never a value: sending it where nothing is stored is a mistake. */
export function maskedSecretKeys(config: Configuration, path: string[] = []): string[][] {
  const found: string[][] = [];
  for (const [key, value] of Object.entries(config)) {
    if (isSecretKey(key) && value === SECRET_MASK) found.push([...path, key]);
    else if (isPlainObject(value)) found.push(...maskedSecretKeys(value, [...path, key]));
  }
  return found;
}
