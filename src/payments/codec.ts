import type { PaymentWalletTable } from '../db/schema.ts';
import type { SecretBox } from '../security/secret-box.ts';
import { openSecrets, sealSecrets } from '../security/secret-config.ts';

/**
 * A tenant's payment wallet as knode uses it: the flag as a real boolean, the challenge secret and the
 * user-info of the RPC URL (an API key, for some providers) open. They are sealed here on the way in and
 * opened here on the way out (the SecretBox); no view carries the secret (schemas.ts lists what is shown).
 */
export interface PaymentWallet {
  readonly tenant_id: string;
  readonly wallet_address: `0x${string}`;
  readonly testnet: boolean;
  readonly rpc_url: string | null;
  /** The HMAC key of the tenant's challenges (mppx `secretKey`). */
  readonly challenge_secret: string;
  readonly created_at: string;
  readonly updated_at: string;
}

/** The columns a wallet is read from, named, so a new column is a choice and not a leak. */
export const WALLET_COLUMNS = [
  'tenant_id',
  'wallet_address',
  'testnet',
  'rpc_url',
  'challenge_secret',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof PaymentWalletTable)[];

export function walletCodec(box: SecretBox) {
  return {
    toRecord(row: PaymentWalletTable): PaymentWallet {
      return {
        ...row,
        wallet_address: row.wallet_address as `0x${string}`,
        testnet: row.testnet === 1,
        rpc_url: row.rpc_url === null ? null : (openSecrets({ rpc_url: row.rpc_url }, box).rpc_url as string),
        challenge_secret: box.decrypt(row.challenge_secret),
      };
    },

    toRow(record: PaymentWallet): PaymentWalletTable {
      return {
        ...record,
        testnet: record.testnet ? 1 : 0,
        rpc_url: record.rpc_url === null ? null : (sealSecrets({ rpc_url: record.rpc_url }, box).rpc_url as string),
        challenge_secret: box.encrypt(record.challenge_secret),
      };
    },
  };
}
