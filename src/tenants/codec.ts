import type { TenantTable, UserTable } from '../db/schema.ts';

/** The columns of a tenant record (`Tenant`, domain/principal.ts); its ingestion roots are read apart. */
export const TENANT_COLUMNS = ['id', 'name', 'created_at'] as const satisfies readonly (keyof TenantTable)[];

/** The columns of a user record. */
export const USER_COLUMNS = ['id', 'email', 'password_hash', 'created_at'] as const satisfies readonly (keyof UserTable)[];

/** The `ingestion_roots` column: a JSON array of absolute real paths. */
export const ingestionRootsCodec = {
  /** Anything but a list of strings (a hand-edited row) grants nothing rather than failing every request. */
  parse(text: string): string[] {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) ? parsed.filter((root): root is string => typeof root === 'string') : [];
  },

  serialize(roots: readonly string[]): string {
    return JSON.stringify(roots);
  },
};
