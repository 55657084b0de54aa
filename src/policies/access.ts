import { PolicyError } from '../domain/errors.ts';
import { type PolicyEntry, policyEntry } from '../domain/policy-metadata.ts';
import type { AccessConfiguration } from './codec.ts';
import { isPlainEmailPattern, matchesRegex, PatternBudgetError } from './email-patterns.ts';
import type { PolicyContext, PolicyHook } from './hooks.ts';

const ACCESS = { policy_type: 'access', kind: 'access' } as const;

/** Whether an e-mail matches a pattern: literally for plain addresses, else as a whole-string RE2 match. */
export function matchesPattern(email: string, pattern: string): boolean {
  if (isPlainEmailPattern(pattern)) return email.toLowerCase() === pattern.toLowerCase();
  return matchesRegex(email, pattern);
}

/** allow: only matching e-mails may query; deny: everyone but matching e-mails may (403 otherwise). */
export class AccessHook implements PolicyHook {
  constructor(private readonly configuration: AccessConfiguration) {}

  async pre(context: PolicyContext): Promise<void> {
    let allowed: boolean;
    let reason = `Access denied for ${context.senderEmail}`;
    try {
      const matched = this.configuration.patterns.some((pattern) => matchesPattern(context.senderEmail, pattern));
      allowed = this.configuration.mode === 'allow' ? matched : !matched;
    } catch (error) {
      // A pattern stored before patterns had a budget: refused rather than matched for seconds (fails closed).
      if (!(error instanceof PatternBudgetError)) throw error;
      allowed = false;
      reason = `This endpoint's access policy cannot be checked (${error.message}): its owner must simplify it`;
    }
    if (!allowed) {
      const entry = policyEntry({ ...ACCESS, status: 'rejected', reason_code: 'ACCESS_DENIED', reason });
      throw new PolicyError('refused', 'Permission Denied', reason, entry, 'access_denied');
    }
  }

  async post(): Promise<void> {}

  entry(): PolicyEntry {
    return policyEntry({ ...ACCESS, status: 'applied' });
  }
}
