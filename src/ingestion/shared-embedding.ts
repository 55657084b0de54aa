import type { Logger } from 'pino';
import type { Db } from '../db/database.ts';
import type { ClaimedWindow, WindowPart } from '../domain/embedding-windows.ts';
import type { Embedder } from '../embeddings/embedder.ts';
import type { ChunkVectors } from '../embeddings/pieces.ts';
import type { VectorStore } from '../vectors/store.ts';
import type { WindowLimits } from './embedding-lane.ts';
import type { FileRepository } from './files-repository.ts';
import type { ProgressLog } from './progress-log.ts';

/**
 * Cluster mode's embedding phase: every replica that has a dataset's embedder embeds windows of its chunks,
 * so two replicas embed a big dataset about twice as fast. (A single SQLite node keeps its lanes,
 * embedding-lane.ts, exactly as before: this runs only when services.ts wires the PostgreSQL windows.)
 *
 * Design, and why:
 * - Windows, not files or datasets, are shared: a window is a few files' next chunks up to the lane's
 *   limits (256 texts, 64,000 characters), claimed in `embedding_windows` (coordination/postgres/
 *   embedding-windows.ts) by one replica at a time. One big file is thus split between replicas too.
 * - A claim lives as a lease does: renewed every third of its TTL while the window is embedded or waits,
 *   taken over whole (first in row order) once it lapses. A replica that dies frees its windows after the
 *   TTL; whoever waits behind them (or any replica) embeds them again. Nothing is lost: rows without vectors
 *   stay without vectors until some window writes them.
 * - Vectors are written in order per file, as on one node: the store writes a file's vectors only from
 *   its first chunk without one (under the set's row lock), and a window waits until no window holds
 *   earlier rows of its files (`isNext`). Since windows of a file are claimed in row order, the waits never
 *   form a cycle. A late write of a former claimer (its window taken over) fails that check: no chunk ever
 *   gets two vectors, whatever the timing.
 * - The file turns `indexed` through the same FileRepository.embedded as on one node, which acts only on
 *   a `searchable` file of the generation the vectors were made for: when the last window of a file is
 *   written its status changes once, and a late write of an earlier window's count leaves it as it is.
 * - Only replicas with the same embedder embed: each builds the dataset's embedder from the dataset's
 *   configuration (a replica lacking the model files, a `transformers:` model missing from its cache
 *   without downloads allowed, fails there and never claims), and records the vector of one fixed text
 *   (`embedding_probes`); a replica claims only when its vector agrees with that of the replica holding
 *   the dataset's lease (the one whose runtime chose the embedder), which catches model files that differ
 *   across machines under one name.
 * - Keyword first stays per replica: no window is claimed while this replica's own files are in their
 *   keyword phase (keyword-first.ts), and the slices go through this replica's scheduler, taking turns
 *   with its other datasets' (embedding-scheduler.ts).
 * - The holder's lane (embedding-phase.ts, cluster mode) embeds nothing: it only marks `indexed` a file
 *   whose vectors were all written before it was (a stop between the two), as a lane does on one node.
 *
 * One job, this replica's share of the windows (claim, embed, wait for its turn, write, renew), hence the
 * file's length.
 *
 * What differs from one node: an embedder that fails releases the window and this replica leaves the
 * dataset alone for a while (the files stay `searchable` and are tried again, instead of `failed`), since
 * a helper's failure says nothing about the files; and other replicas see new work by polling (POLL_MS).
 */

/** The table of windows (coordination/postgres/embedding-windows.ts implements it). */
export interface EmbeddingWindows {
  readonly claimer: string;
  readonly ttlMs: number;
  takeLapsed(datasetId: string): Promise<ClaimedWindow | undefined>;
  claimedUpTo(datasetId: string): Promise<Map<string, number>>;
  claim(datasetId: string, parts: readonly WindowPart[]): Promise<ClaimedWindow | undefined>;
  isNext(window: ClaimedWindow): Promise<boolean>;
  renew(windowIds: readonly string[]): Promise<Set<string>>;
  finish(window: ClaimedWindow): Promise<void>;
  saveProbe(datasetId: string, embedder: string, probe: Float32Array): Promise<void>;
  holderProbe(datasetId: string): Promise<{ embedder: string; probe: Float32Array } | undefined>;
}

