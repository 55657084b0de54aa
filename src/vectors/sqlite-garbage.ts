import { collectGarbage } from './chunk-sets.ts';
import { GarbageCollector } from './garbage-collector.ts';
import type { StoreConnection } from './sqlite-connection.ts';

/** Chunks deleted per transaction when garbage (a replaced or deleted file's chunks) is collected: about 20 ms. */
const COLLECT_ROWS = 512;

/**
 * The SQLite store's garbage collector: the shared loop (garbage-collector.ts) over batches of COLLECT_ROWS
 * hidden chunks, each deleted in one short write transaction (chunk-sets.ts, collectGarbage).
 */
export function sqliteGarbageCollector(connection: StoreConnection): GarbageCollector {
  return new GarbageCollector(() => connection.write((sqlite) => collectGarbage(sqlite, COLLECT_ROWS)));
}
