import { RE2JS } from 're2js';
import { enforceConfigurationLimits, Issues, optionalBoolean } from '../http/issues.ts';
import type { Configuration } from '../security/secret-config.ts';

export const POLICY_TYPES = ['access', 'rate_limit', 'accounting'] as const;
export type PolicyType = (typeof POLICY_TYPES)[number];

export const RATE_PATTERN = /^[1-9][0-9]{0,8}\/(s|m|h|d)$/;

/** A pattern made only of e-mail characters is an exact address, compared literally (API-CONTRACT 4). */
const PLAIN_EMAIL = /^[A-Za-z0-9._%+-]+@[A-Za-z0-9._%+-]+$/;

export function isPlainEmailPattern(pattern: string): boolean {
  return PLAIN_EMAIL.test(pattern);
}

/**
 * Regular expressions run on RE2's linear-time engine, so no pattern an endpoint owner writes can make
 * a query hang on catastrophic backtracking; they match case-insensitively and must match the whole e-mail.
 */
export function compileEmailPattern(pattern: string): RE2JS {
  return RE2JS.compile(pattern, RE2JS.CASE_INSENSITIVE);
}

const MAX_PATTERNS = 1000;
const MAX_PATTERN_LENGTH = 500;

/** Checks a policy configuration for its type and returns it normalised (only the known keys). */
export function normalizePolicyConfiguration(type: PolicyType, input: Configuration): Configuration {
  // Unknown keys are dropped below, but the bounds hold for every configuration the API takes.
  enforceConfigurationLimits(input);
  const issues = new Issues(['body', 'configuration']);
  let normalized: Configuration;
  switch (type) {
    case 'access':
      normalized = { mode: checkMode(issues, input.mode), patterns: checkPatterns(issues, input.patterns) };
      break;
    case 'rate_limit':
      normalized = { rate: checkRate(issues, input.rate) };
      break;
    case 'accounting':
      normalized = {
        enabled: optionalBoolean(issues, input, 'enabled', true),
        require_transaction_token: optionalBoolean(issues, input, 'require_transaction_token', false),
      };
      break;
  }
  issues.throwIfAny();
  return normalized;
}

function checkMode(issues: Issues, mode: unknown): string | undefined {
  if (mode === undefined || mode === null) {
    issues.add('mode', 'Field required', 'missing');
  } else if (mode !== 'allow' && mode !== 'deny') {
    issues.add('mode', "Input should be 'allow' or 'deny'", 'enum');
  }
  return mode as string;
}

function checkPatterns(issues: Issues, patterns: unknown): string[] | undefined {
  if (patterns === undefined || patterns === null) {
    issues.add('patterns', 'Field required', 'missing');
    return undefined;
  }
  if (!Array.isArray(patterns)) {
    issues.add('patterns', 'Input should be a valid list', 'list_type');
    return undefined;
  }
  if (patterns.length === 0) {
    issues.add('patterns', 'List should have at least 1 item', 'too_short');
    return undefined;
  }
  if (patterns.length > MAX_PATTERNS) {
    issues.add('patterns', `List should have at most ${MAX_PATTERNS} items`, 'too_long');
    return undefined;
  }
  patterns.forEach((pattern, index) => {
    if (typeof pattern !== 'string' || pattern.length === 0) {
      issues.add(['patterns', index], 'Input should be a non-empty string', 'string_type');
    } else if (pattern.length > MAX_PATTERN_LENGTH) {
      issues.add(['patterns', index], `String should have at most ${MAX_PATTERN_LENGTH} characters`, 'string_too_long');
    } else if (!isPlainEmailPattern(pattern)) {
      try {
        compileEmailPattern(pattern);
      } catch (error) {
        issues.add(['patterns', index], `Invalid regular expression: ${(error as Error).message}`, 'regex_invalid');
      }
    }
  });
  return patterns as string[];
}

function checkRate(issues: Issues, rate: unknown): string | undefined {
  if (rate === undefined || rate === null) {
    issues.add('rate', 'Field required', 'missing');
  } else if (typeof rate !== 'string' || !RATE_PATTERN.test(rate)) {
    issues.add('rate', "Input should look like '<count>/<s|m|h|d>', e.g. '10/m'", 'string_pattern_mismatch');
  }
  return rate as string;
}
