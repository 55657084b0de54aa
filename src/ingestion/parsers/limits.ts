import { ParseError } from './types.ts';

/**
 * How much one file may cost (API-CONTRACT 2): SVC_MAX_FILE_MB bytes read, SVC_MAX_TEXT_MB bytes of
 * text extracted. Without them one file (a 510 KB DOCX inflating to 500 MB of XML, a 200 MB log) held
 * gigabytes of memory and both embedding threads for hours.
 */
export interface FileLimits {
  readonly maxFileBytes: number;
  readonly maxTextBytes: number;
}

const MEGABYTE = 1024 * 1024;

/**
 * No limit: for callers that parse files they trust (tests, tools). Ingestion always passes the
 * configured limits; its PrepareOptions cannot be built without them.
 */
export const NO_LIMITS: FileLimits = Object.freeze({ maxFileBytes: Number.POSITIVE_INFINITY, maxTextBytes: Number.POSITIVE_INFINITY });

/** "150.0 MB": one decimal, so a file just over the limit does not read as equal to it. */
export function megabytes(bytes: number): string {
  return `${(bytes / MEGABYTE).toFixed(1)} MB`;
}

/** The limit as the operator wrote it ("100 MB"), so the reason names the setting to change. */
export function setting(bytes: number): string {
  return `${Math.round((bytes / MEGABYTE) * 100) / 100} MB`;
}

/** `soFar`: the file grew while it was read, and this is where reading stopped. */
/** The size with enough decimals to differ from the limit it exceeds ("20.0 MB, more than 20 MB" would puzzle). */
function beyond(bytes: number, limit: number): string {
  for (let digits = 1; digits <= 6; digits++) {
    const amount = (bytes / MEGABYTE).toFixed(digits);
    if (Number(amount) > limit / MEGABYTE) return `${amount} MB`;
  }
  return `${bytes} bytes`;
}

export function fileTooLarge(size: number, maxFileBytes: number, soFar = false): ParseError {
  const amount = soFar ? `more than ${megabytes(size)}` : beyond(size, maxFileBytes);
  return new ParseError('too_large', `file is ${amount}, larger than SVC_MAX_FILE_MB (${setting(maxFileBytes)})`);
}

/** `bytes` is what was found so far: a parser that stops early knows only that it is more. */
export function textTooLarge(bytes: number, limits: FileLimits, soFar = false): ParseError {
  const amount = soFar ? `more than ${megabytes(bytes)}` : beyond(bytes, limits.maxTextBytes);
  return new ParseError('too_large', `the file holds ${amount} of text, more than SVC_MAX_TEXT_MB (${setting(limits.maxTextBytes)})`);
}

/** UTF-8 size of a string without encoding it. */
export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
