import { PolicyError, ServiceUnavailableError } from '../domain/errors.ts';
import { type PolicyEntry, policyEntry } from '../domain/policy-metadata.ts';
import { AccountingRefusal, type AccountingService } from '../syfthub/accounting-service.ts';
import type { AccountingConfiguration } from './codec.ts';
import type { PolicyContext, PolicyHook, QueryOutcome } from './hooks.ts';

/**
 * With `require_transaction_token`, a query must bring a transaction token that the accounting service
 * accepts for the most the query can cost; after the query the actual cost is confirmed, or the
 * transaction cancelled when the query failed (specification, Policy rule 4; API-CONTRACT 7).
 */
export class AccountingHook implements PolicyHook {
  private transactionId: string | undefined;
  /** What the policy did: nothing yet, or the transaction it settled (API-CONTRACT 10.2). */
  private settled: PolicyEntry = policyEntry({ ...ACCOUNTING, status: 'skipped' });

  constructor(
    private readonly configuration: AccountingConfiguration,
    private readonly service: AccountingService | undefined,
  ) {}

  async pre(context: PolicyContext): Promise<void> {
    if (!this.configuration.enabled || !this.configuration.require_transaction_token) return;
    const token = context.transactionToken;
    if (!token) throw refusal('Transaction token required');
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
      if (error instanceof AccountingRefusal) throw refusal(`Invalid transaction token: ${error.message}`);
      throw error;
    }
  }

  async post(_context: PolicyContext, outcome: QueryOutcome): Promise<void> {
    const id = this.transactionId;
    if (!id || !this.service) return;
    this.transactionId = undefined;
    const transaction = { rail: 'accounting' as const, id, reference: null };
    if (outcome.succeeded) {
      const amount = outcome.datasetCost + outcome.modelCost;
      await this.service.confirmTransaction(id, amount);
      this.settled = policyEntry({ ...ACCOUNTING, status: amount > 0 ? 'charged' : 'free', amount, currency: 'USD', transaction });
    } else {
      await this.service.cancelTransaction(id);
      this.settled = policyEntry({ ...ACCOUNTING, status: 'refunded', amount: 0, currency: 'USD', transaction });
    }
  }

  entry(): PolicyEntry {
    return this.settled;
  }
}

const ACCOUNTING = { policy_type: 'accounting', kind: 'payment' } as const;

/** No token, or one the accounting service refused: the query is not paid for (403). */
function refusal(reason: string): PolicyError {
  const entry = policyEntry({ ...ACCOUNTING, status: 'rejected', reason_code: 'PAYMENT_REQUIRED', reason });
  return new PolicyError('refused', 'Permission Denied', reason, entry, 'policy_violation');
}
