import { sql } from 'kysely';
import type { DbOrTransaction } from './database.ts';

/** The tables whose rows are counted per owner: a tenant's resources, an endpoint's policies. */
export type CountedTable = 'endpoints' | 'datasets' | 'models' | 'policies' | 'marketplaces';

/**
 * How many rows of `table` match every `column = value` of `where` (a page's total, a quota's count).
 * `where` must name at least one column: there is no count of a whole table.
 */
export async function countRows(
  db: DbOrTransaction,
  table: CountedTable,
  where: Partial<Record<'tenant_id' | 'endpoint_id', string>>,
): Promise<number> {
  const conditions = Object.entries(where)
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([column, value]) => sql`${sql.ref(column)} = ${value}`);
  if (conditions.length === 0) throw new Error(`countRows(${table}) needs a condition`);
  const { rows } = await sql<{
    count: number;
  }>`SELECT count(*) AS count FROM ${sql.table(table)} WHERE ${sql.join(conditions, sql` AND `)}`.execute(db);
  return Number(rows[0]?.count ?? 0);
}
