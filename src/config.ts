import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { DEFAULT_TENANT_QUOTAS, type TenantQuotas } from './domain/quotas.ts';
import { type Cidr, cidrsOverlap, isMetadataHost, parseCidr } from './util/ip-ranges.ts';
import { isHttpUrl } from './util/url.ts';

/** Everything knode reads from its environment, validated once at start-up (API-CONTRACT section 2). */
export interface Config {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  /** Empty string when none is set: then knode is in development mode. */
  readonly adminApiKey: string;
  /**
   * No SVC_ADMIN_API_KEY: requests made directly on this machine need no credentials (http/development-mode.ts
   * says which requests those are). Decided here, once; everything else asks this or that module.
   */
  readonly developmentMode: boolean;
  readonly jwtSecret: string | undefined;
  /**
   * SVC_DATABASE_URL: PostgreSQL for the shared state of several replicas (cluster mode); undefined: the
   * embedded SQLite database in the data folder.
   */
  readonly databaseUrl: string | undefined;
  /**
   * SVC_SECRET_KEY: the 32-byte key that seals stored secrets, in cluster mode (every replica opens what
   * another sealed); undefined with SQLite, which keeps its key in the data folder (secret.key).
   */
  readonly secretKey: Buffer | undefined;
  /**
   * SVC_TEST_LEASE_TTL_MS (tests only, cluster mode): how long a replica's leases live unrenewed, so a
   * test sees a dead replica's datasets taken over in seconds; 30 s (coordination/leases.ts) when unset.
   */
  readonly leaseTtlMs?: number;
  /** undefined: keep the stored URL; '': detect the public IP; otherwise the URL itself. */
  readonly publicUrl: string | undefined;
  readonly publicIpUrl: string;
  readonly multiTenancy: boolean;
  readonly openRegistration: boolean;
  readonly ingestionRoots: readonly string[];
  readonly rateLimitPerHour: number;
  readonly rateLimitPerMinute: number;
  readonly corsOrigins: readonly string[];
  readonly tunnelDomain: string;
  readonly embedder: string;
  readonly allowModelDownload: boolean;
  readonly logLevel: string;
  /** SVC_MAX_FILE_MB in bytes: a larger file is not read (it fails with the reason). */
  readonly maxFileBytes: number;
  /** SVC_MAX_TEXT_MB in bytes: the most text one file may yield (a DOCX declaring more is not inflated). */
  readonly maxTextBytes: number;
  /** SVC_TENANT_QUOTAS: endpoints, datasets and models per tenant, policies per endpoint (0: no limit). */
  readonly tenantQuotas: TenantQuotas;
  /** SVC_OUTBOUND_ALLOW: the loopback and private addresses every tenant's outbound calls may reach (outbound/). */
  readonly outboundAllow: OutboundAllowList;
}

/** SVC_OUTBOUND_ALLOW parsed: `loopback`, `private`, host names and address ranges (API-CONTRACT 2). */
export interface OutboundAllowList {
  readonly loopback: boolean;
  readonly private: boolean;
  /** Lower-case host names whose addresses, whatever they are, may be called. */
  readonly hosts: readonly string[];
  /** Address ranges (`10.1.0.0/16`, `fd00::/8`, a single address) that may be called. */
  readonly cidrs: readonly string[];
}

export class ConfigError extends Error {}

/** The origin of the development frontend, which the specification always allows. */
export const DEV_FRONTEND_ORIGIN = 'http://localhost:5173';

export const EMBEDDER_PATTERN = /^(use-lite|use-lite-int8|transformers:.+|openai:.+)$/;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const MEGABYTE = 1024 * 1024;
/** An admin key shorter than this can be guessed; a bearer header cannot carry whitespace. */
const ADMIN_KEY_MIN_LENGTH = 16;

type Env = Record<string, string | undefined>;

