import type { RE2JS } from 're2js';
import { PolicyError } from '../domain/errors.ts';
import { type PolicyEntry, policyEntry } from '../domain/policy-metadata.ts';
import type { AccessConfiguration } from './codec.ts';
import { compileEmailPattern, isPlainEmailPattern } from './configuration.ts';
import type { PolicyContext, PolicyHook } from './hooks.ts';

const ACCESS = { policy_type: 'access', kind: 'access' } as const;

// Patterns are compiled once per distinct text: policies change rarely, queries come often.
const compiled = new Map<string, RE2JS>();
const MAX_CACHED = 10_000;

function regex(pattern: string): RE2JS {
  let re = compiled.get(pattern);
  if (!re) {
    re = compileEmailPattern(pattern);
    if (compiled.size >= MAX_CACHED) compiled.clear();
    compiled.set(pattern, re);
  }
  return re;
}

/** Whether an e-mail matches a pattern: literally for plain addresses, else as a whole-string RE2 match. */
export function matchesPattern(email: string, pattern: string): boolean {
  if (isPlainEmailPattern(pattern)) return email.toLowerCase() === pattern.toLowerCase();
  return regex(pattern).matches(email);
}

/** allow: only matching e-mails may query; deny: everyone but matching e-mails may (403 otherwise). */
export class AccessHook implements PolicyHook {
  constructor(private readonly configuration: AccessConfiguration) {}

  async pre(context: PolicyContext): Promise<void> {
    const matched = this.configuration.patterns.some((pattern) => matchesPattern(context.senderEmail, pattern));
    const allowed = this.configuration.mode === 'allow' ? matched : !matched;
    if (!allowed) {
      const reason = `Access denied for ${context.senderEmail}`;
      const entry = policyEntry({ ...ACCESS, status: 'rejected', reason_code: 'ACCESS_DENIED', reason });
      throw new PolicyError('refused', 'Permission Denied', reason, entry, 'access_denied');
    }
  }

  async post(): Promise<void> {}

  entry(): PolicyEntry {
    return policyEntry({ ...ACCESS, status: 'applied' });
  }
}
