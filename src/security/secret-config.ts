import { SecretBox } from './secret-box.ts';
import { isSecretKey } from './secret-words.ts';

/** What a response shows in place of a secret; a PATCH that sends it back keeps the stored value. */
export const SECRET_MASK = '********';

export type Configuration = Record<string, unknown>;

/** Where a value sits in a configuration: keys of objects, indexes of arrays. */
export type ConfigurationPath = (string | number)[];

export { isSecretKey };

/** The configuration as responses show it: secret values and the user-info of URLs replaced by the mask. */
export function maskSecrets(config: Configuration): Configuration {
  return rewriteSecrets(config, {
    secret: () => SECRET_MASK,
    userInfo: (url) => joinUserInfo(url, SECRET_MASK),
  });
}

/** The configuration as stored: secret values and URL user-info sealed, everything else as given. */
export function sealSecrets(config: Configuration, box: SecretBox): Configuration {
  return rewriteSecrets(config, {
    secret: (value) => box.encrypt(JSON.stringify(value)),
    // Only the user-info is sealed, so a stored URL still shows (and masks to) its host without the key;
    // percent-encoding keeps the sealed text inside the user-info (base64 has `/`, the prefix has `:`).
    userInfo: (url) => joinUserInfo(url, encodeURIComponent(box.encrypt(url.userInfo))),
  });
}

/** The configuration as knode uses it: secret values and URL user-info opened again. */
export function openSecrets(config: Configuration, box: SecretBox): Configuration {
  return rewriteSecrets(config, {
    secret: (value) => (SecretBox.isSealed(value) ? JSON.parse(box.decrypt(value)) : value),
    userInfo: (url) => {
      const sealed = sealedUserInfo(url);
      // Rows written before URLs were sealed hold the user-info in clear: they open as they are.
      return joinUserInfo(url, sealed === undefined ? url.userInfo : box.decrypt(sealed));
    },
  });
}

/**
 * For PATCH (both configurations opened): what a GET showed, sent back, keeps the stored secrets. A secret
 * sent as the mask takes the stored value at the same place (same keys, same array indexes); a URL sent
 * with masked user-info takes the stored URL's user-info. A mask with nothing behind it stays, so that
 * `maskedSecretKeys` refuses it rather than the secret silently disappearing.
 */
export function keepMaskedSecrets(incoming: Configuration, stored: Configuration): Configuration {
  return rewriteSecrets(
    incoming,
    {
      secret: (value, before) => (value === SECRET_MASK && hasValue(before) ? before : value),
      userInfo: (url, before) => joinUserInfo(url, url.userInfo === SECRET_MASK ? storedUserInfoFor(url, before) : url.userInfo),
    },
    stored,
  );
}

/** Where a configuration holds the mask as if it were a value (a secret, or a URL's user-info). */
export function maskedSecretKeys(config: Configuration): ConfigurationPath[] {
  const found: ConfigurationPath[] = [];
  const queue: [Container, Trail | undefined][] = [[config, undefined]];
  for (let index = 0; index < queue.length; index++) {
    const [container, trail] = queue[index] as [Container, Trail | undefined];
    for (const [key, value] of entriesOf(container)) {
      const here: Trail = { key, up: trail };
      if (isMaskedValue(key, value)) found.push(pathOf(here));
      else if (isContainer(value)) queue.push([value, here]);
    }
  }
  return found;
}

function isMaskedValue(key: string | number, value: unknown): boolean {
  if (value === SECRET_MASK) return typeof key === 'string' && isSecretKey(key);
  return typeof value === 'string' && splitUserInfo(value)?.userInfo === SECRET_MASK;
}

// ---- Walking a configuration ----

type Container = Configuration | unknown[];

/** What a `Rewrite` answers to walk into a container rather than replace it. */
const DESCEND: unique symbol = Symbol('descend');

/** The new value of one entry; `before` is the value at the same place in the other configuration, if any. */
type Rewrite = (key: string | number, value: unknown, before: unknown) => unknown;

/**
 * A copy of `root` with each entry rewritten, breadth first. A queue instead of recursion: rows stored
 * before the configuration limits (http/issues.ts) may nest deeper than the call stack, and a secret
 * walker must never be the thing that turns a request into a 500.
 */
