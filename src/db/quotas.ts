import { QuotaExceededError, type TenantQuotas } from '../domain/quotas.ts';
import { countRows } from './counts.ts';
import { type Db, type DbOrTransaction, inTransaction, isPostgres } from './database.ts';

/** Which rows count against a quota: a tenant's endpoints, datasets or models, or an endpoint's policies. */
export interface QuotaScope {
  readonly quota: keyof TenantQuotas;
  readonly limit: number;
  readonly column: 'tenant_id' | 'endpoint_id';
  readonly owner: string;
}

/**
 * Runs `insert` only while the scope holds fewer rows than its limit. The count and the insert run in one
 * transaction. On SQLite that transaction holds knode's one connection, so parallel creations cannot all
 * pass a count taken before any of them was written. On PostgreSQL several replicas write at once, and
 * under READ COMMITTED each would count the rows committed before its own (measured: 10 creations at once
 * against a quota of 3 made 8 to 10): the transaction first locks the owner's row (the tenant, or the
 * endpoint of a policy), so creations for one owner take turns, and each counts what the one before it
 * committed.
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
    if (isPostgres(trx)) await lockOwner(trx, scope);
    if ((await countRows(trx, scope.quota, { [scope.column]: scope.owner })) >= scope.limit)
      throw new QuotaExceededError(scope.quota, scope.limit, scope.column === 'endpoint_id' ? 'endpoint' : 'tenant');
    await insert(trx);
  };
  if (db.isTransaction) await checked(db);
  else await inTransaction(db as Db, checked);
}

/**
 * Locks the scope's owner row until the transaction ends. FOR NO KEY UPDATE conflicts with itself, so two
 * creations for one owner wait for each other, but not with the key-share locks that inserting rows which
 * merely reference the owner takes (usage rows, a dataset's files), which go on meanwhile.
 */
async function lockOwner(trx: DbOrTransaction, scope: QuotaScope): Promise<void> {
  const owners = scope.column === 'tenant_id' ? 'tenants' : 'endpoints';
  await trx.selectFrom(owners).select('id').where('id', '=', scope.owner).forNoKeyUpdate().execute();
}
