import { checkConfiguration, type Issues } from '../http/issues.ts';
import type { Configuration } from '../security/secret-config.ts';
import type { PolicySettings } from './codec.ts';
import { POLICY_CONFIGURATION_SCHEMAS, type PolicyType } from './configuration-schema.ts';
import {
  compileEmailPattern,
  estimatedProgramSize,
  isPlainEmailPattern,
  LIST_PROGRAM_MAX,
  PATTERN_PROGRAM_MAX,
  tooComplex,
} from './email-patterns.ts';
import { payerPatternKind } from './price-tiers.ts';

/** Decimals of an `mpp` price: pathUSD has 6 (API-CONTRACT 10.3). */
const PRICE_DECIMALS = 6;

export type { PolicyType } from './configuration-schema.ts';

/**
 * Checks a policy configuration against its type's schema (configuration-schema.ts), then that its access
 * (or `applied_to`) patterns compile and that a price has at most 6 decimals, and returns it normalised:
 * defaults filled in, only the keys of its type (422 with every problem otherwise).
 */
export function normalizePolicySettings(type: PolicyType, input: Configuration): PolicySettings {
  const schema = POLICY_CONFIGURATION_SCHEMAS[type];
  // Unknown keys are dropped below, but the bounds hold for every configuration the API takes.
  const { value, issues } = checkConfiguration(input, schema);
  if (type === 'access' && Array.isArray(value.patterns)) checkPatterns(issues, value.patterns, 'patterns', isPlainEmailPattern);
  // A price's entries may also be globs or literals (API-CONTRACT 10.3 point 8): only a regular expression compiles.
  if (type === 'mpp' && Array.isArray(value.applied_to))
    checkPatterns(issues, value.applied_to, 'applied_to', (entry) => payerPatternKind(entry) !== 'regex');
  if (type === 'mpp' && typeof value.price === 'number' && !issues.has('price') && !hasAtMostDecimals(value.price, PRICE_DECIMALS)) {
    issues.add('price', `A price has at most ${PRICE_DECIMALS} decimals (the currency's smallest unit is 0.000001 USD)`, 'decimal_places');
  }
  issues.throwIfAny();
  const known = Object.keys(schema.properties).filter((key) => value[key] !== undefined);
  return { policy_type: type, configuration: Object.fromEntries(known.map((key) => [key, value[key]])) } as PolicySettings;
}

/**
 * Every pattern the schema let through that is a regular expression (not `isLiteral`) must compile within
 * its budget, and the list's expressions within theirs (email-patterns.ts): a query checks each caller
 * against all of them on the event loop. A pattern over budget is refused before it is compiled.
 */
function checkPatterns(issues: Issues, patterns: readonly unknown[], key: string, isLiteral: (pattern: string) => boolean): void {
  let listSize = 0;
  patterns.forEach((pattern, index) => {
    if (typeof pattern !== 'string' || issues.has([key, index]) || isLiteral(pattern)) return;
    const estimate = estimatedProgramSize(pattern);
    listSize += estimate;
    if (estimate > PATTERN_PROGRAM_MAX) {
      issues.add([key, index], tooComplex(estimate), 'regex_too_complex');
      return;
    }
    try {
      const size = compileEmailPattern(pattern).programSize();
      if (size > PATTERN_PROGRAM_MAX) issues.add([key, index], tooComplex(size), 'regex_too_complex');
    } catch (error) {
      issues.add([key, index], `Invalid regular expression: ${(error as Error).message}`, 'regex_invalid');
    }
  });
  if (listSize > LIST_PROGRAM_MAX && !issues.has(key)) {
    issues.add(
      key,
      `These regular expressions together compile to about ${listSize} instructions, at most ${LIST_PROGRAM_MAX}: ` +
        'use fewer of them, or plain e-mails (which cost nothing to check)',
      'too_complex',
    );
  }
}

/** Whether a number is a whole count of 10^-decimals (within what a double can tell at the schema's maximum). */
function hasAtMostDecimals(value: number, decimals: number): boolean {
  const scaled = value * 10 ** decimals;
  return Math.abs(scaled - Math.round(scaled)) < 1e-3;
}
