import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { keepLease, type LeaseKeeping } from './lease-keeper.ts';
import type { Leases } from './leases.ts';

/**
 * Whether a replica still runs, for work that must never act on a live replica's state (the settlement
 * reconciler, issue 26): each replica holds the lease `replica:<its holder id>` for as long as it runs,
 * renewed with its other leases; a replica whose lease lapsed (killed, or cut off for a TTL) or was released
 * (a graceful stop) is gone. On a single SQLite node the lease is granted at once, and every other replica id
 * is an earlier process of this node, so gone.
 */
export interface ReplicaLiveness {
  /** This replica's id: its lease holder id. */
  readonly self: string;
  /** Of these replicas, the ones gone. */
  gone(replicas: readonly string[]): Promise<ReadonlySet<string>>;
}

function livenessLeaseName(replica: string): string {
  return `replica:${replica}`;
}

/**
 * Holds this replica's liveness lease from now until `stop()` (asked again if it is ever lost). Resolves once it
 * is first held, so that nothing this replica records under its id is seen while the replica looks gone.
 */
export async function keepReplicaAlive(leases: Leases, onError: (error: unknown) => void): Promise<LeaseKeeping> {
  let held: () => void = () => undefined;
  const first = new Promise<void>((resolve) => {
    held = resolve;
  });
  // Nothing to run under it: holding (and renewing) the lease is the whole job.
  const keeping = keepLease(leases, livenessLeaseName(leases.holder), () => held(), { onError });
  await first;
  return keeping;
}

/** A single node: any replica but this process was an earlier process. */
export class LocalReplicaLiveness implements ReplicaLiveness {
  constructor(readonly self: string) {}

  async gone(replicas: readonly string[]): Promise<ReadonlySet<string>> {
    return new Set(replicas.filter((replica) => replica !== this.self));
  }
}

/** Cluster mode: a replica is alive while its row in `coordination_leases` names it and has not lapsed (by the server's clock). */
export class PostgresReplicaLiveness implements ReplicaLiveness {
  constructor(
    private readonly db: Db,
    readonly self: string,
  ) {}

  async gone(replicas: readonly string[]): Promise<ReadonlySet<string>> {
    const others = replicas.filter((replica) => replica !== this.self);
    if (others.length === 0) return new Set();
    const names = others.map(livenessLeaseName);
    const { rows } = await sql<{ name: string; holder: string }>`
      SELECT name, holder FROM coordination_leases
      WHERE name IN (${sql.join(names)}) AND expires_at > clock_timestamp()`.execute(this.db);
    // A released lease names no holder (''): gone like a lapsed one. Only the replica itself keeps it alive.
    const alive = new Set(rows.filter((row) => row.name === livenessLeaseName(row.holder)).map((row) => row.holder));
    return new Set(others.filter((replica) => !alive.has(replica)));
  }
}
