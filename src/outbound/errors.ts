import { DomainError } from '../domain/errors.ts';

/**
 * knode will not call that address (a metadata service, link-local, or a loopback or private address this
 * tenant may not reach): decided before any connection is made. A 403 saying why when a caller asked for
 * the call; providers that report failures their own way quote the reason.
 */
export class OutboundRefusedError extends DomainError {
  override readonly name = 'OutboundRefusedError';

  constructor(reason: string) {
    super('refused', reason);
  }
}

/** The other server answered more than knode reads of one answer: the connection was closed there (502). */
export class OutboundTooLargeError extends DomainError {
  override readonly name = 'OutboundTooLargeError';

  constructor(host: string, limit: number) {
    super('upstream', `${host} answered more than ${Math.round(limit / 1024)} KB; knode stopped reading`);
  }
}

/** The refusal or oversized answer behind an error a client library wrapped (openai, viem), if that is what it is. */
export function outboundCause(error: unknown): OutboundRefusedError | OutboundTooLargeError | undefined {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 8; cause = cause.cause, depth++) {
    if (cause instanceof OutboundRefusedError || cause instanceof OutboundTooLargeError) return cause;
  }
  return undefined;
}
