import { RE2JS } from 're2js';
import type { MppConfiguration, PolicyOfType, PolicyRecord } from './codec.ts';
import { isPlainEmailPattern, matchesRegex, PatternBudgetError } from './email-patterns.ts';

/**
 * Who pays which price (API-CONTRACT 10.3 points 8 and 9): the `applied_to` entries of `mpp` policies, read
 * as syft-space reads them, and the tier a caller falls in. An entry is an exact address, a regular
 * expression, an e-mail glob (`*`, `?`: what syft-space's owners write, `*@example.com`) or a literal;
 * all match the whole address, case-insensitively. Of the policies matching a caller, the most specific
 * wins, so a $0.01 tier for bob beats a $0.05 tier for everyone whatever order they were created in.
 */

export type PayerPatternKind = 'email' | 'regex' | 'glob' | 'literal';

/** Regular-expression syntax (the contract's list): `.*` as a pair, the others alone. */
const REGEX_SYNTAX = /\.\*|[\\()[\]^$+{}|]/;

export function payerPatternKind(entry: string): PayerPatternKind {
  if (isPlainEmailPattern(entry)) return 'email';
  if (REGEX_SYNTAX.test(entry)) return 'regex';
  if (entry.includes('*') || entry.includes('?')) return 'glob';
  return 'literal';
}

/** A glob as the RE2 pattern that means the same: `*` any run, `?` one character, the rest literal. */
export function globAsRegex(glob: string): string {
  return glob.replace(/[*?]|[^*?]+/g, (part) => (part === '*' ? '.*' : part === '?' ? '.' : RE2JS.quote(part)));
}

/**
 * Whether an entry names this caller. A regular expression stored before patterns had a budget, and now
 * over it, names no one (the caller falls to another tier, or none): never matched for seconds.
 */
function matchesPayer(email: string, entry: string): boolean {
  const kind = payerPatternKind(entry);
  if (kind === 'email' || kind === 'literal') return email.toLowerCase() === entry.toLowerCase();
  try {
    return matchesRegex(email, kind === 'glob' ? globAsRegex(entry) : entry);
  } catch (error) {
    if (error instanceof PatternBudgetError) return false;
    throw error;
  }
}

/**
 * How specific an entry is (syft-space's scoring): an exact address its length + 100; a glob or literal
 * its literal characters minus 2 per `*` (`?` counts 0), so `*` alone is -2; a regular expression 0.
 */
export function specificity(entry: string): number {
  switch (payerPatternKind(entry)) {
    case 'email':
      return entry.length + 100;
    case 'regex':
      return 0;
    default: {
      const stars = entry.split('*').length - 1;
      const questions = entry.split('?').length - 1;
      return entry.length - stars - questions - 2 * stars;
    }
  }
}

/**
 * The `mpp` policy that prices a caller's query, or undefined when none applies: the best score of the
 * entries that match, ties to the lower price, then to the older policy (`policies` in creation order).
 */
export function pricingTier(policies: readonly PolicyOfType<'mpp'>[], email: string): PolicyOfType<'mpp'> | undefined {
  let best: { policy: PolicyOfType<'mpp'>; score: number } | undefined;
  for (const policy of policies) {
    const scores = policy.configuration.applied_to.filter((entry) => matchesPayer(email, entry)).map(specificity);
    if (scores.length === 0) continue;
    const score = Math.max(...scores);
    const better = !best || score > best.score || (score === best.score && policy.configuration.price < best.policy.configuration.price);
    if (better) best = { policy, score };
  }
  return best?.policy;
}

/**
 * `applied_to` as SyftHub understands it (point 9): the hub shows a viewer the policies naming the viewer's
 * exact address, else those holding `"*"`. Exact addresses go out as they are (lower case), every other
 * entry as one `"*"`, so a glob or regex tier is shown to everyone without a tier of their own: no price
 * is hidden on the hub.
 */
export function publishedAppliedTo(entries: readonly string[]): string[] {
  const published = entries.map((entry) => (payerPatternKind(entry) === 'email' ? entry.toLowerCase() : '*'));
  return [...new Set(published)];
}

/** A policy as it is published: an `mpp` price's `applied_to` in the hub's terms, other policies as they are. */
export function publishedPolicy<P extends Pick<PolicyRecord, 'policy_type' | 'configuration'>>(policy: P): P {
  if (policy.policy_type !== 'mpp') return policy;
  const configuration = policy.configuration as MppConfiguration;
  return { ...policy, configuration: { ...configuration, applied_to: publishedAppliedTo(configuration.applied_to) } };
}