/** Builds the frozen configuration; throws ConfigError with one line naming the bad variable. */
export function loadConfig(env: Env = process.env): Config {
  const adminApiKey = adminKey(env);
  const developmentMode = adminApiKey === '';
  const config: Config = {
    host: nonEmpty(env, 'SVC_HOST', '127.0.0.1'),
    port: integer(env, 'SVC_PORT', 8080, 0, 65535),
    dataDir: resolve(nonEmpty(env, 'SVC_DATA_DIR', './data')),
    adminApiKey,
    developmentMode,
    jwtSecret: optionalSecret(env, 'SVC_JWT_SECRET'),
    ...clusterMode(env),
    publicUrl: publicUrl(env),
    publicIpUrl: httpUrl(env, 'SVC_PUBLIC_IP_URL', 'https://api.ipify.org'),
    multiTenancy: boolean(env, 'SVC_MULTI_TENANCY', false),
    openRegistration: boolean(env, 'SVC_OPEN_REGISTRATION', developmentMode),
    ingestionRoots: list(env, 'SVC_INGESTION_ROOTS', [homedir()]).map((root) => resolve(root)),
    rateLimitPerHour: integer(env, 'SVC_RATE_LIMIT_PER_HOUR', 1000, 0, 1_000_000_000),
    rateLimitPerMinute: integer(env, 'SVC_RATE_LIMIT_PER_MINUTE', 100, 0, 1_000_000_000),
    corsOrigins: list(env, 'SVC_CORS_ORIGINS', []).map((origin) => checkOrigin('SVC_CORS_ORIGINS', origin)),
    tunnelDomain: nonEmpty(env, 'SVC_TUNNEL_DOMAIN', 'syfthub.ngrok.app'),
    embedder: matching(
      env,
      'SVC_EMBEDDER',
      'use-lite',
      EMBEDDER_PATTERN,
      'use-lite, use-lite-int8, transformers:<model> or openai:<model>',
    ),
    allowModelDownload: boolean(env, 'SVC_ALLOW_MODEL_DOWNLOAD', false),
    logLevel: oneOf(env, 'SVC_LOG_LEVEL', 'info', LOG_LEVELS),
    maxFileBytes: integer(env, 'SVC_MAX_FILE_MB', 100, 1, 100_000) * MEGABYTE,
    maxTextBytes: integer(env, 'SVC_MAX_TEXT_MB', 20, 1, 10_000) * MEGABYTE,
    tenantQuotas: quotas(env, 'SVC_TENANT_QUOTAS'),
    outboundAllow: outboundAllow(env, 'SVC_OUTBOUND_ALLOW'),
    ...(env.SVC_TEST_LEASE_TTL_MS ? { leaseTtlMs: integer(env, 'SVC_TEST_LEASE_TTL_MS', 30_000, 500, 600_000) } : {}),
  };
  return Object.freeze(config);
}

function fail(name: string, problem: string, value: string): never {
  throw new ConfigError(`${name}: ${problem} (got ${JSON.stringify(value)})`);
}

/** Empty (or unset) is development mode; anything else must be a key a bearer header can carry and nobody can guess. */
function adminKey(env: Env): string {
  const value = env.SVC_ADMIN_API_KEY ?? '';
  if (value === '') return '';
  if (/\s/.test(value))
    throw new ConfigError('SVC_ADMIN_API_KEY: must not contain spaces or line breaks (a bearer header cannot carry them)');
  if (value.length < ADMIN_KEY_MIN_LENGTH) {
    throw new ConfigError(`SVC_ADMIN_API_KEY: must be at least ${ADMIN_KEY_MIN_LENGTH} characters long (got ${value.length})`);
  }
  return value;
}

function nonEmpty(env: Env, name: string, fallback: string): string {
  const value = env[name];
  if (value === undefined) return fallback;
  if (value.trim() === '') fail(name, 'must not be empty', value);
  return value.trim();
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = env[name];
  if (value === undefined || value.trim() === '') return fallback;
  const parsed = Number(value.trim());
  if (!/^\d+$/.test(value.trim()) || parsed < min || parsed > max) {
    fail(name, `must be an integer from ${min} to ${max}`, value);
  }
  return parsed;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const value = env[name];
  if (value === undefined || value.trim() === '') return fallback;
  const normalized = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(normalized)) return true;
  if (['false', '0', 'no', 'off'].includes(normalized)) return false;
  return fail(name, 'must be true or false', value);
}

