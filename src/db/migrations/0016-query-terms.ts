import { type Kysely, sql } from 'kysely';

/**
 * Tenant-wide analytics (GET /api/v1/analytics/..., issue 27 item 5).
 * - `query_terms`: the words a question was about (analytics/question-terms.ts: normalised, stop words left
 *   out, each at most once per question), one row each, kept by the hour the question was asked in. The
 *   question itself is stored nowhere: the word cloud is counted from these rows, which name neither the
 *   caller nor the exact time, so they cannot be put back together into a question and who asked it.
 *   `origin` as in query_usage: the owner's questions from the console's playground can be left out. They go
 *   with their endpoint (or tenant) when it is deleted.
 * - `query_usage_tenant_time`: the tenant-wide figures read a tenant's rows over a time range (the existing
 *   indexes start with the endpoint).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE query_terms (
      id INTEGER PRIMARY KEY,
      tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
      endpoint_id TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
      term TEXT NOT NULL,
      asked_hour TEXT NOT NULL,
      origin TEXT NOT NULL DEFAULT 'api' CHECK (origin IN ('api', 'playground'))
    )`.execute(db);
  await sql`CREATE INDEX query_terms_tenant_time ON query_terms(tenant_id, asked_hour)`.execute(db);
  await sql`CREATE INDEX query_terms_endpoint_time ON query_terms(endpoint_id, asked_hour)`.execute(db);
  await sql`CREATE INDEX query_usage_tenant_time ON query_usage(tenant_id, created_at)`.execute(db);
}
