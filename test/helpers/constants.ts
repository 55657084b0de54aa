/** SVC_ADMIN_API_KEY of the tests that run with one (at least 16 characters, no whitespace). */
export const ADMIN_KEY = 'admin-key-for-tests';

/** A timestamp as knode stores and answers it: ISO 8601, UTC, with a trailing Z. */
export const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** A well-formed id that names nothing: a 404, never a 422. */
export const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

/** The window of a test double whose model reads any text whole: one vector a chunk, as before pieces. */
export const WHOLE_TEXT_WINDOW = { tokens: Number.MAX_SAFE_INTEGER, tokensOf: () => 1 } as const;
