import type { TSchema } from 'typebox';
import { ValidationError, type ValidationIssue } from '../domain/errors.ts';
import { type Configuration, maskedSecretKeys } from '../security/secret-config.ts';
import { checkObject, type Location, type ObjectCheck, type SchemaIssue } from '../util/json-schema.ts';
import { pathBeyondDepth } from './json-body.ts';

/**
 * Levels a free-form `configuration` may nest, itself counted: real ones use two or three (headers,
 * per-call options); ten leaves room for any of them and keeps every walk over the value shallow.
 */
export const MAX_CONFIGURATION_DEPTH = 10;

/**
 * Bytes of a `configuration` as JSON. Every query opens the configurations it uses and every view shows
 * them, so their size is paid again and again; 64 KiB holds any real one, a long system prompt included.
 */
export const MAX_CONFIGURATION_BYTES = 64 * 1024;

/**
 * Collects every problem of a body before answering, so the client can fix them all in one go; one issue
 * per location (the first found), as the schema mapping gives them.
 */
export class Issues {
  private readonly list: ValidationIssue[] = [];

  constructor(private readonly prefix: Location = ['body']) {}

  add(path: string | Location, msg: string, type = 'value_error'): void {
    const loc = [...this.prefix, ...(Array.isArray(path) ? path : [path])];
    if (!this.hasLoc(loc)) this.list.push({ loc, msg, type });
  }

  /** Issues whose locs are relative to this collector's prefix (a schema check's). */
  addAll(issues: readonly SchemaIssue[]): void {
    for (const issue of issues) this.add(issue.loc, issue.msg, issue.type);
  }

  /** Whether something is already wrong at `path` (a key, or an index path) or inside it: later checks of it can be skipped. */
  has(path: string | Location): boolean {
    const loc = [...this.prefix, ...(Array.isArray(path) ? path : [path])];
    return this.list.some((issue) => loc.every((segment, index) => issue.loc[index] === segment));
  }

  get empty(): boolean {
    return this.list.length === 0;
  }

  throwIfAny(): void {
    if (this.list.length > 0) throw new ValidationError(this.list);
  }

  private hasLoc(loc: Location): boolean {
    const key = JSON.stringify(loc);
    return this.list.some((issue) => JSON.stringify(issue.loc) === key);
  }
}

/**
 * The one path of a configuration (a dataset's, a model's, a policy's): its bounds (thrown at once), the
 * masks sent as values, then its type's schema (or a check built on util/json-schema.ts checkObject, as a
 * model's is), defaults filled in. Returns the checked configuration and the issues so far, for the code
 * checks of what no schema can say; the caller throws them.
 */
export function checkConfiguration(
  input: Configuration,
  check: TSchema | ((input: Configuration) => ObjectCheck),
): { value: Configuration; issues: Issues } {
  enforceConfigurationLimits(input);
  const issues = new Issues(['body', 'configuration']);
  rejectMaskedSecrets(issues, input);
  const checked = typeof check === 'function' ? check(input) : checkObject(check, input);
  issues.addAll(checked.issues);
  return { value: checked.value, issues };
}

/**
 * The depth and size bounds of a `configuration` (422 at `body.configuration...` when broken). Called before
 * anything else looks at the value: the depth is measured without recursion, and only a value within it
 * is serialised to measure its size.
 */
function enforceConfigurationLimits(config: Configuration): void {
  const issues = new Issues(['body', 'configuration']);
  const tooDeep = pathBeyondDepth(config, MAX_CONFIGURATION_DEPTH);
  if (tooDeep !== undefined) {
    issues.add(tooDeep, `Configuration should nest at most ${MAX_CONFIGURATION_DEPTH} levels deep`, 'too_deep');
  } else {
    const bytes = Buffer.byteLength(JSON.stringify(config));
    if (bytes > MAX_CONFIGURATION_BYTES) {
      issues.add([], `Configuration should be at most ${MAX_CONFIGURATION_BYTES} bytes as JSON, not ${bytes}`, 'too_long');
    }
  }
  issues.throwIfAny();
}

/** A secret (or a URL's user-info) sent as the mask, where no stored value can stand behind it (e.g. on create). */
function rejectMaskedSecrets(issues: Issues, config: Configuration): void {
  for (const path of maskedSecretKeys(config)) {
    issues.add(path, "'********' is how responses hide a secret, not a value: send the secret itself", 'value_error');
  }
}
