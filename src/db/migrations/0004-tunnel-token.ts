import { type Kysely, sql } from 'kysely';

/** A tenant's tunnel token (encrypted), so the tunnel reconnects after a restart (specification, Settings rule 3). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE tenant_settings ADD COLUMN tunnel_token TEXT`.execute(db);
}
