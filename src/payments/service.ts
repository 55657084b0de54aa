import { randomBytes } from 'node:crypto';
import type { Static } from 'typebox';
import { NotFoundError, ValidationError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { OutboundPolicy } from '../outbound/reach.ts';
import { keepMaskedSecrets, maskedSecretKeys, maskSecrets } from '../security/secret-config.ts';
import { type Clock, isoNow } from '../util/clock.ts';
import type { PaymentWallet } from './codec.ts';
import type { WalletRepository } from './repository.ts';
import type { WalletBody, WalletView } from './schemas.ts';
import { chainIdOf } from './tempo.ts';

export type WalletViewData = Static<typeof WalletView>;

/**
 * The tenant's payment wallet (`/settings/wallet`, API-CONTRACT 10.3): where the MPP payments of its
 * endpoints go. Receiving needs only the address, so no private key is ever asked for; the secret that
 * signs the tenant's challenges is generated here once, sealed, and never shown.
 */
export class WalletService {
  constructor(
    private readonly wallets: WalletRepository,
    private readonly clock: Clock,
    /** What the tenant's calls may reach: an RPC it may never call is refused when it is set (outbound/). */
    private readonly outbound?: OutboundPolicy,
  ) {}

  async get(tenant: Tenant): Promise<WalletViewData> {
    return toWalletView(await this.require(tenant));
  }

  /**
   * Sets or replaces the wallet. The challenge secret is kept across replacements: a challenge issued
   * before still names the old recipient, which a credential must match, so it cannot pay the new one.
   */
  async set(tenant: Tenant, body: Static<typeof WalletBody>): Promise<WalletViewData> {
    const stored = await this.wallets.get(tenant.id);
    const rpcUrl = this.rpcUrl(body.rpc_url ?? null, stored);
    if (rpcUrl !== null && this.outbound) {
      // Refused whatever it resolves to (a metadata service, link-local, a loopback or private address this
      // tenant may not reach): said now, on the field, rather than at every payment.
      const refused = (await this.outbound.forTenant(tenant.id)).hostRefusal(new URL(rpcUrl).hostname);
      if (refused) throw ValidationError.body('rpc_url', refused, 'url_refused');
    }
    const timestamp = isoNow(this.clock);
    const wallet: PaymentWallet = {
      tenant_id: tenant.id,
      wallet_address: body.wallet_address as `0x${string}`,
      testnet: body.testnet,
      rpc_url: rpcUrl,
      challenge_secret: stored?.challenge_secret ?? randomBytes(32).toString('base64url'),
      created_at: stored?.created_at ?? timestamp,
      updated_at: timestamp,
    };
    await this.wallets.put(wallet);
    return toWalletView(wallet);
  }

  /** Forgets the wallet (and its secret: challenges issued before can no longer be paid). */
  async delete(tenant: Tenant): Promise<void> {
    if (!(await this.wallets.delete(tenant.id))) throw noWallet();
  }

  private async require(tenant: Tenant): Promise<PaymentWallet> {
    const wallet = await this.wallets.get(tenant.id);
    if (!wallet) throw noWallet();
    return wallet;
  }

  /** A URL sent back as a GET showed it (its user-info masked) keeps the stored user-info. */
  private rpcUrl(given: string | null, stored: PaymentWallet | undefined): string | null {
    if (given === null) return null;
    const kept = keepMaskedSecrets({ rpc_url: given }, { rpc_url: stored?.rpc_url ?? null });
    if (maskedSecretKeys(kept).length > 0) {
      throw ValidationError.body('rpc_url', 'The URL carries the mask instead of its credentials: send them again', 'masked_secret');
    }
    return kept.rpc_url as string;
  }
}

function noWallet(): NotFoundError {
  return new NotFoundError('No payment wallet configured');
}

function toWalletView(wallet: PaymentWallet): WalletViewData {
  return {
    wallet_address: wallet.wallet_address,
    testnet: wallet.testnet,
    rpc_url: wallet.rpc_url === null ? null : (maskSecrets({ rpc_url: wallet.rpc_url }).rpc_url as string),
    chain_id: chainIdOf(wallet.testnet),
  };
}
