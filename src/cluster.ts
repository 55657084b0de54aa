import type { Logger } from 'pino';
import type { Config } from './config.ts';
import { type ChangeEntry, type ChangeLog, LocalChangeLog } from './coordination/change-log.ts';
import { type Leases, LocalLeases } from './coordination/leases.ts';
import { PostgresChangeLog } from './coordination/postgres/change-log.ts';
import { PostgresLeases } from './coordination/postgres/leases.ts';
import { LocalReplicaLiveness, PostgresReplicaLiveness, type ReplicaLiveness } from './coordination/replica-liveness.ts';
import type { SatelliteRegistry } from './publishing/satellites.ts';
import type { State } from './state.ts';
import type { HubClients } from './syfthub/hub-client.ts';

/*
 * How this process coordinates with the other replicas sharing its PostgreSQL (cluster mode), or with nobody
 * (a single node): the leases, the change log and the replica's liveness, and the marketplace changes it
 * announces and hears. Part of the wiring (services.ts builds the rest).
 */

/** What replicas coordinate through: leases and the change log (coordination/), in memory on a single node. */
export interface Coordination {
  readonly leases: Leases;
  readonly changes: ChangeLog;
  /** Whether other replicas share the state (cluster mode): only then are changes announced. */
  readonly shared: boolean;
  /** Which replicas are gone (their `replica:<id>` lease lapsed or released; on a single node, earlier processes). */
  readonly liveness: ReplicaLiveness;
}

export function openCoordination(config: Config, state: State, log: Logger): Coordination {
  if (config.databaseUrl === undefined) {
    const leases = new LocalLeases();
    const liveness = new LocalReplicaLiveness(leases.holder);
    return { leases, changes: new LocalChangeLog(state.database.db), shared: false, liveness };
  }
  const onError = (error: unknown) => log.warn({ err: error }, 'cluster coordination');
  const leases = new PostgresLeases(state.database.db, {
    onError,
    ...(config.leaseTtlMs !== undefined ? { ttlMs: config.leaseTtlMs } : {}),
  });
  return {
    leases,
    changes: new PostgresChangeLog(state.database.db, { url: config.databaseUrl, onError }),
    shared: true,
    liveness: new PostgresReplicaLiveness(state.database.db, leases.holder),
  };
}

/** Tells the other replicas that a marketplace was connected (or its credentials changed) or deleted. */
export function announceMarketplace(coordination: Coordination, id: string, change: 'connected' | 'deleted', log: Logger): Promise<void> {
  const { changes, leases, shared } = coordination;
  if (!shared) return Promise.resolve(); // a single node has nobody to tell
  return changes
    .announce({ kind: 'marketplace.changed', payload: { marketplace: id, change, from: leases.holder } })
    .catch((error: unknown) => log.warn({ marketplace: id, err: error }, 'a marketplace change could not be announced'));
}

/**
 * Another replica changed a marketplace: the hub session kept here is dropped (the next use logs in with
 * the stored credentials), and a deleted one's pending satellite registration is forgotten.
 */
export function marketplaceSubscriber(leases: Leases, hubs: HubClients, satellites: SatelliteRegistry): (entry: ChangeEntry) => void {
  return (entry) => {
    const id = entry.payload.marketplace;
    if (entry.kind !== 'marketplace.changed' || typeof id !== 'string' || entry.payload.from === leases.holder) return;
    hubs.forget(id);
    if (entry.payload.change === 'deleted') satellites.forget(id);
  };
}
