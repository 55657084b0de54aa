/**
 * The bounds and defaults of request fields that the console's forms repeat (`maxLength`, `min`/`max`, a
 * starting value): one source for the route schemas that enforce them and for web/, which imports this
 * file at run time. So it imports nothing (test/architecture.test.ts checks that), and holds only numbers
 * and strings.
 */

/** The name of a dataset, model, endpoint, policy or marketplace (http/schemas.ts `Name`). */
export const NAME_MAX_LENGTH = 200;

/** A summary, tags, a URL (http/schemas.ts `ShortText`). */
export const SHORT_TEXT_MAX_LENGTH = 2000;

/** An endpoint's slug (endpoints/schemas.ts `Slug`); SyftHub lists slugs of at most 63. */
export const SLUG_MIN_LENGTH = 3;
export const SLUG_MAX_LENGTH = 64;

/** A user's password at registration (auth/schemas.ts). */
export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 128;

/** A tenant's name: a letter or digit, then letters, digits, `_`, `.` or `-`; 64 characters at most. */
export const TENANT_NAME_MAX_LENGTH = 64;
export const TENANT_NAME_PATTERN = `^[A-Za-z0-9][A-Za-z0-9_.-]{0,${TENANT_NAME_MAX_LENGTH - 1}}$`;

/** An endpoint's `generation_defaults`, and a query's own fields, which have the same ranges. */
export const MAX_TOKENS_MAX = 32_768;
export const TEMPERATURE_MAX = 2;

/** A query's passages (`limit`) and the clients' threshold (specification, Query request). */
export const QUERY_LIMIT_MAX = 100;
export const QUERY_LIMIT_DEFAULT = 5;
export const QUERY_THRESHOLD_DEFAULT = 0.5;

/** A dataset search's results (`POST /datasets/{id}/search`). */
export const SEARCH_LIMIT_MAX = 100;
export const SEARCH_LIMIT_DEFAULT = 10;

/** The specification's defaults of the query fields that generate, for a query and an endpoint that name none. */
export const SPEC_MAX_TOKENS = 100;
export const SPEC_TEMPERATURE = 0.7;

/** `POST /models/{id}/test`: a short prompt, a short answer. */
export const MODEL_TEST_PROMPT = 'Say hello in one short sentence.';
export const MODEL_TEST_MAX_TOKENS = 32;
export const MODEL_TEST_MAX_TOKENS_MAX = 256;
