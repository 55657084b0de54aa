import { type Kysely, sql } from 'kysely';

/**
 * Where a tenant's public URL came from: `set` (the settings route or the console), `configured`
 * (SVC_PUBLIC_URL), `detected` (the public IP, when SVC_PUBLIC_URL is empty) or `tunnel`. URLs stored
 * before this have none and are shown as `set`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE tenant_settings ADD COLUMN public_url_source TEXT CHECK (public_url_source IN ('set', 'configured', 'detected', 'tunnel'))`.execute(
    db,
  );
}