function list(env: Env, name: string, fallback: string[]): string[] {
  const value = env[name];
  if (value === undefined || value.trim() === '') return fallback;
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** `endpoints=500,datasets=100`: the quotas named, the others at their defaults; 0 is no limit. */
function quotas(env: Env, name: string): TenantQuotas {
  const value = env[name];
  const result: Record<string, number> = { ...DEFAULT_TENANT_QUOTAS };
  if (value === undefined || value.trim() === '') return result as unknown as TenantQuotas;
  for (const item of value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const match = /^(endpoints|datasets|models|policies)=(\d{1,9})$/.exec(item);
    if (!match)
      fail(name, 'must be a comma-separated list of endpoints=, datasets=, models=, policies= with whole numbers (0: no limit)', value);
    result[match[1] as string] = Number(match[2]);
  }
  return result as unknown as TenantQuotas;
}

/** What SVC_OUTBOUND_ALLOW may not name: link-local ranges and the metadata services outside them. */
const NEVER_ALLOWED = ['169.254.0.0/16', 'fe80::/10', 'fd00:ec2::254', 'fd00:ec2::23', '100.100.100.200', '168.63.129.16'].map(
  (range) => parseCidr(range) as Cidr,
);

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/;

/**
 * `loopback`, `private`, host names and CIDRs. Link-local and cloud metadata addresses are never allowed,
 * so naming them is a mistake worth stopping start-up for, rather than an entry silently ignored.
 */
function outboundAllow(env: Env, name: string): OutboundAllowList {
  const result: AllowListDraft = { loopback: false, private: false, hosts: [], cidrs: [] };
  const refuse = (message: string) => fail(name, message, env[name] ?? '');
  for (const item of list(env, name, []).map((entry) => entry.toLowerCase())) addAllowEntry(result, item, refuse);
  return result;
}

type AllowListDraft = { loopback: boolean; private: boolean; hosts: string[]; cidrs: string[] };

/** Adds one entry of an allow list to `result`, or refuses it (`refuse` throws). */
function addAllowEntry(result: AllowListDraft, item: string, refuse: (message: string) => never): void {
  if (item === 'loopback' || item === 'private') {
    result[item] = true;
    return;
  }
  const cidr = parseCidr(item);
  if (cidr) {
    if (NEVER_ALLOWED.some((range) => cidrsOverlap(range, cidr))) {
      refuse(`${item} covers link-local or cloud metadata addresses, which are never allowed`);
    }
    result.cidrs.push(item);
    return;
  }
  if (HOST_NAME.test(item) && !item.includes('/')) {
    if (isMetadataHost(item)) refuse(`${item} is a cloud metadata host, which is never allowed`);
    result.hosts.push(item.replace(/\.$/, ''));
    return;
  }
  refuse(`${item} is none of loopback, private, a host name or an address range (CIDR)`);
}

/**
 * Cluster mode (SVC_DATABASE_URL): every replica reads what another wrote, so the keys a single process
 * makes once and keeps in its data folder (jwt.key, secret.key) must be the same everywhere, from the
 * environment. Without the URL nothing changes; SVC_SECRET_KEY is then refused rather than ignored, since
 * the embedded database's secrets stay sealed with its own key file.
 */
function clusterMode(env: Env): Pick<Config, 'databaseUrl' | 'secretKey'> {
  const databaseUrl = postgresUrl(env, 'SVC_DATABASE_URL');
  const secretKeyText = env.SVC_SECRET_KEY ?? '';
  if (databaseUrl === undefined) {
    if (secretKeyText !== '') {
      throw new ConfigError('SVC_SECRET_KEY: only read in cluster mode (with SVC_DATABASE_URL); SQLite keeps its key in the data folder');
    }
    return { databaseUrl, secretKey: undefined };
  }
  if (optionalSecret(env, 'SVC_JWT_SECRET') === undefined) {
    throw new ConfigError('SVC_JWT_SECRET: must be set in cluster mode (SVC_DATABASE_URL), the same on every replica, 32+ characters');
  }
  if (secretKeyText === '') {
    throw new ConfigError(
      'SVC_SECRET_KEY: must be set in cluster mode (SVC_DATABASE_URL), the same on every replica: 32 random bytes in base64 (openssl rand -base64 32)',
    );
  }
  return { databaseUrl, secretKey: base64Key('SVC_SECRET_KEY', secretKeyText, 32) };
}

/** postgres:// or postgresql:// only. A wrong value is named by its scheme: the URL may hold a password. */
function postgresUrl(env: Env, name: string): string | undefined {
  const value = env[name]?.trim() ?? '';
  if (value === '') return undefined;
  let protocol: string;
  try {
    protocol = new URL(value).protocol;
  } catch {
    throw new ConfigError(`${name}: must be a postgres:// or postgresql:// URL (got a value that is not a URL)`);
  }
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
    throw new ConfigError(`${name}: must be a postgres:// or postgresql:// URL (got a ${protocol}// URL)`);
  }
  return value;
}

/** Exactly `bytes` bytes, base64-encoded (as the key files hold them). The value itself is never echoed. */
function base64Key(name: string, value: string, bytes: number): Buffer {
  const text = value.trim();
  const key = Buffer.from(text, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || key.length !== bytes) {
    throw new ConfigError(`${name}: must be ${bytes} bytes in base64 (openssl rand -base64 ${bytes}); got ${key.length} bytes`);
  }
  return key;
}

function optionalSecret(env: Env, name: string): string | undefined {
  const value = env[name];
  if (value === undefined || value === '') return undefined;
  if (value.length < 32) throw new ConfigError(`${name}: must be at least 32 characters long`);
  return value;
}

function httpUrl(env: Env, name: string, fallback: string): string {
  const value = env[name];
  if (value === undefined || value.trim() === '') return fallback;
  if (!isHttpUrl(value.trim())) fail(name, 'must be an http or https URL', value);
  return value.trim();
}

function publicUrl(env: Env): string | undefined {
  const value = env.SVC_PUBLIC_URL;
  if (value === undefined) return undefined;
  if (value.trim() === '') return '';
  if (!isHttpUrl(value.trim())) fail('SVC_PUBLIC_URL', 'must be empty or an http or https URL', value);
  return value.trim().replace(/\/+$/, '');
}

function checkOrigin(name: string, origin: string): string {
  if (!isHttpUrl(origin)) fail(name, 'each origin must be an http or https URL', origin);
  return new URL(origin).origin;
}

function matching(env: Env, name: string, fallback: string, pattern: RegExp, expected: string): string {
  const value = env[name];
  if (value === undefined || value.trim() === '') return fallback;
  if (!pattern.test(value.trim())) fail(name, `must be ${expected}`, value);
  return value.trim();
}

function oneOf(env: Env, name: string, fallback: string, allowed: string[]): string {
  const value = env[name];
  if (value === undefined || value.trim() === '') return fallback;
  if (!allowed.includes(value.trim())) fail(name, `must be one of ${allowed.join(', ')}`, value);
  return value.trim();
}
