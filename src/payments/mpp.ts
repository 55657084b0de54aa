import { Challenge, Credential, Errors, PaymentRequest } from 'mppx';
import { Mppx, tempo } from 'mppx/server';
import { Methods } from 'mppx/tempo';
import { BaseError, formatUnits, type Hex, keccak256 } from 'viem';
import { BadGatewayError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { PaymentWallet } from './codec.ts';
import type { ConsumedStore } from './consumed-store.ts';
import type { WalletRepository } from './repository.ts';
import {
  type BroadcastState,
  causedBy,
  PATH_USD,
  PATH_USD_DECIMALS,
  PUBLIC_RPC,
  ReceiptTimeoutError,
  RpcUnreachableError,
  TESTNET_CHAIN_ID,
  tempoClient,
} from './tempo.ts';

/**
 * MPP payments of queries (API-CONTRACT 10.3), on the `mppx` library: its challenges (HMAC-bound ids over
 * the canonical request), its credentials, and its Tempo charge method, which checks a signed transaction
 * (one TIP-20 transfer of exactly the amount of pathUSD to the recipient, its memo bound to the challenge,
 * a simulation), broadcasts it and checks the receipt's Transfer log. knode adds what is its own: the
 * challenge is for this endpoint (realm = its slug) and for what this query costs now, a credential is
 * used once (challenge id and transaction, kept in SQLite until they expire), and the transaction is
 * broadcast only once the answer is ready (`AcceptedPayment.settle`), so a failed query costs nothing.
 */

/** How long a challenge may be paid (API-CONTRACT 10.3: now + 5 minutes). */
export const CHALLENGE_LIFETIME_MS = 5 * 60_000;

/** What one query costs and where: the realm is the endpoint's slug. */
export interface PaymentTerms {
  realm: string;
  /** pathUSD base units (10^-6 USD). */
  amount: bigint;
}

export interface IssuedChallenge {
  id: string;
  /** The `WWW-Authenticate` value of the 402. */
  header: string;
  expires: string;
}

/** The credential cannot pay for this query: a 402 with a fresh challenge (never retried as it is). */
export class PaymentRefusal extends Error {
  override readonly name = 'PaymentRefusal';
  constructor(
    readonly reason: string,
    readonly insufficientBalance = false,
  ) {
    super(reason);
  }
}

/** A credential checked and reserved for one query; nothing has moved yet. */
export interface AcceptedPayment {
  readonly challengeId: string;
  /** The hash of the signed transaction as received. */
  readonly transaction: Hex;
  /**
   * Broadcasts the transaction and waits for its receipt: call it once the answer is ready. Answers the
   * transaction hash; throws a PaymentRefusal (the node or mppx refused it) or a BadGatewayError (the RPC
   * could not be reached, or the receipt did not come).
   */
  settle(): Promise<Hex>;
  /** The query failed before `settle`: the credential is freed (nothing was broadcast). */
  release(): Promise<void>;
}

export interface MppGatewayDeps {
  wallets: Pick<WalletRepository, 'get'>;
  consumed: ConsumedStore;
  /** How long a broadcast transaction may take to get its receipt (10 s unless a test is in a hurry). */
  receiptTimeoutMs?: number;
}

/** pathUSD base units of a USD price (the policy's schema allows at most 6 decimals). */
export function toBaseUnits(usd: number): bigint {
  return BigInt(Math.round(usd * 10 ** PATH_USD_DECIMALS));
}

/** Base units as USD, exactly, without trailing zeros: `250000n` is `0.25`. */
export function formatUsd(amount: bigint): string {
  return formatUnits(amount, PATH_USD_DECIMALS);
}

export class MppGateway {
  constructor(private readonly deps: MppGatewayDeps) {}

  wallet(tenant: Tenant): Promise<PaymentWallet | undefined> {
    return this.deps.wallets.get(tenant.id);
  }

  /** A challenge for `terms`, valid 5 minutes, and the header that carries it. */
  challenge(wallet: PaymentWallet, terms: PaymentTerms): IssuedChallenge {
    const challenge = Challenge.fromMethod(Methods.charge, {
      realm: terms.realm,
      description: `Query endpoint: ${terms.realm}`,
      expires: new Date(Date.now() + CHALLENGE_LIFETIME_MS).toISOString(),
      request: requestInput(wallet, terms.amount),
      secretKey: wallet.challenge_secret,
    });
    return { id: challenge.id, header: wwwAuthenticate(challenge), expires: challenge.expires as string };
  }

  /**
   * Checks an `X-Payment` credential against `terms` and reserves it for this query: issued by this tenant
   * (HMAC), for this endpoint, for what this query costs, not expired, not used before, its transaction
   * paying exactly that (mppx, with a simulation at the node). Throws a PaymentRefusal, or a
   * BadGatewayError when the RPC cannot be reached.
   */
  async accept(wallet: PaymentWallet, terms: PaymentTerms, header: string): Promise<AcceptedPayment> {
    let credential: Credential.Credential;
    try {
      credential = Credential.deserialize(header);
    } catch {
      throw new PaymentRefusal('The X-Payment header is not a Payment credential');
    }
    const { challenge } = credential;
    if (!Challenge.verify(challenge, { secretKey: wallet.challenge_secret })) {
      throw new PaymentRefusal("The payment's challenge was not issued by this endpoint's owner");
    }
    if (challenge.method !== 'tempo' || challenge.intent !== 'charge') throw new PaymentRefusal('Only Tempo charge payments are accepted');
    if (challenge.realm !== terms.realm)
      throw new PaymentRefusal(`The payment's challenge was issued for another endpoint ('${challenge.realm}')`);
    const expected = PaymentRequest.fromMethod(Methods.charge, requestInput(wallet, terms.amount));
    if (PaymentRequest.serialize(challenge.request) !== PaymentRequest.serialize(expected)) {
      throw new PaymentRefusal(
        `The payment is not for what this query costs now ($${formatUsd(terms.amount)} to ${wallet.wallet_address})`,
      );
    }
    const payload = credential.payload as { type?: unknown; signature?: unknown };
    // A transaction the consumer broadcast itself (`hash`) would be paid before the answer exists.
    if (payload?.type !== 'transaction' || typeof payload.signature !== 'string' || !payload.signature.startsWith('0x')) {
      throw new PaymentRefusal('The payment must carry a signed transaction (payload type "transaction")');
    }
    const transaction = keccak256(payload.signature as Hex);
    const keys = [`knode:challenge:${challenge.id}`, `knode:transaction:${transaction.toLowerCase()}`];
    if (await this.deps.consumed.anyConsumed(keys)) throw new PaymentRefusal('This payment has already been used');

    const state: BroadcastState = { sent: undefined };
    try {
      await this.server(wallet, terms.realm, state, []).validateCredential(credential);
    } catch (error) {
      throw translate(error, state);
    }
    if (!(await this.deps.consumed.claim(keys, Date.parse(challenge.expires as string)))) {
      throw new PaymentRefusal('This payment has already been used');
    }

    const release = () => this.deps.consumed.release(keys);
    return {
      challengeId: challenge.id,
      transaction,
      release,
      settle: async () => {
        const state: BroadcastState = { sent: undefined };
        const claimed: string[] = [];
        try {
          const receipt = await this.server(wallet, terms.realm, state, claimed).broadcastCredential(credential);
          return receipt.reference as Hex;
        } catch (error) {
          // Once the node took the transaction it may be mined: the credential stays used. Before, nothing
          // can have moved, so it is freed, mppx's own replay marks of this attempt included.
          if (!state.sent) await this.deps.consumed.release([...keys, ...claimed]);
          throw translate(error, state);
        }
      },
    };
  }

  /**
   * mppx's server for one wallet and endpoint: the Tempo charge method on the wallet's network, with the
   * replay store in SQLite (the keys mppx claims are added to `claimed`).
   */
  private server(wallet: PaymentWallet, realm: string, state: BroadcastState, claimed: string[]) {
    const client = tempoClient({
      rpcUrl: wallet.rpc_url ?? PUBLIC_RPC[wallet.testnet ? 'testnet' : 'mainnet'],
      testnet: wallet.testnet,
      state,
      ...(this.deps.receiptTimeoutMs !== undefined ? { receiptTimeoutMs: this.deps.receiptTimeoutMs } : {}),
    });
    return Mppx.create({
      methods: [
        tempo.charge({
          currency: PATH_USD,
          decimals: PATH_USD_DECIMALS,
          recipient: wallet.wallet_address,
          testnet: wallet.testnet,
          getClient: () => client,
          store: this.deps.consumed.mppx(claimed),
          waitForConfirmation: true,
        }),
      ],
      secretKey: wallet.challenge_secret,
      realm,
    });
  }
}

/**
 * The request of a challenge (API-CONTRACT 10.3): the amount in base units, pathUSD, the recipient, and
 * on testnet `methodDetails: {chainId: 42431}`; mainnet omits it. mppx turns this into the canonical form.
 */
function requestInput(wallet: PaymentWallet, amount: bigint) {
  return {
    amount: formatUsd(amount),
    currency: PATH_USD,
    decimals: PATH_USD_DECIMALS,
    recipient: wallet.wallet_address,
    ...(wallet.testnet ? { chainId: TESTNET_CHAIN_ID } : {}),
  };
}

/**
 * The challenge as a `WWW-Authenticate` value, its parameters in the contract's order (mppx's own
 * serializer puts `description` before `expires`); the request is mppx's canonical base64url.
 */
function wwwAuthenticate(challenge: Challenge.Challenge): string {
  const quote = (value: string) => `"${value.replace(/[\\"]/g, (character) => `\\${character}`)}"`;
  const parameters: [string, string | undefined][] = [
    ['id', challenge.id],
    ['realm', challenge.realm],
    ['method', challenge.method],
    ['intent', challenge.intent],
    ['request', PaymentRequest.serialize(challenge.request)],
    ['expires', challenge.expires],
    ['description', challenge.description],
  ];
  return `Payment ${parameters
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([name, value]) => `${name}=${quote(value)}`)
    .join(', ')}`;
}

/** What a failure of mppx or of the node means for the consumer: a 402 (refused) or a 502 (not decided). */
function translate(error: unknown, state: BroadcastState): Error {
  const timeout = causedBy(error, ReceiptTimeoutError);
  if (timeout) {
    return new BadGatewayError(`The payment transaction ${timeout.hash} was sent but not confirmed in time`, { cause: error });
  }
  if (causedBy(error, RpcUnreachableError)) {
    return new BadGatewayError(
      state.sent
        ? `The payment transaction ${state.sent} was sent but the Tempo RPC could not confirm it`
        : 'The Tempo RPC could not be reached: the payment was not charged',
      { cause: error },
    );
  }
  if (error instanceof Errors.PaymentError) {
    return new PaymentRefusal(firstLine(error.message), error instanceof Errors.InsufficientBalanceError);
  }
  if (error instanceof BaseError) {
    // The node answered: it refused the transaction (a balance too low, a bad nonce...).
    const reason = firstLine(error.shortMessage);
    return new PaymentRefusal(`The Tempo node refused the payment: ${reason}`, /insufficient/i.test(error.message));
  }
  if (error instanceof Error && error.message.startsWith('Transaction reverted'))
    return new PaymentRefusal('The payment transaction reverted');
  return error instanceof Error ? error : new Error(String(error));
}

function firstLine(text: string): string {
  return text.split('\n')[0]?.trim() ?? text;
}
