import type { Generated } from 'kysely';

/**
 * Table row types as stored. Timestamps are ISO 8601 UTC strings, booleans are 0/1 integers,
 * and `configuration` columns hold JSON text whose secret values are encrypted (security/secret-config.ts).
 * Only the repositories and their codecs (`<resource>/codec.ts`) see rows: everything else gets typed records.
 */
export interface Database {
  tenants: TenantTable;
  users: UserTable;
  tenant_members: TenantMemberTable;
  datasets: DatasetTable;
  dataset_files: DatasetFileTable;
  models: ModelTable;
  endpoints: EndpointTable;
  endpoint_marketplaces: EndpointMarketplaceTable;
  policies: PolicyTable;
  marketplaces: MarketplaceTable;
  tenant_settings: TenantSettingsTable;
  rate_windows: RateWindowTable;
  query_usage: QueryUsageTable;
  payment_wallets: PaymentWalletTable;
  payment_consumed: PaymentConsumedTable;
}

export interface TenantTable {
  id: string;
  name: string;
  created_at: string;
  /** JSON array of the folders the operator granted this tenant (besides SVC_INGESTION_ROOTS, see tenants/ingestion-roots.ts). */
  ingestion_roots: Generated<string>;
}

export interface UserTable {
  id: string;
  email: string;
  password_hash: string;
  created_at: string;
}

export interface TenantMemberTable {
  tenant_id: string;
  user_id: string;
  role: 'owner' | 'member';
  created_at: string;
}

export interface DatasetTable {
  id: string;
  tenant_id: string;
  name: string;
  summary: string;
  dtype: string;
  configuration: string;
  status: string;
  /** Why the dataset is in `error` (e.g. its folder now resolves outside the tenant's roots); null otherwise. */
  error: string | null;
  created_at: string;
  updated_at: string;
}

/** `searchable`: the file's chunks are keyword-searchable, their vectors are still being made; `indexed`: vectors too. */
export type FileStatus = 'queued' | 'indexing' | 'searchable' | 'indexed' | 'failed' | 'removed';

export interface DatasetFileTable {
  dataset_id: string;
  /** Relative to the dataset's ingestionPath, with forward slashes. */
  path: string;
  content_hash: string | null;
  size: number;
  mtime_ms: number;
  status: FileStatus;
  chunks: number;
  /** How many of the first `chunks` have their vector (all of them once `indexed`). */
  chunks_embedded: Generated<number>;
  error: string | null;
  generation: Generated<number>;
  updated_at: string;
}

export interface ModelTable {
  id: string;
  tenant_id: string;
  name: string;
  dtype: string;
  configuration: string;
  created_at: string;
  updated_at: string;
}

export interface EndpointTable {
  id: string;
  tenant_id: string;
  name: string;
  /** Lower case; unique in the tenant. */
  slug: string;
  description: string;
  summary: string;
  dataset_id: string | null;
  model_id: string | null;
  response_type: 'raw' | 'summary' | 'both';
  published: number;
  /** Comma-separated, trimmed, without empty tags. */
  tags: string;
  /** JSON of GenerationDefaults (endpoints/schemas.ts); `{}` when unset. */
  generation_defaults: string;
  created_at: string;
  updated_at: string;
}

export interface EndpointMarketplaceTable {
  endpoint_id: string;
  marketplace_id: string;
  published_at: string;
}

export interface PolicyTable {
  id: string;
  tenant_id: string;
  endpoint_id: string;
  name: string;
  policy_type: 'access' | 'rate_limit' | 'accounting' | 'mpp';
  configuration: string;
  created_at: string;
  updated_at: string;
}

export interface MarketplaceTable {
  id: string;
  tenant_id: string;
  name: string;
  /** Without a trailing slash. */
  url: string;
  username: string;
  email: string | null;
  /** Sealed (SecretBox): the hub session opens it when it logs in. */
  password: string;
  is_default: number;
  is_active: number;
  accounting_url: string | null;
  accounting_email: string | null;
  /** Sealed, opened for each accounting call. */
  accounting_password: string | null;
  /** hubAccountKey(url, username), unique across tenants; null only for a record deactivated as a duplicate. */
  account: string | null;
  /** The hub's id of this knode's satellite (API-CONTRACT 9.1); null without the registry or before registration. */
  satellite_id: string | null;
  /** The origin that satellite was registered at, as the hub canonicalised it. */
  satellite_url: string | null;
  created_at: string;
  updated_at: string;
}

/** Where a public URL came from: the settings route, SVC_PUBLIC_URL, the detected public IP, or the tunnel. */
export type PublicUrlSource = 'set' | 'configured' | 'detected' | 'tunnel';

export interface TenantSettingsTable {
  tenant_id: string;
  public_url: string | null;
  /** Where the public URL came from (migration 0011); null on URLs stored before it. */
  public_url_source: PublicUrlSource | null;
  /** Encrypted (SecretBox); null when no tunnel is configured. */
  tunnel_token: string | null;
  updated_at: string;
}

/** One fixed window of a counter (general API limits, rate_limit policies). */
export interface RateWindowTable {
  key: string;
  window_start: number;
  count: Generated<number>;
}

export interface QueryUsageTable {
  id: Generated<number>;
  tenant_id: string;
  endpoint_id: string;
  sender_email: string;
  dataset_cost: number;
  model_cost: number;
  total_cost: number;
  tokens: number;
  /** `refused`: a payment policy refused the query's credential (or the endpoint cannot be paid). */
  status: 'success' | 'error' | 'refused';
  error: string | null;
  /** What the query was charged, when a payment policy charged it: the rail, the amount (USD) and the transaction. */
  payment_rail: 'mpp' | 'accounting' | null;
  payment_amount: number | null;
  payment_transaction: string | null;
  /** From the query's arrival to its answer (or failure); null on rows older than migration 0010. */
  latency_ms: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  /** `playground`: the owner asked from the console's playground (usage summaries can leave these out). */
  origin: Generated<'api' | 'playground'>;
  /** The policy type that refused the query (`access`, `rate_limit`, `mpp`, `accounting`), when one did. */
  refused_by: string | null;
  created_at: string;
}

/** A tenant's payment wallet (API-CONTRACT 10.3): where MPP payments go. One per tenant. */
export interface PaymentWalletTable {
  tenant_id: string;
  /** `0x` + 40 hex digits, as given. */
  wallet_address: string;
  testnet: number;
  /** null: the network's public RPC. */
  rpc_url: string | null;
  /** Sealed (SecretBox): the HMAC key of the tenant's challenges, generated, never shown. */
  challenge_secret: string;
  created_at: string;
  updated_at: string;
}

/** A challenge id or transaction hash already paid with (or an mppx replay mark), until `expires_at` (ms). */
export interface PaymentConsumedTable {
  key: string;
  /** JSON. */
  value: string;
  expires_at: number | null;
}
