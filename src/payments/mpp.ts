import { Challenge, Credential, PaymentRequest } from 'mppx';
import { Methods } from 'mppx/tempo';
import { BaseError, type Hex, keccak256 } from 'viem';
import type { Tenant } from '../domain/principal.ts';
import { type Clock, systemClock } from '../util/clock.ts';
import type { PaymentWallet } from './codec.ts';
import type { ConsumedStore } from './consumed-store.ts';
import { formatUsd, PaymentRefusal, type PaymentTerms } from './payment-terms.ts';
import type { ReplicaLiveness } from './reconciler.ts';
import type { WalletRepository } from './repository.ts';
import type { SettlementEntry, SettlementJournal } from './settlement-journal.ts';
import { broadcast, canonical, checkTransfer, decodeTransaction, simulate } from './signed-transfer.ts';
import {
  PATH_USD,
  PATH_USD_DECIMALS,
  RECEIPT_POLL_MS,
  RECEIPT_TIMEOUT_MS,
  type RpcFetcher,
  RpcUnreachableError,
  rpcUrlOf,
  TESTNET_CHAIN_ID,
  TempoRpc,
  verdictOf,
} from './tempo.ts';

/**
 * MPP payments of queries (API-CONTRACT 10.3). Challenges and credentials are `mppx`'s (HMAC-bound ids
 * over the canonical request, the credential's encoding); the payment itself knode checks on its own,
 * because mppx 0.11's server insists that the transfer memo's nonce be derived from the challenge id, and
 * the deployed SyftHub wallet (pympp 0.4.2) writes a random one (point 7): the signed Tempo transaction must
 * make exactly one call, a pathUSD `transferWithMemo` of exactly the amount to the recipient, whose memo is
 * an MPP memo for this realm. knode adds what is its own: the challenge is for this endpoint (realm = its
 * slug) and for what this query costs now, a credential is used once (challenge id and transaction, in
 * SQLite), and the transaction is broadcast only once the answer is ready (`AcceptedPayment.settle`), so a
 * failed query costs nothing. Every step of a settlement is written to the settlement journal first
 * (`settlement-journal.ts`): once the node took the transaction the answer is delivered, charged or
 * `pending` (the receipt is late; `reconciler.ts` confirms it later), never an error (point 6).
 */

/** How long a challenge may be paid (API-CONTRACT 10.3: now + 5 minutes). */
const CHALLENGE_LIFETIME_MS = 5 * 60_000;

/** Who pays for what: a credential pays for one caller's query of one endpoint. */
export interface PaymentCaller {
  tenantId: string;
  endpointId: string;
  senderEmail: string;
}

export interface IssuedChallenge {
  id: string;
  /** The `WWW-Authenticate` value of the 402. */
  header: string;
  expires: string;
}

/** How a payment ended for the answer: `charged` (its receipt came) or `pending` (sent, receipt late). */
export interface Settlement {
  transaction: Hex;
  status: 'charged' | 'pending';
}

/** A credential checked and reserved for one query; nothing has moved yet. */
export interface AcceptedPayment {
  readonly challengeId: string;
  /** The hash of the transaction as it is broadcast. */
  readonly transaction: Hex;
  /**
   * Broadcasts the transaction and waits for its receipt: call it once the answer is ready, with the usage
   * row the answer will write (kept in the journal for a process that dies before writing it). Throws a
   * PaymentRefusal (refused before it was sent, or it reverted) or a BadGatewayError (the RPC could not be
   * reached before the node took it: nothing was charged); once the node took it, it never throws.
   */
  settle(usage: Record<string, unknown>): Promise<Settlement>;
  /** The query failed before `settle`: the credential is freed (nothing was broadcast). */
  release(): Promise<void>;
  /** The answer was handed out: the same credential again is a replay from now on. */
  delivered(): Promise<void>;
  /**
   * The query is over, answered or not (after `delivered` or `release`, or a failure after `settle`): from now
   * on a retry of its payment, if its answer never went out, may be answered here.
   */
  ended(): void;
}

export interface MppGatewayDeps {
  wallets: Pick<WalletRepository, 'get'>;
  consumed: ConsumedStore;
  journal: SettlementJournal;
  /** How long a broadcast transaction may take to get its receipt before the answer goes out `pending`. */
  receiptTimeoutMs?: number;
  /** The outbound module's fetch for a tenant: the Tempo RPC is called through it (outbound/). */
  outbound: RpcFetcher;
  /** When a challenge expires, and whether it has (the real one unless a test brings its own). */
  clock?: Clock;
  /**
   * Which replicas are gone (cluster mode): a paid query another live replica is still answering is not
   * answered again here. Without it, only this process's own queries in progress are told apart.
   */
  replicas?: ReplicaLiveness;
}

export class MppGateway {
  private readonly clock: Clock;
  /** The payments (challenge ids) of queries this process is answering now: a duplicate of one is refused. */
  private readonly answering = new Set<string>();

