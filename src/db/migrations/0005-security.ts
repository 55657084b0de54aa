import { type Kysely, sql } from 'kysely';

/**
 * The security review's storage (API-CONTRACT 3 and 6):
 * - `tenants.ingestion_roots`: folders the operator granted a tenant (JSON array of absolute paths);
 * - `datasets.error`: why a dataset could not start (its folder left the tenant's roots...), shown in its view;
 * - `marketplaces.account`: the hub account (normalised URL + username) a record logs in as, unique across
 *   tenants, so no tenant can claim another's hub identity. Records that already collide keep their account on
 *   the oldest one only; the others get none and are deactivated (reactivating them answers 409).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE tenants ADD COLUMN ingestion_roots TEXT NOT NULL DEFAULT '[]'`.execute(db);
  await sql`ALTER TABLE datasets ADD COLUMN error TEXT`.execute(db);
  await sql`ALTER TABLE marketplaces ADD COLUMN account TEXT`.execute(db);
  const rows = await sql<{ id: string; url: string; username: string }>`
    SELECT id, url, username FROM marketplaces ORDER BY created_at, rowid`.execute(db);
  const taken = new Set<string>();
  for (const row of rows.rows) {
    const account = hubAccountKey(row.url, row.username);
    if (taken.has(account)) {
      await sql`UPDATE marketplaces SET is_active = 0 WHERE id = ${row.id}`.execute(db);
      continue;
    }
    taken.add(account);
    await sql`UPDATE marketplaces SET account = ${account} WHERE id = ${row.id}`.execute(db);
  }
  await sql`CREATE UNIQUE INDEX marketplaces_account ON marketplaces(account)`.execute(db);
}

/** marketplaces/account.ts as it was when this migration was written: migrations are frozen, so it is copied. */
function hubAccountKey(url: string, username: string): string {
  let base = url.trim().replace(/\/+$/, '').toLowerCase();
  try {
    const parsed = new URL(url);
    base = `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
  } catch {}
  return `${base} ${username.trim().toLowerCase()}`;
}
