import { QuotaExceededError, type TenantQuotas } from '../domain/quotas.ts';
import { countRows } from './counts.ts';
import { type Db, type DbOrTransaction, inTransaction } from './database.ts';

/** Which rows count against a quota: a tenant's endpoints, datasets or models, or an endpoint's policies. */
export interface QuotaScope {
  readonly quota: keyof TenantQuotas;
  readonly limit: number;
  readonly column: 'tenant_id' | 'endpoint_id';
  readonly owner: string;
}

/**
 * Runs `insert` only while the scope holds fewer rows than its limit. The count and the insert run in one
 * transaction, which holds knode's one SQLite connection, so parallel creations cannot all pass a count
 * taken before any of them was written.
 */
export async function insertWithinQuota(
  db: DbOrTransaction,
  scope: QuotaScope,
  insert: (db: DbOrTransaction) => Promise<unknown>,
): Promise<void> {
  if (scope.limit === 0) {
    await insert(db);
    return;
  }
  const checked = async (trx: DbOrTransaction) => {
    if ((await countRows(trx, scope.quota, { [scope.column]: scope.owner })) >= scope.limit)
      throw new QuotaExceededError(scope.quota, scope.limit, scope.column === 'endpoint_id' ? 'endpoint' : 'tenant');
    await insert(trx);
  };
  if (db.isTransaction) await checked(db);
  else await inTransaction(db as Db, checked);
}
