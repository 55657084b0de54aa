import { describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

/**
 * One clock (issue 25): src/ reads the time only through the injected `Clock` (src/util/clock.ts), so a
 * test's clock reaches every window, expiry and stored timestamp. Elapsed time (a deadline or backoff paced
 * by real sleeps) is measured with `performance.now()`, which no wall-clock change moves; a parsed date,
 * `new Date(value)`, is not a read of the time. jose reads the system's time unless handed the clock's, so
 * tokens are stamped with the clock's seconds and checked with its `currentDate`.
 */

const SRC = resolve(import.meta.dir, '../src');
const CLOCK = 'util/clock.ts';

/** `Date.now` (called or passed), `new Date()` and `Date()` without an argument. */
const TIME_READ = /\bDate\.now\b|\bnew\s+Date\s*\(\s*\)|(?<![\w.$])Date\s*\(\s*\)/;
/**
 * jose's claim setters that read the system's time themselves: `setIssuedAt()` without an argument, or any
 * of them given a duration string ('1h' from now) instead of the clock's seconds.
 */
const JOSE_TIME_READ = /\.set(IssuedAt|ExpirationTime|NotBefore)\s*\(\s*(\)|['"`])/;

/** Each `jwtVerify(...)` call's text, its arguments included (parentheses balanced). */
function jwtVerifyCalls(text: string): string[] {
  const calls: string[] = [];
  for (const match of text.matchAll(/\bjwtVerify\s*\(/g)) {
    let depth = 0;
    for (let index = match.index; index < text.length; index++) {
      if (text[index] === '(') depth++;
      if (text[index] === ')' && --depth === 0) {
        calls.push(text.slice(match.index, index + 1));
        break;
      }
    }
  }
  return calls;
}

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** The code without its comments (whole comment lines and trailing `// ...`), so prose may name what code may not call. */
function code(path: string): string {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line))
    .map((line) => line.replace(/(^|\s)\/\/.*$/, ''))
    .join('\n');
}

const files = sourceFiles(SRC).map((path) => ({ name: relative(SRC, path), text: code(path) }));

describe('the time is read through the injected clock', () => {
  test('no file of src/ but util/clock.ts calls Date.now() or new Date() without an argument', () => {
    const readers = files.filter(({ name, text }) => name !== CLOCK && TIME_READ.test(text)).map(({ name }) => name);
    expect(readers).toEqual([]);
  });

  test("jose stamps and checks tokens on the clock's time: no setIssuedAt() without it, no jwtVerify without currentDate", () => {
    const stamping = files.filter(({ text }) => JOSE_TIME_READ.test(text)).map(({ name }) => name);
    expect(stamping).toEqual([]);
    const checking = files.filter(({ text }) => jwtVerifyCalls(text).some((call) => !call.includes('currentDate'))).map(({ name }) => name);
    expect(checking).toEqual([]);
  });

  test('the guard sees a read of the time, and not a parsed date', () => {
    expect(TIME_READ.test('const at = Date.now();')).toBe(true);
    expect(TIME_READ.test('new ExpiringCache(10, Date.now)')).toBe(true);
    expect(TIME_READ.test('created_at: new Date().toISOString()')).toBe(true);
    expect(TIME_READ.test('const stamp = Date();')).toBe(true);
    expect(TIME_READ.test('const to = new Date(request.to);')).toBe(false);
    expect(TIME_READ.test('new Date(this.clock.now()).toISOString()')).toBe(false);
    expect(TIME_READ.test('const updated = myDate();')).toBe(false);
  });

  test("the guard sees jose reading the system's time, and not the clock's seconds", () => {
    expect(JOSE_TIME_READ.test('.setIssuedAt()')).toBe(true);
    expect(JOSE_TIME_READ.test(".setExpirationTime('3600s')")).toBe(true);
    expect(JOSE_TIME_READ.test('.setNotBefore(`2h`)')).toBe(true);
    expect(JOSE_TIME_READ.test('.setIssuedAt(issuedAt)')).toBe(false);
    expect(JOSE_TIME_READ.test('.setExpirationTime(issuedAt + ACCESS_TOKEN_SECONDS)')).toBe(false);
    const [bare, timed] = jwtVerifyCalls(
      "await jwtVerify(token, key, { algorithms: ['HS256'] }); await jwtVerify(token, keys(url), { currentDate: new Date(clock.now()) });",
    );
    expect(bare?.includes('currentDate')).toBe(false);
    expect(timed?.includes('currentDate')).toBe(true);
  });
});
