import { ServiceUnavailableError } from '../domain/errors.ts';
import { OutboundRefusedError } from '../outbound/errors.ts';
import { upstreamStatus } from '../outbound/upstream.ts';

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
  constructor(
    private readonly account: AccountingAccount,
    /** The outbound module's fetch for the marketplace's tenant (outbound/fetch.ts). */
    private readonly fetcher: (url: string, init: RequestInit) => Promise<Response>,
  ) {}

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
      return await this.fetcher(`${this.account.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Basic ${credentials}` },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (error) {
      if (error instanceof OutboundRefusedError) throw error;
      throw new ServiceUnavailableError(
        `Accounting service at ${displayOrigin(this.account.url)} cannot be reached: ${(error as Error).message}`,
      );
    }
  }

  private async expectOk(action: string, response: Response): Promise<void> {
    if (!response.ok) {
      throw new ServiceUnavailableError(`Accounting service refused to ${action} the transaction: ${await reason(response)}`);
    }
  }
}

/** The status and a short JSON message at most: the body is never quoted (outbound/upstream.ts). */
function reason(response: Response): Promise<string> {
  return upstreamStatus(response);
}

/** The service's address as messages show it: no user information, path or query. */
function displayOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid URL)';
  }
}
