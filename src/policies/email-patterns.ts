import { RE2JS } from 're2js';

/**
 * The e-mail patterns of access lists and prices (API-CONTRACT 4 and 10.3): what a plain address is, and
 * regular expressions compiled once. They run on RE2's linear-time engine, so no pattern an endpoint owner
 * writes can make a query hang on catastrophic backtracking; they match case-insensitively and must match
 * the whole e-mail.
 */

/** A pattern made only of e-mail characters is an exact address, compared literally (API-CONTRACT 4). */
const PLAIN_EMAIL = /^[A-Za-z0-9._%+-]+@[A-Za-z0-9._%+-]+$/;

export function isPlainEmailPattern(pattern: string): boolean {
  return PLAIN_EMAIL.test(pattern);
}

/** Compiles a pattern (throws on a syntax error); what the configuration checks call. */
export function compileEmailPattern(pattern: string): RE2JS {
  return RE2JS.compile(pattern, RE2JS.CASE_INSENSITIVE);
}

// Compiled once per distinct text: policies change rarely, queries come often.
const compiled = new Map<string, RE2JS>();
const MAX_CACHED = 10_000;

/** Whether the whole e-mail matches a regular expression (compiled on first use, then cached). */
export function matchesRegex(email: string, pattern: string): boolean {
  let re = compiled.get(pattern);
  if (!re) {
    re = compileEmailPattern(pattern);
    if (compiled.size >= MAX_CACHED) compiled.clear();
    compiled.set(pattern, re);
  }
  return re.matches(email);
}
