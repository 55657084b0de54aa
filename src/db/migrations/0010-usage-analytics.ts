import { type Kysely, sql } from 'kysely';

/**
 * Usage analytics (GET /endpoints/{slug}/usage/summary): each recorded query keeps how long it took, its
 * prompt and completion tokens apart, whether it came from the console's playground, and which policy
 * refused it. Rows written before this have NULL there and count as queries without those figures.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE query_usage ADD COLUMN latency_ms INTEGER`.execute(db);
  await sql`ALTER TABLE query_usage ADD COLUMN prompt_tokens INTEGER`.execute(db);
  await sql`ALTER TABLE query_usage ADD COLUMN completion_tokens INTEGER`.execute(db);
  await sql`ALTER TABLE query_usage ADD COLUMN origin TEXT NOT NULL DEFAULT 'api' CHECK (origin IN ('api', 'playground'))`.execute(db);
  await sql`ALTER TABLE query_usage ADD COLUMN refused_by TEXT`.execute(db);
  // Summaries read one endpoint's rows over a time range.
  await sql`CREATE INDEX query_usage_endpoint_time ON query_usage(endpoint_id, created_at)`.execute(db);
}
