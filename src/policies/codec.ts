import type { PolicyTable } from '../db/schema.ts';
import { checkObject } from '../util/json-schema.ts';
import { POLICY_CONFIGURATION_SCHEMAS, type PolicyType } from './configuration-schema.ts';

/**
 * Policy configurations as knode uses them, checked and with their defaults (only the keys of their type).
 * Type aliases rather than interfaces: they are shown as plain JSON objects.
 */
export type AccessConfiguration = {
  readonly mode: 'allow' | 'deny';
  readonly patterns: readonly string[];
};

type RateLimitConfiguration = {
  /** `<count>/<s|m|h|d>`, e.g. `10/m`. */
  readonly rate: string;
};

export type AccountingConfiguration = {
  readonly enabled: boolean;
  readonly require_transaction_token: boolean;
};

export type MppConfiguration = {
  /** USD per unit, at most 6 decimals. */
  readonly price: number;
  readonly unit_type: 'request' | 'document';
  /** Who pays this price: patterns as an access policy's. */
  readonly applied_to: readonly string[];
  readonly currency: 'USD';
};

type PiiFilterConfiguration = {
  /** Added to the filter's own instructions ('' when none). */
  readonly instructions: string;
};

/** A policy's type with the configuration of that type. */
export type PolicySettings =
  | { readonly policy_type: 'access'; readonly configuration: AccessConfiguration }
  | { readonly policy_type: 'rate_limit'; readonly configuration: RateLimitConfiguration }
  | { readonly policy_type: 'accounting'; readonly configuration: AccountingConfiguration }
  | { readonly policy_type: 'mpp'; readonly configuration: MppConfiguration }
  | { readonly policy_type: 'pii_filter'; readonly configuration: PiiFilterConfiguration };

export type PolicyConfiguration = PolicySettings['configuration'];

/** A policy as the repository returns it. */
export type PolicyRecord = {
  readonly id: string;
  readonly tenant_id: string;
  readonly endpoint_id: string;
  readonly name: string;
  readonly created_at: string;
  readonly updated_at: string;
} & PolicySettings;

export type PolicyOfType<T extends PolicyType> = Extract<PolicyRecord, { policy_type: T }>;

/** The columns a policy is read from: every one of them, named, so a new column is a choice and not a leak. */
export const POLICY_COLUMNS = [
  'id',
  'tenant_id',
  'endpoint_id',
  'name',
  'policy_type',
  'configuration',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof PolicyTable)[];

/**
 * Rows to records and back: the only place where a policy's configuration is parsed and serialised.
 * Policies hold no secrets, so nothing is sealed.
 */
export const policyCodec = {
  toRecord(row: PolicyTable): PolicyRecord {
    // What was stored was checked when it was written (configuration.ts); the defaults fill in what a row
    // written before a key had a default lacks. A row is never refused on read.
    const configuration = checkObject(POLICY_CONFIGURATION_SCHEMAS[row.policy_type], JSON.parse(row.configuration)).value;
    const settings = { policy_type: row.policy_type, configuration } as PolicySettings;
    const { id, tenant_id, endpoint_id, name, created_at, updated_at } = row;
    return { id, tenant_id, endpoint_id, name, created_at, updated_at, ...settings };
  },

  toRow(record: PolicyRecord): PolicyTable {
    const { id, tenant_id, endpoint_id, name, policy_type, configuration, created_at, updated_at } = record;
    return { id, tenant_id, endpoint_id, name, policy_type, configuration: policyCodec.serialize(configuration), created_at, updated_at };
  },

  serialize(configuration: PolicyConfiguration): string {
    return JSON.stringify(configuration);
  },
};
