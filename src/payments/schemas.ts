import { Type } from 'typebox';
import { BaseUrl } from '../http/schemas.ts';

/** `0x` and 40 hex digits: an account on Tempo (an EVM address). Receiving needs nothing more. */
const WalletAddress = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$', examples: ['0x742d35Cc6634c0532925a3b844bC9e7595F8fE00'] });

/** `POST /settings/wallet` (API-CONTRACT 10.3): no private key is ever asked for. */
export const WalletBody = Type.Object({
  wallet_address: WalletAddress,
  testnet: Type.Boolean({ default: true, description: 'Tempo testnet (Moderato, chain 42431); false: mainnet (chain 4217)' }),
  rpc_url: Type.Optional(
    Type.Union([BaseUrl, Type.Null()], { description: "The Tempo JSON-RPC payments are checked with; default: the network's public RPC" }),
  ),
});

/** What a wallet shows: never its challenge secret. */
export const WalletView = Type.Object({
  wallet_address: Type.String(),
  testnet: Type.Boolean(),
  rpc_url: Type.Union([Type.String(), Type.Null()]),
  chain_id: Type.Integer(),
});