export interface SharedEmbeddingDeps {
  readonly windows: EmbeddingWindows;
  readonly store: VectorStore;
  readonly files: FileRepository;
  readonly db: Db;
  readonly log: Logger;
  /** The datasets whose chunks may be embedded now (running ones). */
  datasets(): Promise<readonly string[]>;
  /** This replica's embedder for the dataset, from the dataset's configuration; throws when this replica lacks it. */
  embedderOf(datasetId: string): Promise<Embedder>;
  /** Whether this replica holds the dataset's lease (its probe is the one the others compare with). */
  holds(datasetId: string): boolean;
  /**
   * Embeds through this replica's scheduler (slices in turns across datasets, the keyword-first gate): each
   * text's vectors, one per piece the embedder can read (embeddings/pieces.ts).
   */
  embed(datasetId: string, embedder: Embedder, texts: string[], signal: AbortSignal): Promise<ChunkVectors[]>;
  /** Whether this replica may start embedding now (keyword-first.ts). */
  mayEmbed(): boolean;
  readonly onEmbedded?: (chunks: number) => void;
  /** The dataset's progress log, where its runtime runs here. */
  progressOf(datasetId: string): ProgressLog | undefined;
  readonly window: WindowLimits;
  /** Windows of one dataset embedded at once on this replica. */
  readonly windowsInFlight: number;
  /** How often an idle replica looks for work (ms). */
  readonly pollMs?: number;
}

/** Idle replicas look for new windows this often; a poke (a file of a dataset run here) is at once. */
const POLL_MS = 1_000;
/** While the window before it is elsewhere, how often a finished window asks whether it may write. */
const TURN_POLL_MS = 100;
/** Windows of one dataset waiting for their turn to write before no new one is claimed (lapsed ones still are). */
const MAX_WAITING = 4;
/** How long a replica leaves a dataset alone after its embedder failed or disagreed. */
const BACK_OFF_MS = 30_000;
/** How soon a replica asks again for the holder's probe while there is none yet. */
const PROBE_RETRY_MS = 250;
/** The fixed text whose vector says whether two replicas' embedders are the same. */
const PROBE_TEXT = 'knode embedding probe: the quick brown fox jumps over the lazy dog 0123456789';
/** Cosine similarity two probes must reach (the same model gives the same vector up to float noise). */
const PROBE_AGREEMENT = 0.999;

interface Running {
  readonly window: ClaimedWindow;
  readonly controller: AbortController;
  /** Embedded, waiting for its turn to write. */
  waiting: boolean;
}

export class SharedEmbedding {
  private readonly running = new Map<string, Running>();
  /** Each dataset's embedder, or how long it is left alone: `until` is on the monotonic clock (the loop's pauses are real sleeps). */
  private readonly ready = new Map<string, { embedder?: Embedder; until: number }>();
  /** Writes that failed in a row, per dataset (reset by one that succeeds). */
  private readonly failedWrites = new Map<string, number>();
  private stopped = false;
  private wake: (() => void) | undefined;
  /** Finished windows waiting for their turn to write, woken when one of this replica's own windows ends. */
  private readonly turnWaiters = new Set<() => void>();
  private loop: Promise<void> | undefined;
  private renewal: ReturnType<typeof setInterval> | undefined;
  private readonly pending = new Set<Promise<void>>();
  /** Windows this replica wrote, the chunks in them, and writes given up (tests and the bench count them). */
  readonly written = { windows: 0, chunks: 0, failed: 0 };

  constructor(private readonly deps: SharedEmbeddingDeps) {}

  /**
   * Starts claiming and renewing, once whoever owns this is whole: the first round asks `mayEmbed`, which
   * the ingestion engine answers from parts it makes after this one. Again does nothing.
   */
  start(): void {
    if (this.loop || this.stopped) return;
    this.renewal = setInterval(() => void this.renew(), Math.max(50, Math.floor(this.deps.windows.ttlMs / 3)));
    this.renewal.unref?.();
    this.loop = this.run();
  }