  constructor(private readonly deps: MppGatewayDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  wallet(tenant: Tenant): Promise<PaymentWallet | undefined> {
    return this.deps.wallets.get(tenant.id);
  }

  /** A challenge for `terms`, valid 5 minutes, and the header that carries it. */
  challenge(wallet: PaymentWallet, terms: PaymentTerms): IssuedChallenge {
    const challenge = Challenge.fromMethod(Methods.charge, {
      realm: terms.realm,
      description: `Query endpoint: ${terms.realm}`,
      expires: new Date(this.clock.now() + CHALLENGE_LIFETIME_MS).toISOString(),
      request: requestInput(wallet, terms.amount),
      secretKey: wallet.challenge_secret,
    });
    return { id: challenge.id, header: wwwAuthenticate(challenge), expires: challenge.expires as string };
  }

  /**
   * Checks an `X-Payment` credential against `terms` and reserves it for this query: issued by this tenant
   * (HMAC), for this endpoint, for what this query costs, not expired, not used before, its transaction
   * paying exactly that (checked here, then simulated at the node). A credential whose transaction was sent
   * for this caller's query but whose answer was never handed out (the process stopped) is accepted again,
   * already paid. Throws a PaymentRefusal, or a BadGatewayError when the RPC cannot be reached.
   */
  async accept(wallet: PaymentWallet, terms: PaymentTerms, header: string, caller: PaymentCaller): Promise<AcceptedPayment> {
    const credential = parseCredential(header);
    const { challenge } = credential;
    checkChallenge(challenge, wallet, terms);
    const signed = signedTransaction(credential);
    const transaction = decodeTransaction(signed);
    checkTransfer(transaction, wallet, terms);
    // Nodes hash the canonical encoding: broadcast that one, so that the hash knode keeps is the node's
    // (mppx does the same). Both hashes are single-use keys.
    const raw = await canonical(transaction);
    const hash = keccak256(raw);
    const keys = [
      ...new Set([`knode:challenge:${challenge.id}`, ...[keccak256(signed), hash].map((h) => `knode:transaction:${h.toLowerCase()}`)]),
    ];

    if (await this.deps.consumed.anyConsumed(keys)) {
      const paid = await this.deps.journal.get(challenge.id);
      if (paid && isUndeliveredPayment(paid, hash, caller) && (await this.noLongerAnswered(paid))) return this.alreadyPaid(paid);
      throw new PaymentRefusal('This payment has already been used');
    }
    const expires = Date.parse(challenge.expires ?? '');
    if (!(expires > this.clock.now())) throw new PaymentRefusal(`The payment's challenge expired at ${challenge.expires}`);
    if (await this.deps.journal.transactionUsed(hash)) throw new PaymentRefusal('This payment has already been used');

    const rpc = new TempoRpc({ rpcUrl: rpcUrlOf(wallet), testnet: wallet.testnet, fetch: await this.deps.outbound(caller.tenantId) });
    await simulate(rpc, transaction);
    const reserved = await this.deps.journal.reserve({
      challenge_id: challenge.id,
      tenant_id: caller.tenantId,
      endpoint_id: caller.endpointId,
      sender_email: caller.senderEmail,
      transaction_hash: hash,
      raw_transaction: raw,
      payer: transaction.from as Hex,
      amount: terms.amount,
      currency: PATH_USD,
      recipient: wallet.wallet_address,
      testnet: wallet.testnet,
      rpc_url: rpcUrlOf(wallet),
      consumed_keys: keys,
      expires_at: expires,
    });
    if (!reserved) throw new PaymentRefusal('This payment has already been used');

    const journal = this.deps.journal;
    const id = challenge.id;
    this.answering.add(id);
    return {
      challengeId: id,
      transaction: hash,
      release: () => journal.release(id),
      delivered: () => journal.delivered(id),
      ended: () => this.answering.delete(id),
      settle: async (usage) => {
        await journal.sending(id, usage);
        let sent: Hex;
        try {
          // The answer took a while: a balance spent since is a 402 now rather than a reverted transfer.
          await simulate(rpc, transaction);
          sent = await broadcast(rpc, raw);
        } catch (error) {
          // The node did not take it: nothing can have moved, so the credential is good again.
          await journal.release(id);
          throw error;
        }
        await journal.sent(id);
        return this.confirm(rpc, { id, hash: sent, payer: transaction.from as Hex, wallet, amount: terms.amount });
      },
    };
  }

  /**
   * Waits for the receipt of a sent transaction, up to the deadline: `charged` when it pays, `pending` when
   * it did not come (or the RPC stopped answering: the node took the transaction, so the answer is paid for
   * and goes out; the reconciler finishes the journal). A receipt that pays nothing is a refusal.
   */
  private async confirm(
    rpc: TempoRpc,
    sent: { id: string; hash: Hex; payer: Hex; wallet: PaymentWallet; amount: bigint },
  ): Promise<Settlement> {
    // Elapsed time, not the time of day: a monotonic clock, which a test's stopped clock does not hold up.
    const deadline = performance.now() + (this.deps.receiptTimeoutMs ?? RECEIPT_TIMEOUT_MS);
    for (;;) {
      const receipt = await rpc.receipt(sent.hash).catch((error: unknown) => {
        if (error instanceof RpcUnreachableError || error instanceof BaseError) return null;
        throw error;
      });
      if (receipt) {
        const verdict = verdictOf(receipt, { currency: PATH_USD, from: sent.payer, to: sent.wallet.wallet_address, amount: sent.amount });
        if (verdict.status === 'confirmed') {
          await this.deps.journal.confirmed(sent.id);
          return { transaction: sent.hash, status: 'charged' };
        }
        await this.deps.journal.failed(sent.id, verdict.reason);
        throw new PaymentRefusal(verdict.reason);
      }
      if (performance.now() >= deadline) return { transaction: sent.hash, status: 'pending' };
      await Bun.sleep(RECEIPT_POLL_MS);
    }
  }

  /**
   * A retry of a paid query whose answer never went out (the process stopped after the broadcast): the
   * same caller gets the answer again, and nothing is sent or charged again. The query runs once more
   * rather than the first answer being kept: an answer can be large, can hold the caller's documents, and
   * is not written anywhere else, and a crash is rare; the payment is what must not be lost.
   */
  private alreadyPaid(paid: SettlementEntry): AcceptedPayment {
    const journal = this.deps.journal;
    this.answering.add(paid.challenge_id);
    return {
      challengeId: paid.challenge_id,
      transaction: paid.transaction_hash,
      settle: async () => ({ transaction: paid.transaction_hash, status: paid.state === 'confirmed' ? 'charged' : 'pending' }),
      // Nothing was reserved for this run: the credential stays used whatever happens to it.
      release: async () => {},
      delivered: () => journal.delivered(paid.challenge_id),
      ended: () => this.answering.delete(paid.challenge_id),
    };
  }

  /**
   * Whether nobody is answering the paid query of `paid` any more, so that its caller's retry may be: not a
   * query of this process in progress, nor one of another replica still running (two copies of one
   * credential sent at once to two replicas would otherwise both be answered once it is sent).
   */
  private async noLongerAnswered(paid: SettlementEntry): Promise<boolean> {
    if (this.answering.has(paid.challenge_id)) return false;
    const replicas = this.deps.replicas;
    if (!replicas || paid.replica === null || paid.replica === replicas.self) return true;
    return (await replicas.gone([paid.replica])).has(paid.replica);
  }
}

/** Whether a journal row is this caller's paid query whose answer was never handed out. */
function isUndeliveredPayment(paid: SettlementEntry, hash: Hex, caller: PaymentCaller): boolean {
  return (
    (paid.state === 'sent' || paid.state === 'confirmed') &&
    paid.delivered_at === null &&
    paid.transaction_hash.toLowerCase() === hash.toLowerCase() &&
    paid.tenant_id === caller.tenantId &&
    paid.endpoint_id === caller.endpointId &&
    paid.sender_email === caller.senderEmail
  );
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

function parseCredential(header: string): Credential.Credential {
  try {
    return Credential.deserialize(header);
  } catch {
    throw new PaymentRefusal('The X-Payment header is not a Payment credential');
  }
}

/** The challenge a credential answers: issued by this tenant (HMAC), a Tempo charge, for this endpoint, for what this query costs. */
function checkChallenge(challenge: Credential.Credential['challenge'], wallet: PaymentWallet, terms: PaymentTerms): void {
  if (!Challenge.verify(challenge, { secretKey: wallet.challenge_secret })) {
    throw new PaymentRefusal("The payment's challenge was not issued by this endpoint's owner");
  }
  if (challenge.method !== 'tempo' || challenge.intent !== 'charge') throw new PaymentRefusal('Only Tempo charge payments are accepted');
  if (challenge.realm !== terms.realm)
    throw new PaymentRefusal(`The payment's challenge was issued for another endpoint ('${challenge.realm}')`);
  const expected = PaymentRequest.fromMethod(Methods.charge, requestInput(wallet, terms.amount));
  if (PaymentRequest.serialize(challenge.request) !== PaymentRequest.serialize(expected)) {
    throw new PaymentRefusal(`The payment is not for what this query costs now ($${formatUsd(terms.amount)} to ${wallet.wallet_address})`);
  }
}

/** The signed transaction a credential carries. */
function signedTransaction(credential: Credential.Credential): Hex {
  const payload = credential.payload as { type?: unknown; signature?: unknown };
  // A transaction the consumer broadcast itself (`hash`) would be paid before the answer exists.
  if (payload?.type !== 'transaction' || typeof payload.signature !== 'string' || !/^0x[0-9a-fA-F]+$/.test(payload.signature)) {
    throw new PaymentRefusal('The payment must carry a signed transaction (payload type "transaction")');
  }
  return payload.signature as Hex;
}
