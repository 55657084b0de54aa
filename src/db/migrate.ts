import { type Kysely, type Migration, Migrator } from 'kysely';
import { errorMessage } from '../domain/errors.ts';

/** A schema a newer knode migrated: start-up says so in one line (startup.ts) and stops. */
export class NewerSchemaError extends Error {
  readonly code = 'KNODE_NEWER_SCHEMA';
  override readonly name = 'NewerSchemaError';
}

/**
 * Brings a schema to its newest migration, the one way knode's three schemas migrate (the SQLite database,
 * PostgreSQL's control tables, the PostgreSQL vector store's tables). A schema a newer knode migrated holds a
 * migration this one does not know, and Kysely refuses it as "corrupted migrations: previously executed
 * migration … is missing": it is not corrupted, it is newer, which is what an operator who went back to an
 * older binary (or left one replica behind) needs to read. Replicas starting together take turns (the
 * migrator's lock).
 */
export async function migrateSchema(
  db: Kysely<unknown>,
  migrations: Readonly<Record<string, Migration>>,
  schema: { readonly name: string; readonly migrationTable?: string; readonly lockTable?: string },
): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => ({ ...migrations }) },
    ...(schema.migrationTable ? { migrationTableName: schema.migrationTable } : {}),
    ...(schema.lockTable ? { migrationLockTableName: schema.lockTable } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((result) => result.status === 'Error');
  if (!error && !failed) return;
  const reason = errorMessage(error);
  const unknown = /previously executed migration (\S+) is missing/.exec(reason)?.[1];
  if (unknown) {
    throw new NewerSchemaError(
      `${schema.name} was last opened by a newer knode (its migration ${unknown} is unknown to this one): run that version of knode or a newer one`,
    );
  }
  throw new Error(`${schema.name}: migration ${failed?.migrationName ?? ''} failed: ${reason}`);
}