function rewrite(root: Configuration, rewriteEntry: Rewrite, beforeRoot?: Configuration): Configuration {
  const copy: Configuration = {};
  const queue: [source: Container, target: Container, before: unknown][] = [[root, copy, beforeRoot]];
  for (let index = 0; index < queue.length; index++) {
    const [source, target, before] = queue[index] as [Container, Container, unknown];
    for (const [key, value] of entriesOf(source)) {
      const counterpart = childOf(before, key);
      const result = rewriteEntry(key, value, counterpart);
      if (result !== DESCEND) {
        put(target, key, result);
        continue;
      }
      const child: Container = Array.isArray(value) ? [] : {};
      put(target, key, child);
      queue.push([value as Container, child, counterpart]);
    }
  }
  return copy;
}

interface SecretRewrites {
  /** A non-empty value under a secret-named key, whatever its type (the whole value is the secret). */
  secret(value: unknown, before: unknown): unknown;
  /** A string that is a URL with user-info, anywhere (under any key, or in an array). */
  userInfo(url: UserInfoUrl, before: unknown): string;
}

function rewriteSecrets(config: Configuration, rewrites: SecretRewrites, before?: Configuration): Configuration {
  return rewrite(
    config,
    (key, value, counterpart) => {
      if (typeof key === 'string' && isSecretKey(key) && hasValue(value)) return rewrites.secret(value, counterpart);
      if (typeof value === 'string') {
        const url = splitUserInfo(value);
        return url ? rewrites.userInfo(url, counterpart) : value;
      }
      return isContainer(value) ? DESCEND : value;
    },
    before,
  );
}

/** The path to an entry as a chain of parents, so that walking does not copy a path at every level. */
interface Trail {
  key: string | number;
  up: Trail | undefined;
}

function pathOf(trail: Trail): ConfigurationPath {
  const path: ConfigurationPath = [];
  for (let step: Trail | undefined = trail; step; step = step.up) path.push(step.key);
  return path.reverse();
}

function hasValue(value: unknown): boolean {
  return value !== null && value !== undefined && value !== '';
}

function isContainer(value: unknown): value is Container {
  return typeof value === 'object' && value !== null;
}

function entriesOf(container: Container): [string | number, unknown][] {
  return Array.isArray(container) ? [...container.entries()] : Object.entries(container);
}

function childOf(container: unknown, key: string | number): unknown {
  if (Array.isArray(container)) return typeof key === 'number' ? container[key] : undefined;
  if (isContainer(container) && typeof key === 'string' && Object.hasOwn(container, key)) return (container as Configuration)[key];
  return undefined;
}

function put(target: Container, key: string | number, value: unknown): void {
  // Not `target[key] = value`: a key named `__proto__` must stay a value, not replace the copy's prototype.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

// ---- URLs with user-info ----

/** `scheme://` + user-info + `@` + the rest (host, port, path...), split so the user-info can be swapped. */
interface UserInfoUrl {
  scheme: string;
  userInfo: string;
  rest: string;
}

/**
 * `scheme://user:password@host/...`, read as URL parsers read it: the authority ends at the first `/`, `?`,
 * `#` or `\`, and its user-info runs to the last `@` inside it (an unencoded `@` in a password included).
 * Any scheme counts (`postgres://`, `redis://`...): a credential is one wherever it is sent.
 */
const URL_WITH_USER_INFO = /^(\s*[A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#\\]*)@/;

function splitUserInfo(value: string): UserInfoUrl | undefined {
  const match = URL_WITH_USER_INFO.exec(value);
  if (!match || match[2] === '') return undefined;
  return { scheme: match[1] as string, userInfo: match[2] as string, rest: value.slice(match[0].length) };
}

function joinUserInfo(url: UserInfoUrl, userInfo: string): string {
  return `${url.scheme}${userInfo}@${url.rest}`;
}

/** The sealed text in a stored URL's user-info (see sealSecrets), or undefined when it is in clear. */
function sealedUserInfo(url: UserInfoUrl): string | undefined {
  try {
    const decoded = decodeURIComponent(url.userInfo);
    return SecretBox.isSealed(decoded) ? decoded : undefined;
  } catch {
    return undefined; // a malformed %-escape: a clear user-info that was never ours to decode
  }
}

/**
 * The stored user-info behind a masked URL, only when the URL still points where the credential was given
 * for (same scheme, host and port): changing the host of a masked URL must not carry the credential to it.
 * Otherwise the mask stays, and the request is refused as sending the mask for a value.
 */
function storedUserInfoFor(url: UserInfoUrl, before: unknown): string {
  const stored = typeof before === 'string' ? splitUserInfo(before) : undefined;
  return stored !== undefined && originOf(stored) === originOf(url) ? stored.userInfo : url.userInfo;
}

function originOf(url: UserInfoUrl): string {
  const host = /^[^/?#\\]*/.exec(url.rest)?.[0] ?? '';
  return `${url.scheme.trim()}${host}`.toLowerCase();
}
