import type { Logger } from 'pino';
import { isInsideAny } from '../util/paths.ts';
import { type DatasetRuntime, leaseLost, type TenantRoots } from './dataset-runtime.ts';
import type { ClaimedFile, FileRepository } from './files-repository.ts';

/** Files of one dataset claimed at once (rows only: a file's text is in memory only while it holds a parse turn). */
const DATASET_FILES_IN_FLIGHT = 32;
/** Files a dataset claims in one turn. */
const CLAIM_FILES = 16;

export interface ClaimLoopDeps {
  readonly files: FileRepository;
  readonly roots: TenantRoots;
  readonly log: Logger;
  /** Aborted when the engine closes: no more claims. */
  readonly closing: AbortSignal;
  /** The running datasets, in the order they take their turns. */
  running(): readonly DatasetRuntime[];
  /** The dataset's folder is no longer inside the tenant's roots: it stops with this reason. */
  refuse(runtime: DatasetRuntime, reason: string): Promise<void>;
  /** A file was claimed for the dataset: its keyword phase starts. */
  claimed(runtime: DatasetRuntime, file: ClaimedFile): void;
}

/**
 * Works the durable file queue (`dataset_files`): claims queued files in rounds across the running
 * datasets, each taking a few of its oldest in turn, so that a dataset with ten thousand files waiting
 * delays another's first file by one round, not by ten thousand.
 */
export class ClaimLoop {
  private pumping: Promise<void> | undefined;
  private wake = false;

  constructor(private readonly deps: ClaimLoopDeps) {}

  /** Makes sure the queue is being worked; cheap to call often (every finished file calls it). */
  kick(): void {
    if (this.deps.closing.aborted) return;
    this.wake = true;
    this.pumping ??= this.pump()
      .catch((error) => this.deps.log.error({ err: error }, 'ingestion stopped unexpectedly'))
      .finally(() => {
        this.pumping = undefined;
        if (this.wake) this.kick();
      });
  }

  /** Resolves once the round in progress (if any) is over. */
  async idle(): Promise<void> {
    await this.pumping;
  }

  private async pump(): Promise<void> {
    const { closing } = this.deps;
    while (this.wake && !closing.aborted) {
      this.wake = false;
      while (!closing.aborted && (await this.claimRound()) > 0);
    }
  }

  /**
   * One turn for every running dataset with room: it claims a few queued files (the oldest first) and
   * starts them. Rounds go on while anything was claimed; a finished file starts the next round.
   */
  private async claimRound(): Promise<number> {
    let claimed = 0;
    for (const runtime of this.deps.running()) {
      const room = DATASET_FILES_IN_FLIGHT - runtime.jobs.size;
      if (runtime.stopped || room <= 0 || leaseLost(runtime)) continue;
      try {
        claimed += await this.claimFor(runtime, room);
      } catch (error) {
        // A claim (or release) refused because the dataset's lease was lost: the dataset stops here, the others go on.
        if (!leaseLost(runtime)) throw error;
      }
    }
    return claimed;
  }

  /** The dataset's turn: a few of its queued files claimed under its lease, and started; how many were claimed. */
  private async claimFor(runtime: DatasetRuntime, room: number): Promise<number> {
    const { files, claimed: start } = this.deps;
    const batch = await files.claim([runtime.datasetId], Math.min(room, CLAIM_FILES), runtime.lease);
    if (batch.length === 0) return 0;
    if (runtime.stopped || !(await this.refreshRoots(runtime))) {
      for (const file of batch) await files.release(file, runtime.lease);
      return batch.length;
    }
    for (const file of batch) start(runtime, file);
    return batch.length;
  }

  /** The operator may have taken a root away from the tenant since the dataset started. */
  private async refreshRoots(runtime: DatasetRuntime): Promise<boolean> {
    if (runtime.keyed) return !runtime.stopped; // no folder: its documents are read from its source
    const roots = await this.deps.roots.of(runtime.tenantId);
    if (runtime.stopped) return false;
    const outside = runtime.entries.find((entry) => !isInsideAny(roots, entry.path));
    if (outside) {
      const noun = outside.kind === 'file' ? 'file' : 'folder';
      await this.deps.refuse(runtime, `the ${noun} '${outside.configured}' is no longer inside this tenant's ingestion roots`);
      return false;
    }
    runtime.roots = roots;
    return true;
  }
}
