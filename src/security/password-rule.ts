import { dictionary } from '@zxcvbn-ts/language-common';

/**
 * What a new password must be (API-CONTRACT 3): 8 to 128 characters (the schema says so), not only
 * whitespace, and none of the commonly used passwords: the 49,233 of zxcvbn-ts's common list (from
 * leaked-password frequency counts, most common first), compared without case or surrounding spaces, so
 * `Password` and `12345678 ` are refused as well. The list is decompressed once, on the first registration.
 */
let common: ReadonlySet<string> | undefined;

function commonPasswords(): ReadonlySet<string> {
  common ??= new Set(dictionary['passwords-common'] as string[]);
  return common;
}

/** Why this password may not be used, or undefined when it may. */
export function passwordProblem(password: string): string | undefined {
  if (password.trim() === '') return 'A password cannot be only whitespace';
  if (commonPasswords().has(password.trim().toLowerCase())) {
    return 'This password is one of the most commonly used ones, which are tried first by anyone guessing: choose another';
  }
  return undefined;
}
