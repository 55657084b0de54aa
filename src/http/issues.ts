import { ValidationError, type ValidationIssue } from '../domain/errors.ts';
import { maskedSecretKeys } from '../security/secret-config.ts';
import { pathBeyondDepth } from './json-body.ts';

/**
 * Levels a free-form `configuration` may nest, itself counted: real ones use two or three (headers,
 * per-call options); ten leaves room for any of them and keeps every walk over the value shallow.
 */
export const MAX_CONFIGURATION_DEPTH = 10;

/**
 * Bytes of a `configuration` as JSON. Every query opens the configurations it uses and every view shows
 * them, so their size is paid again and again; 64 KiB holds any real one, a long system prompt included.
 */
export const MAX_CONFIGURATION_BYTES = 64 * 1024;

/** Collects every problem of a body before answering, so the client can fix them all in one go. */
export class Issues {
  private readonly list: ValidationIssue[] = [];

  constructor(private readonly prefix: (string | number)[] = ['body']) {}

  add(path: string | (string | number)[], msg: string, type = 'value_error'): void {
    this.list.push({ loc: [...this.prefix, ...(Array.isArray(path) ? path : [path])], msg, type });
  }

  get empty(): boolean {
    return this.list.length === 0;
  }

  throwIfAny(): void {
    if (this.list.length > 0) throw new ValidationError(this.list);
  }
}

/** Readers for loosely typed configuration objects that record a problem instead of throwing. */
export function optionalInteger(
  issues: Issues,
  config: Record<string, unknown>,
  key: string,
  { min, max, fallback }: { min: number; max: number; fallback?: number },
): number | undefined {
  const value = config[key];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    issues.add(key, `Input should be an integer from ${min} to ${max}`, 'int_type');
    return fallback;
  }
  return value;
}

export function optionalNumber(
  issues: Issues,
  config: Record<string, unknown>,
  key: string,
  { min, max, fallback }: { min: number; max: number; fallback?: number },
): number | undefined {
  const value = config[key];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    issues.add(key, `Input should be a number from ${min} to ${max}`, 'float_type');
    return fallback;
  }
  return value;
}

export function optionalString(
  issues: Issues,
  config: Record<string, unknown>,
  key: string,
  { maxLength = 10_000, pattern, fallback }: { maxLength?: number; pattern?: RegExp; fallback?: string } = {},
): string | undefined {
  const value = config[key];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'string') {
    issues.add(key, 'Input should be a valid string', 'string_type');
    return fallback;
  }
  if (value.length > maxLength) {
    issues.add(key, `String should have at most ${maxLength} characters`, 'string_too_long');
    return fallback;
  }
  if (pattern && !pattern.test(value)) {
    issues.add(key, `String should match pattern '${pattern.source}'`, 'string_pattern_mismatch');
    return fallback;
  }
  return value;
}

export function optionalBoolean(issues: Issues, config: Record<string, unknown>, key: string, fallback?: boolean): boolean | undefined {
  const value = config[key];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'boolean') {
    issues.add(key, 'Input should be a valid boolean', 'bool_type');
    return fallback;
  }
  return value;
}

/**
 * The depth and size bounds of a `configuration` (422 at `body.configuration...` when broken). Called before
 * anything else looks at the value: the depth is measured without recursion, and only a value within it
 * is serialised to measure its size.
 */
export function enforceConfigurationLimits(config: Record<string, unknown>): void {
  const issues = new Issues(['body', 'configuration']);
  const tooDeep = pathBeyondDepth(config, MAX_CONFIGURATION_DEPTH);
  if (tooDeep !== undefined) {
    issues.add(tooDeep, `Configuration should nest at most ${MAX_CONFIGURATION_DEPTH} levels deep`, 'too_deep');
  } else {
    const bytes = Buffer.byteLength(JSON.stringify(config));
    if (bytes > MAX_CONFIGURATION_BYTES) {
      issues.add([], `Configuration should be at most ${MAX_CONFIGURATION_BYTES} bytes as JSON, not ${bytes}`, 'too_long');
    }
  }
  issues.throwIfAny();
}

/** A secret (or a URL's user-info) sent as the mask, where no stored value can stand behind it (e.g. on create). */
export function rejectMaskedSecrets(issues: Issues, config: Record<string, unknown>): void {
  for (const path of maskedSecretKeys(config)) {
    issues.add(path, "'********' is how responses hide a secret, not a value: send the secret itself", 'value_error');
  }
}
