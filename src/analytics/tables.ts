import type { Generated, Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';

/**
 * The table only this module reads and writes (migration 0016, PostgreSQL's 0002): one row per topical word
 * of a recorded question (question-terms.ts), by the hour it was asked in, with no link to its usage row.
 */
interface QueryTermsTable {
  id: Generated<number>;
  tenant_id: string;
  endpoint_id: string;
  term: string;
  /** The start of the hour the question was asked in (ISO 8601, UTC). */
  asked_hour: string;
  origin: 'api' | 'playground';
}

export type AnalyticsDatabase = Database & { query_terms: QueryTermsTable };

/** The application's database, seen with this module's table too. */
export function withAnalyticsTables(db: Kysely<Database>): Kysely<AnalyticsDatabase> {
  return db.withTables<{ query_terms: QueryTermsTable }>();
}