  /** Something may be waiting (a file became searchable here, the keyword-first gate opened). */
  poke(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** Stops claiming, abandons windows in flight (their claims lapse or are taken over) and waits for writes under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.renewal);
    for (const { controller } of this.running.values()) controller.abort(new Error('embedding stopped on this replica'));
    this.poke();
    await this.loop;
    await Promise.allSettled([...this.pending]);
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let claimed = false;
      try {
        if (this.deps.mayEmbed()) claimed = await this.claimRound();
      } catch (error) {
        this.deps.log.warn({ err: error }, 'claiming an embedding window failed');
      }
      if (!claimed && !this.stopped) await this.sleep(this.deps.pollMs ?? POLL_MS);
    }
  }

  /** One claim attempt per dataset with room; true when a window was claimed. */
  private async claimRound(): Promise<boolean> {
    let claimed = false;
    for (const datasetId of await this.deps.datasets()) {
      if (this.stopped || !this.deps.mayEmbed()) break;
      const mine = [...this.running.values()].filter((running) => running.window.datasetId === datasetId);
      const embedding = mine.filter((running) => !running.waiting).length;
      if (embedding >= this.deps.windowsInFlight) continue;
      const embedder = await this.readyEmbedder(datasetId);
      if (!embedder) continue;
      const window = await this.claimWindow(datasetId, mine.length - embedding < MAX_WAITING);
      if (!window) continue;
      claimed = true;
      this.launch(window, embedder);
    }
    return claimed;
  }

  private async claimWindow(datasetId: string, mayOpenNew: boolean): Promise<ClaimedWindow | undefined> {
    const { windows } = this.deps;
    const lapsed = await windows.takeLapsed(datasetId);
    if (lapsed || !mayOpenNew) return lapsed;
    const parts = await this.plan(datasetId);
    return parts.length > 0 ? windows.claim(datasetId, parts) : undefined;
  }

  /** The next window: the first unclaimed chunks without a vector, file after file in the order they became searchable. */
  private async plan(datasetId: string): Promise<WindowPart[]> {
    const { store, windows, window: limits } = this.deps;
    const claimed = await windows.claimedUpTo(datasetId);
    const files = await store.filesToEmbed(datasetId);
    const parts: WindowPart[] = [];
    let texts = limits.texts;
    let characters = limits.characters;
    for (let start = 0; start < files.length && texts > 0 && characters > 0; start += 64) {
      const batch = files.slice(start, start + 64).map((fileKey) => {
        const last = claimed.get(fileKey);
        return { fileKey, from: last === undefined ? undefined : last + 1 };
      });
      const answers = await store.unembeddedOf(datasetId, batch, { texts, characters });
      for (const [index, answer] of answers.entries()) {
        const first = answer?.rows[0];
        const last = answer?.rows.at(-1);
        if (!answer || !first || !last) continue;
        parts.push({ fileKey: (batch[index] as { fileKey: string }).fileKey, from: first.rowid, to: last.rowid });
        texts -= answer.rows.length;
        for (const row of answer.rows) characters -= row.content.length;
      }
    }
    return parts;
  }

  /**
   * This replica's embedder for the dataset when it may embed its windows: built from the dataset's
   * configuration, with a probe that agrees with the lease holder's. Remembered for a while either way.
   */
  private async readyEmbedder(datasetId: string): Promise<Embedder | undefined> {
    const known = this.ready.get(datasetId);
    if (known && known.until > performance.now()) return known.embedder;
    const { windows, log } = this.deps;
    let embedder: Embedder | undefined;
    let unknown = false;
    try {
      const candidate = await this.deps.embedderOf(datasetId);
      const [probe] = await candidate.embed([PROBE_TEXT]);
      if (!probe) throw new Error('the embedder gave no vector');
      await windows.saveProbe(datasetId, candidate.id, probe);
      const reference = this.deps.holds(datasetId) ? { embedder: candidate.id, probe } : await windows.holderProbe(datasetId);
      if (reference && reference.embedder === candidate.id && agree(reference.probe, probe)) embedder = candidate;
      else if (reference)
        log.warn(
          { dataset: datasetId, embedder: candidate.id },
          "this replica's embedder differs from the dataset holder's: it embeds none of its windows",
        );
      else unknown = true;
    } catch (error) {
      log.info({ dataset: datasetId, err: error }, "this replica lacks the dataset's embedder: it embeds none of its windows");
    }
    // Agreed: checked again now and then (the holder may change). Not: tried again after a back-off, or
    // soon while the holder has recorded no probe yet (it is starting the dataset).
    this.ready.set(datasetId, { ...(embedder ? { embedder } : {}), until: performance.now() + (unknown ? PROBE_RETRY_MS : BACK_OFF_MS) });
    return embedder;
  }

  private launch(window: ClaimedWindow, embedder: Embedder): void {
    const running: Running = { window, controller: new AbortController(), waiting: false };
    this.running.set(window.id, running);
    const work = this.process(running, embedder)
      .catch((error: unknown) => {
        if (!running.controller.signal.aborted) {
          this.deps.log.warn(
            { dataset: window.datasetId, err: error },
            'an embedding window failed: this replica leaves the dataset for a while',
          );
          this.ready.set(window.datasetId, { until: performance.now() + BACK_OFF_MS });
        }
        return this.deps.windows.finish(window).catch(() => undefined);
      })
      .finally(() => {
        this.running.delete(window.id);
        this.pending.delete(work);
        this.poke();
        // The window after it may be this replica's too: it asks now rather than at its next poll.
        for (const wake of [...this.turnWaiters]) wake();
      });
    this.pending.add(work);
  }

  private async process(running: Running, embedder: Embedder): Promise<void> {
    const { window, controller } = running;
    const { store, windows } = this.deps;
    const { datasetId } = window;
    // From each part's first row without a vector: a former claimer may have written some before it died.
    // Part by part: each read is limited to its own rows (one read of all would spend the limit on the first file).
    const parts: { fileKey: string; from: number; texts: string[] }[] = [];
    for (const part of window.parts) {
      const [answer] = await store.unembeddedOf(datasetId, [{ fileKey: part.fileKey, from: part.from }], {
        texts: part.to - part.from + 1,
        characters: Number.MAX_SAFE_INTEGER,
      });
      const rows = (answer?.rows ?? []).filter((row) => row.rowid <= part.to);
      const first = rows[0];
      if (first) parts.push({ fileKey: part.fileKey, from: first.rowid, texts: rows.map((row) => row.content) });
    }
    const vectors = await this.deps.embed(
      datasetId,
      embedder,
      parts.flatMap((part) => part.texts),
      controller.signal,
    );
    running.waiting = true;
    this.poke(); // a slot for the next window to embed
    while (!(await windows.isNext(window))) {
      if (controller.signal.aborted) throw controller.signal.reason;
      await this.turnPoll();
    }
    if (controller.signal.aborted) throw controller.signal.reason;
    try {
      await this.write(datasetId, parts, vectors);
      this.failedWrites.delete(datasetId);
    } catch (error) {
      // Usually a race, not a fault: the rows were written meanwhile (a window given up before this one, or
      // this one taken over) or replaced. Given up: whatever still lacks a vector is claimed again. A write
      // failing again and again (the database refusing these vectors) makes this replica wait longer each time.
      this.written.failed++;
      const failures = (this.failedWrites.get(datasetId) ?? 0) + 1;
      this.failedWrites.set(datasetId, failures);
      if (failures > 1) this.ready.set(datasetId, { until: performance.now() + Math.min(2 ** failures * 1_000, 300_000) });
      this.deps.log.info({ dataset: datasetId, err: error }, 'the vectors of an embedding window were not written');
    }
    await windows.finish(window);
  }

  /** Writes the window's vectors, in order, and marks the files that now have all of theirs `indexed`. */
  private async write(datasetId: string, parts: readonly { fileKey: string; from: number; texts: string[] }[], vectors: ChunkVectors[]) {
    const generations = await this.searchableGenerations(
      datasetId,
      parts.map((part) => part.fileKey),
    );
    let offset = 0;
    const live: { fileKey: string; from: number; vectors: ChunkVectors[]; generation: number }[] = [];
    for (const part of parts) {
      const generation = generations.get(part.fileKey);
      if (generation !== undefined)
        live.push({ fileKey: part.fileKey, from: part.from, vectors: vectors.slice(offset, offset + part.texts.length), generation });
      offset += part.texts.length;
    }
    if (live.length === 0) return;
    const written = await this.deps.store.addVectorsOf(datasetId, live);
    const embedded = live.flatMap((part, index) => {
      const count = written[index]?.embedded;
      return count === undefined
        ? []
        : [{ file: { path: part.fileKey, generation: part.generation }, embedded: count, vectors: part.vectors.length }];
    });
    await this.deps.files.embedded(datasetId, embedded);
    const chunks = embedded.reduce((sum, part) => sum + part.vectors, 0);
    this.written.windows++;
    this.written.chunks += chunks;
    this.deps.onEmbedded?.(chunks);
    const progress = this.deps.progressOf(datasetId);
    progress?.embedded(chunks);
    progress?.report();
  }

  /** The generation of each of the files that is `searchable` (its vectors are wanted). */
  private async searchableGenerations(datasetId: string, paths: readonly string[]): Promise<Map<string, number>> {
    if (paths.length === 0) return new Map();
    const rows = await this.deps.db
      .selectFrom('dataset_files')
      .select(['path', 'generation'])
      .where('dataset_id', '=', datasetId)
      .where('status', '=', 'searchable')
      .where('path', 'in', [...new Set(paths)])
      .execute();
    return new Map(rows.map((row) => [row.path, row.generation]));
  }

  /** Renews every window held here; one taken over meanwhile (this replica paused past the TTL) is abandoned. */
  private async renew(): Promise<void> {
    const ids = [...this.running.keys()];
    if (ids.length === 0) return;
    try {
      const held = await this.deps.windows.renew(ids);
      for (const id of ids) if (!held.has(id)) this.running.get(id)?.controller.abort(new Error('the window was taken over'));
    } catch (error) {
      this.deps.log.warn({ err: error }, 'embedding windows could not be renewed');
    }
  }

  /** TURN_POLL_MS, or less when a window of this replica ends meanwhile. */
  private turnPoll(): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.turnWaiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, TURN_POLL_MS);
      this.turnWaiters.add(wake);
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

function agree(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let index = 0; index < a.length; index++) {
    dot += (a[index] as number) * (b[index] as number);
    normA += (a[index] as number) ** 2;
    normB += (b[index] as number) ** 2;
  }
  return dot / Math.sqrt(normA * normB) >= PROBE_AGREEMENT;
}
