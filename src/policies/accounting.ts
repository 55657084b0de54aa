import { PolicyError, ServiceUnavailableError } from '../domain/errors.ts';
import { AccountingRefusal, type AccountingService } from '../syfthub/accounting.ts';
import type { AccountingConfiguration } from './codec.ts';
import type { PolicyContext, PolicyHook, QueryOutcome } from './hooks.ts';

/**
 * With `require_transaction_token`, a query must bring a transaction token that the accounting service
 * accepts for the most the query can cost; after the query the actual cost is confirmed, or the
 * transaction cancelled when the query failed (specification, Policy rule 4; API-CONTRACT 7).
 */
export class AccountingHook implements PolicyHook {
  private transactionId: string | undefined;

  constructor(
    private readonly configuration: AccountingConfiguration,
    private readonly service: AccountingService | undefined,
  ) {}

  async pre(context: PolicyContext): Promise<void> {
    if (!this.configuration.enabled || !this.configuration.require_transaction_token) return;
    const token = context.transactionToken;
    if (!token) throw new PolicyError('refused', 'Permission Denied', 'Transaction token required');
    if (!this.service) {
      throw new ServiceUnavailableError('This endpoint requires payment but its owner has no accounting service configured');
    }
    try {
      this.transactionId = await this.service.createTransaction({
        senderEmail: context.senderEmail,
        amount: context.maxCost,
        token,
        appEpPath: context.endpoint.slug,
      });
    } catch (error) {
      if (error instanceof AccountingRefusal)
        throw new PolicyError('refused', 'Permission Denied', `Invalid transaction token: ${error.message}`);
      throw error;
    }
  }

  async post(_context: PolicyContext, outcome: QueryOutcome): Promise<void> {
    const id = this.transactionId;
    if (!id || !this.service) return;
    this.transactionId = undefined;
    if (outcome.succeeded) await this.service.confirmTransaction(id, outcome.datasetCost + outcome.modelCost);
    else await this.service.cancelTransaction(id);
  }
}
