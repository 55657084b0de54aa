import type { MarketplaceTable } from '../db/schema.ts';

/**
 * A marketplace as the repository returns it: flags as real booleans. Its passwords stay sealed
 * (SecretBox) in the record: the hub session opens the hub password when it logs in, and the accounting
 * password is opened for each accounting call, so neither lies in memory in clear for longer.
 */
export type MarketplaceRecord = Omit<MarketplaceTable, 'is_default' | 'is_active'> & { is_default: boolean; is_active: boolean };

/** The columns a marketplace is read from: every one of them, named, so a new column is a choice and not a leak. */
export const MARKETPLACE_COLUMNS = [
  'id',
  'tenant_id',
  'name',
  'url',
  'username',
  'email',
  'password',
  'is_default',
  'is_active',
  'accounting_url',
  'accounting_email',
  'accounting_password',
  'account',
  'satellite_id',
  'satellite_url',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof MarketplaceTable)[];

const flag = (value: boolean) => (value ? 1 : 0);

/** Rows to records and back: SQLite keeps booleans as 0 and 1. */
export const marketplaceCodec = {
  toRecord(row: MarketplaceTable): MarketplaceRecord {
    return { ...row, is_default: row.is_default === 1, is_active: row.is_active === 1 };
  },

  toRow(record: MarketplaceRecord): MarketplaceTable {
    return { ...record, is_default: flag(record.is_default), is_active: flag(record.is_active) };
  },

  /** Changes to some columns, flags included. */
  toChanges(changes: Partial<MarketplaceRecord>): Partial<MarketplaceTable> {
    const { is_default, is_active, ...columns } = changes;
    return {
      ...columns,
      ...(is_default !== undefined ? { is_default: flag(is_default) } : {}),
      ...(is_active !== undefined ? { is_active: flag(is_active) } : {}),
    };
  },
};
