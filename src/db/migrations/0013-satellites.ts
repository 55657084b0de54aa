import { type Kysely, sql } from 'kysely';

/**
 * The satellite a marketplace knows this knode as (API-CONTRACT 9.1): the id the hub gave it, which the
 * hub's tokens carry as their audience and which publish, sync, health and /verify name, and the origin
 * it was registered at (so that a later public URL is a move, not a second satellite). Both stay null on a
 * hub without the registry (2026-07) and until the tenant has a public URL.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE marketplaces ADD COLUMN satellite_id TEXT`.execute(db);
  await sql`ALTER TABLE marketplaces ADD COLUMN satellite_url TEXT`.execute(db);
}
