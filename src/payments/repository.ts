import type { DbOrTransaction } from '../db/database.ts';
import type { SecretBox } from '../security/secret-box.ts';
import { type PaymentWallet, WALLET_COLUMNS, walletCodec } from './codec.ts';

/** Payment wallets, one per tenant (all SQL of them; the tenant id first). */
export class WalletRepository {
  private readonly codec: ReturnType<typeof walletCodec>;

  constructor(
    private readonly db: DbOrTransaction,
    box: SecretBox,
  ) {
    this.codec = walletCodec(box);
  }

  async get(tenantId: string): Promise<PaymentWallet | undefined> {
    const row = await this.db.selectFrom('payment_wallets').select(WALLET_COLUMNS).where('tenant_id', '=', tenantId).executeTakeFirst();
    return row && this.codec.toRecord(row);
  }

  /** Creates or replaces the tenant's wallet. */
  async put(wallet: PaymentWallet): Promise<void> {
    const row = this.codec.toRow(wallet);
    const { tenant_id: _tenant, created_at: _created, ...changes } = row;
    await this.db
      .insertInto('payment_wallets')
      .values(row)
      .onConflict((oc) => oc.column('tenant_id').doUpdateSet(changes))
      .execute();
  }

  async delete(tenantId: string): Promise<boolean> {
    const result = await this.db.deleteFrom('payment_wallets').where('tenant_id', '=', tenantId).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }
}
