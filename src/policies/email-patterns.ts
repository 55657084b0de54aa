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

/**
 * The work a pattern may cost, in RE2 program instructions. Matching is linear in the e-mail times the
 * program: `(.{0,99}a){9}z` (1,812 instructions) takes 9 ms against a 252-character address here, so a list
 * within LIST_PROGRAM_MAX costs at most about 25 ms a check; ordinary e-mail patterns are 10 to 120.
 */
export const PATTERN_PROGRAM_MAX = 1_000;
export const LIST_PROGRAM_MAX = 5_000;

/** A pattern too costly to compile or match (its owner must simplify it). */
export class PatternBudgetError extends Error {
  override readonly name = 'PatternBudgetError';
}

// Compiled once per distinct text: policies change rarely, queries come often.
const compiled = new Map<string, RE2JS>();
const MAX_CACHED = 10_000;

/**
 * Whether the whole e-mail matches a regular expression (compiled on first use, then cached). A pattern
 * over PATTERN_PROGRAM_MAX (only one stored before the budget existed can be) is never compiled here:
 * PatternBudgetError, which the hooks turn into a refusal.
 */
export function matchesRegex(email: string, pattern: string): boolean {
  let re = compiled.get(pattern);
  if (!re) {
    const size = estimatedProgramSize(pattern);
    if (size > PATTERN_PROGRAM_MAX) throw new PatternBudgetError(tooComplex(size));
    re = compileEmailPattern(pattern);
    if (compiled.size >= MAX_CACHED) compiled.clear();
    compiled.set(pattern, re);
  }
  return re.matches(email);
}

/** Why a pattern of this (estimated or compiled) size is refused. */
export function tooComplex(size: number): string {
  return (
    `Pattern too complex: it compiles to about ${size} instructions, at most ${PATTERN_PROGRAM_MAX} ` +
    '(a counted repetition such as {0,99} multiplies what it repeats)'
  );
}

/**
 * An estimate of the size of RE2's program for a pattern, read off its text without compiling it: every
 * atom (a character, an escape, a class) counts 1, a group its contents + 2, an operator 1, and a counted
 * repetition multiplies what it repeats. Compiling is linear in the program's size but a 500-character
 * pattern can compile to 1.4 million instructions (130 ms for 450,000, measured on this 2-core machine), so
 * a pattern is compiled only when this estimate is within bounds; its real size is checked after.
 */
export function estimatedProgramSize(pattern: string): number {
  const tally = new ProgramSizeTally();
  let i = 0;
  while (i < pattern.length) i = tally.read(pattern, i);
  return tally.total();
}

/** The running estimate of estimatedProgramSize: one frame per open group, each with its size and its last item's. */
class ProgramSizeTally {
  private readonly frames = [{ total: 0, last: 0 }];

  /** Counts the item at `i` and says where the next one starts. */
  read(pattern: string, i: number): number {
    const character = pattern[i];
    if (character === '\\') {
      this.atom(1);
      return escapeEnd(pattern, i);
    }
    if (character === '[') {
      this.atom(1);
      return classEnd(pattern, i) + 1;
    }
    if (character === '(') {
      this.frames.push({ total: 0, last: 0 });
      return i + 1;
    }
    if (character === ')') {
      const group = this.frames.length > 1 ? this.frames.pop() : undefined;
      this.atom((group?.total ?? 0) + 2);
      return i + 1;
    }
    const counted = character === '{' ? countedRepetition(pattern, i) : undefined;
    if (counted) {
      this.repeatLast(counted.times);
      return i + counted.length;
    }
    this.atom(1);
    return i + 1;
  }

  /** The whole pattern's estimate, groups left open closed. */
  total(): number {
    while (this.frames.length > 1) this.atom((this.frames.pop()?.total ?? 0) + 2);
    return this.top().total;
  }

  private top(): { total: number; last: number } {
    return this.frames[this.frames.length - 1] as { total: number; last: number };
  }

  private atom(size: number): void {
    this.top().total += size;
    this.top().last = size;
  }

  private repeatLast(times: number): void {
    const repeated = this.top().last * times + times;
    this.top().total += repeated - this.top().last;
    this.top().last = repeated;
  }
}

/** Where an escape starting at `start` ends: \x{...}, \p{...} and \P{...} hold braces that are not repetitions. */
function escapeEnd(pattern: string, start: number): number {
  const braced = 'xpP'.includes(pattern[start + 1] ?? '') && pattern[start + 2] === '{';
  if (!braced) return start + 2;
  const end = pattern.indexOf('}', start + 3);
  return end < 0 ? pattern.length : end + 1;
}

/** A counted repetition ({2}, {2,}, {2,5}) at `start`: its length in the pattern and the most times it repeats (at least 1). */
function countedRepetition(pattern: string, start: number): { length: number; times: number } | undefined {
  const match = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(start, start + 12));
  if (!match) return undefined;
  const [text, min, comma, max] = match;
  const times = Math.max(1, comma === undefined ? Number(min) : max === '' ? Number(min) + 1 : Number(max));
  return { length: text.length, times };
}

/** Where a character class opened at `start` closes (a `]` first is literal, `[:alpha:]` is one item). */
function classEnd(pattern: string, start: number): number {
  let j = start + 1;
  if (pattern[j] === '^') j++;
  if (pattern[j] === ']') j++;
  while (j < pattern.length && pattern[j] !== ']') {
    if (pattern[j] === '\\') j++;
    else if (pattern[j] === '[' && pattern[j + 1] === ':') {
      const end = pattern.indexOf(':]', j + 2);
      if (end >= 0) j = end + 1;
    }
    j++;
  }
  return j;
}
