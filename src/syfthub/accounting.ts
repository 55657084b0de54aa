import { ServiceUnavailableError } from '../domain/errors.ts';

/** The accounting service of a marketplace (API-CONTRACT 9): transactions created, confirmed, cancelled. */
export interface AccountingService {
  /** Reserves `amount` against the caller's transaction token; throws AccountingRefusal when the token is not good. */
  createTransaction(input: { senderEmail: string; amount: number; token: string; appEpPath: string }): Promise<string>;
  confirmTransaction(transactionId: string, amount: number): Promise<void>;
  cancelTransaction(transactionId: string): Promise<void>;
}

/** The accounting service said no: the transaction token is missing, spent, expired or forged. */
export class AccountingRefusal extends Error {}

export interface AccountingAccount {
  url: string;
  email: string;
  password: string;
}

const TIMEOUT_MS = 10_000;

/** The real protocol: JSON over HTTP with Basic authentication as the endpoint owner's accounting account. */
export class HttpAccountingService implements AccountingService {
  constructor(private readonly account: AccountingAccount) {}

  async createTransaction(input: { senderEmail: string; amount: number; token: string; appEpPath: string }): Promise<string> {
    const response = await this.post('/transaction/create', {
      senderEmail: input.senderEmail,
      recipientEmail: this.account.email,
      amount: input.amount,
      token: input.token,
      appEpPath: input.appEpPath,
    });
    if (!response.ok) throw new AccountingRefusal(await reason(response));
    const body = (await response.json().catch(() => null)) as { transaction?: { id?: unknown } } | null;
    const id = body?.transaction?.id;
    if (typeof id !== 'string' && typeof id !== 'number') {
      throw new ServiceUnavailableError('Accounting service answered without a transaction id');
    }
    return String(id);
  }

  async confirmTransaction(transactionId: string, amount: number): Promise<void> {
    await this.expectOk('confirm', await this.post('/transaction/confirm', { transactionId, amount }));
  }

  async cancelTransaction(transactionId: string): Promise<void> {
    await this.expectOk('cancel', await this.post('/transaction/cancel', { transactionId }));
  }

  private async post(path: string, body: unknown): Promise<Response> {
    const credentials = Buffer.from(`${this.account.email}:${this.account.password}`).toString('base64');
    try {
      return await fetch(`${this.account.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Basic ${credentials}` },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (error) {
      throw new ServiceUnavailableError(`Accounting service at ${this.account.url} cannot be reached: ${(error as Error).message}`);
    }
  }

  private async expectOk(action: string, response: Response): Promise<void> {
    if (!response.ok) {
      throw new ServiceUnavailableError(`Accounting service refused to ${action} the transaction: ${await reason(response)}`);
    }
  }
}

async function reason(response: Response): Promise<string> {
  const text = (await response.text().catch(() => '')).slice(0, 300);
  try {
    const body = JSON.parse(text) as { detail?: unknown; message?: unknown; error?: unknown };
    const message = body.detail ?? body.message ?? body.error;
    if (typeof message === 'string') return `${response.status} ${message}`;
  } catch {
    // not JSON: the raw text says enough
  }
  return `${response.status} ${text || response.statusText}`.trim();
}
