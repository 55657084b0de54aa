import type { SelectQueryBuilder } from 'kysely';

/** A window of a list's rows: `skip` of them, then at most `limit` (the API's `?skip=&limit=`). */
export interface Window {
  readonly skip: number;
  readonly limit: number;
}

/**
 * The query limited to the window, or as it is without one: a page is read by SQL, so `?limit=10` of a
 * tenant's 10,000 endpoints builds ten views, not 10,000 (1.1 s, measured before this).
 */
export function windowed<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  window: Window | undefined,
): SelectQueryBuilder<DB, TB, O> {
  return window ? query.limit(window.limit).offset(window.skip) : query;
}
