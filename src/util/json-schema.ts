/**
 * JSON Schema validation (Ajv) worded the way FastAPI/pydantic words a 422: one `{loc, msg, type}` per
 * location. The routes' schemas and the configurations' schemas go through this one mapping, so the same
 * mistake reads the same wherever it is made.
 */
import Ajv, { type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { TSchema } from 'typebox';
import { baseUrlProblem, isHttpUrl } from './url.ts';

export type Location = (string | number)[];

/** One problem with a value, at `loc` (its path, from the root the caller names). */
export interface SchemaIssue {
  loc: Location;
  msg: string;
  type: string;
}

/**
 * A string with at least one visible character; the mapping words a miss as "blank", not as a regex. Any other
 * `pattern` is worded by its schema's `errorMessage` when it has one (the 422 is read by people, in the console
 * too), else quoted with the schema's first example.
 */
export const NOT_BLANK = '\\S';

/** An absolute http(s) URL, checked the way the URLs will be used (WHATWG URL parsing). */
const HTTP_URL_FORMAT = 'http-url';

/** A URL that paths are appended to (a model's or embedder's server): no query string or fragment. */
export const BASE_URL_FORMAT = 'base-url';

/** A service's URL whose credentials have fields of their own (a marketplace): a base URL without user information. */
export const SERVICE_URL_FORMAT = 'service-url';

export function makeAjv(options: Options = {}): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
    // NaN and Infinity are not numbers a client can mean (and JSON cannot carry them).
    strictNumbers: true,
    // The failing schema rides along with each error, so the mapping can quote its `examples`.
    verbose: true,
    ...options,
  });
  addFormats(ajv);
  ajv.addFormat(HTTP_URL_FORMAT, { type: 'string', validate: isHttpUrl });
  ajv.addFormat(BASE_URL_FORMAT, { type: 'string', validate: (value) => baseUrlProblem(value, { userInfo: true }) === undefined });
  ajv.addFormat(SERVICE_URL_FORMAT, { type: 'string', validate: (value) => baseUrlProblem(value, { userInfo: false }) === undefined });
  return ajv;
}

const TYPE_ISSUES: Record<string, { msg: string; type: string }> = {
  string: { msg: 'Input should be a valid string', type: 'string_type' },
  integer: { msg: 'Input should be a valid integer', type: 'int_type' },
  number: { msg: 'Input should be a valid number', type: 'float_type' },
  boolean: { msg: 'Input should be a valid boolean', type: 'bool_type' },
  object: { msg: 'Input should be a valid dictionary', type: 'dict_type' },
  array: { msg: 'Input should be a valid list', type: 'list_type' },
  null: { msg: 'Input should be null', type: 'none_type' },
};

const FORMAT_ISSUES: Record<string, { msg: string; type: string }> = {
  [HTTP_URL_FORMAT]: { msg: 'Input should be a valid http or https URL', type: 'url_parsing' },
  [BASE_URL_FORMAT]: { msg: 'Input should be an http or https URL without a query string (?) or fragment (#)', type: 'url_parsing' },
  [SERVICE_URL_FORMAT]: {
    msg: 'Input should be an http or https URL without a query string (?), fragment (#) or user name and password',
    type: 'url_parsing',
  },
};

