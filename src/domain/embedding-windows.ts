/**
 * An embedding window as the replicas share it (cluster mode, issue 26): the chunks still without vectors that
 * one replica claims and embeds. In domain/ because the ingestion that embeds it (`ingestion/shared-embedding.ts`)
 * and the claims on PostgreSQL (`coordination/postgres/embedding-windows.ts`) may not import each other.
 */

/** One file's rows in a window. */
export interface WindowPart {
  readonly fileKey: string;
  /** The part's first and last row in the dataset's chunks. */
  readonly from: number;
  readonly to: number;
}

export interface ClaimedWindow {
  readonly id: string;
  readonly datasetId: string;
  /** In row order. */
  readonly parts: readonly WindowPart[];
}
