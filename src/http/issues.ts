import { maskedSecretKeys } from '../security/secret-config.ts';
import { ValidationError, type ValidationIssue } from './errors.ts';

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

export function optionalBoolean(
  issues: Issues,
  config: Record<string, unknown>,
  key: string,
  fallback?: boolean,
): boolean | undefined {
  const value = config[key];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'boolean') {
    issues.add(key, 'Input should be a valid boolean', 'bool_type');
    return fallback;
  }
  return value;
}

/** A secret sent as the mask, where no stored value can stand behind it (e.g. on create). */
export function rejectMaskedSecrets(issues: Issues, config: Record<string, unknown>): void {
  for (const path of maskedSecretKeys(config)) {
    issues.add(path, "'********' is how responses hide a secret, not a value: send the secret itself", 'value_error');
  }
}