const plural = (count: unknown, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;

/** Maps one Ajv error to `{loc, msg, type}`, its path appended to `prefix`. */
function toIssue(prefix: Location, error: ErrorObject): SchemaIssue {
  const loc: Location = [...prefix];
  for (const segment of error.instancePath.split('/').slice(1)) {
    const key = segment.replace(/~1/g, '/').replace(/~0/g, '~');
    loc.push(/^\d+$/.test(key) ? Number(key) : key);
  }
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return { loc: [...loc, String(params.missingProperty)], msg: 'Field required', type: 'missing' };
    case 'type': {
      const expected = String(params.type).split(',')[0] ?? '';
      return { loc, ...(TYPE_ISSUES[expected] ?? { msg: `Input should be of type ${params.type}`, type: 'type_error' }) };
    }
    case 'minLength':
      return { loc, msg: `String should have at least ${plural(params.limit, 'character')}`, type: 'string_too_short' };
    case 'maxLength':
      return { loc, msg: `String should have at most ${plural(params.limit, 'character')}`, type: 'string_too_long' };
    case 'pattern': {
      if (params.pattern === NOT_BLANK) return { loc, msg: 'String should not be blank', type: 'string_too_short' };
      // A pattern is for machines: a schema that words its rule for people (`errorMessage`) is quoted instead.
      const worded = error.parentSchema?.errorMessage;
      if (typeof worded === 'string') return { loc, msg: worded, type: 'string_pattern_mismatch' };
      const example = (error.parentSchema?.examples as unknown[] | undefined)?.[0];
      const hint = typeof example === 'string' ? `, e.g. '${example}'` : '';
      return { loc, msg: `String should match pattern '${params.pattern}'${hint}`, type: 'string_pattern_mismatch' };
    }
    case 'format':
      return {
        loc,
        ...(FORMAT_ISSUES[String(params.format)] ?? { msg: `Input should be a valid ${params.format}`, type: `${params.format}_parsing` }),
      };
    case 'minimum':
      return { loc, msg: `Input should be greater than or equal to ${params.limit}`, type: 'greater_than_equal' };
    case 'exclusiveMinimum':
      return { loc, msg: `Input should be greater than ${params.limit}`, type: 'greater_than' };
    case 'maximum':
      return { loc, msg: `Input should be less than or equal to ${params.limit}`, type: 'less_than_equal' };
    case 'exclusiveMaximum':
      return { loc, msg: `Input should be less than ${params.limit}`, type: 'less_than' };
    case 'enum':
      return {
        loc,
        msg: `Input should be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
        type: 'enum',
      };
    case 'minItems':
      return { loc, msg: `List should have at least ${plural(params.limit, 'item')}`, type: 'too_short' };
    case 'maxItems':
      return { loc, msg: `List should have at most ${plural(params.limit, 'item')}`, type: 'too_long' };
    case 'additionalProperties':
      return { loc: [...loc, String(params.additionalProperty)], msg: 'Extra inputs are not permitted', type: 'extra_forbidden' };
    case 'minProperties':
      return { loc, msg: `At least ${params.limit} field(s) must be given`, type: 'missing' };
    case 'maxProperties':
      return { loc, msg: `Should have at most ${plural(params.limit, 'field')}`, type: 'too_long' };
    default:
      return { loc, msg: error.message ?? 'Invalid value', type: 'value_error' };
  }
}

/**
 * Ajv's errors as issues, one per location. An anyOf failure (e.g. "a UUID or null") reports every
 * branch plus a summary line; of those, the branch that got furthest (not a bare type mismatch, when
 * there is one) says what is wrong. Never empty: a failure without errors is one issue at `prefix`.
 */
export function schemaIssues(prefix: Location, errors: readonly ErrorObject[]): SchemaIssue[] {
  // One issue per location: the first rule broken says enough (an empty name is not also "blank").
  const byLoc = new Map<string, SchemaIssue>();
  for (const issue of tellingErrors(errors).map((error) => toIssue(prefix, error))) {
    const key = JSON.stringify(issue.loc);
    if (!byLoc.has(key)) byLoc.set(key, issue);
  }
  const mapped = [...byLoc.values()];
  return mapped.length > 0 ? mapped : [{ loc: [...prefix], msg: 'Invalid value', type: 'value_error' }];
}

/** The errors worth telling: those outside unions as they are, and of each union's branches the one that got furthest. */
function tellingErrors(errors: readonly ErrorObject[]): ErrorObject[] {
  const unionPaths = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  // A branch that got inside the value (e.g. a list whose item is wrong) says more than "not a string".
  const wentDeeper = (path: string) => errors.some((e) => e.instancePath.startsWith(`${path}/`));
  const chosen = new Map<string, ErrorObject>();
  const result: ErrorObject[] = [];
  for (const error of errors) {
    if (error.keyword === 'anyOf' || error.keyword === 'if') continue;
    if (error.keyword === 'type' && unionPaths.has(error.instancePath) && wentDeeper(error.instancePath)) continue;
    if (!unionPaths.has(error.instancePath) || error.keyword === 'required') {
      result.push(error);
      continue;
    }
    const previous = chosen.get(error.instancePath);
    if (!previous || (previous.keyword === 'type' && error.keyword !== 'type')) chosen.set(error.instancePath, error);
  }
  result.push(...chosen.values());
  return result;
}

// Configurations are JSON as sent: "5" is not a number, "true" is not a boolean.
const objectAjv = makeAjv({ coerceTypes: false });
const compiled = new WeakMap<TSchema, ValidateFunction>();

function validatorOf(schema: TSchema): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = objectAjv.compile(schema);
    compiled.set(schema, validate);
  }
  return validate;
}

/** What `checkObject` found: the object with the schema's defaults filled in, and its issues (locs from the object). */
export interface ObjectCheck {
  value: Record<string, unknown>;
  issues: SchemaIssue[];
}

/**
 * Checks a free-form object (a dataset's, model's or policy's configuration) against the schema of its
 * type, and fills in the schema's defaults. A key given as `null` counts as not given: its default
 * applies, a required one is missing, and otherwise the null is kept as sent. The defaults are top-level
 * ones: the object is copied one level deep, never walked (configurations may nest).
 */
export function checkObject(schema: TSchema, input: unknown): ObjectCheck {
  const validate = validatorOf(schema);
  const issuesOf = (value: unknown) => (validate(value) ? [] : schemaIssues([], validate.errors ?? []));
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return { value: {}, issues: issuesOf(input) };
  // fromEntries, not assignment: a key named `__proto__` must stay a key.
  const given: Record<string, unknown> = Object.fromEntries(Object.entries(input).filter(([, value]) => value !== null));
  const issues = issuesOf(given);
  // Nulls stay where no default took their place (keys keep their order): a configuration keeps what it was given.
  return { value: Object.fromEntries([...Object.entries(input), ...Object.entries(given)]), issues };
}
