import type { ChunkVectors } from '../embeddings/pieces.ts';

/**
 * The second phase of indexing one dataset: its searchable files get their vectors, file after file in
 * the order they became searchable. The text is read back from the store a window at a time, so memory
 * holds a few hundred chunks whatever the size of the files, and each window's vectors are written as
 * soon as they come (in order), so a file's chunks gain their vectors progressively and a restart resumes
 * where the vectors stop.
 */

/** A file waiting for its vectors, in the generation it became searchable in. */
export interface LaneFile {
  readonly path: string;
  readonly generation: number;
}

export interface WindowLimits {
  readonly texts: number;
  readonly characters: number;
}

/** What the lane reads of a file: its next chunks without a vector (vectors/store.ts, UnembeddedChunks). */
interface LaneChunks {
  /** The row the chunks start at. */
  readonly from: number;
  readonly rows: readonly { readonly rowid: number; readonly content: string }[];
  /** Nothing after these is left to embed. */
  readonly last: boolean;
}

export interface EmbeddingLaneDeps {
  readonly window: WindowLimits;
  /** Windows embedded at once: two keep the embedder busy while the previous window is written. */
  readonly windowsInFlight: number;
  /**
   * The next chunks without a vector of each file, from row `from` on (undefined: from its first one
   * without a vector), in order until `limits` are reached (later files are left out of the answer);
   * undefined for a file that has no chunks any more.
   */
  read(files: readonly { file: LaneFile; from: number | undefined }[], limits: WindowLimits): Promise<(LaneChunks | undefined)[]>;
  /** Each text's vectors, one per piece the embedder can read (embeddings/pieces.ts). */
  embed(texts: string[], signal: AbortSignal): Promise<ChunkVectors[]>;
  /** Writes each file's vectors from row `from` on (with none, only records that it has all of them). */
  write(parts: readonly { file: LaneFile; from: number; vectors: ChunkVectors[] }[]): Promise<void>;
  /** The embedder failed on a window: its files cannot be indexed now. */
  failed(files: LaneFile[], error: unknown): Promise<void>;
  /** Anything else that went wrong (logged: the lane goes on). */
  unexpected(error: unknown): void;
  /** Every waiting file has been embedded. */
  drained?(): void;
}

interface Entry {
  readonly file: LaneFile;
  /** The next row to read (undefined: from the file's first chunk without a vector). */
  next?: number;
  cancelled: boolean;
  /** Every chunk of it is in a window already. */
  read: boolean;
}

interface Part {
  readonly entry: Entry;
  readonly from: number;
  readonly count: number;
}

interface Window {
  readonly parts: Part[];
  readonly texts: string[];
  readonly controller: AbortController;
}

export class EmbeddingLane {
  private queue: Entry[] = [];
  /** The queue's entries by path: a file queued again cancels its older entry without a walk of the queue. */
  private readonly queued = new Map<string, Entry>();
  private readonly windows = new Set<Window>();
  private writing: Promise<void> = Promise.resolve();
  private wake: (() => void) | undefined;
  private stopped = false;
  private readonly running: Promise<void>;

  constructor(private readonly deps: EmbeddingLaneDeps) {
    this.running = this.run();
  }

  /** Files waiting or being embedded. */
  get size(): number {
    return this.queue.length + this.windows.size;
  }

  /** Queues a file (after the ones already waiting); an older entry of the same path is dropped. */
  add(file: LaneFile): void {
    if (this.stopped) return;
    const older = this.queued.get(file.path);
    if (older) older.cancelled = true;
    this.forgetInWindows((other) => other.path === file.path);
    const entry: Entry = { file, cancelled: false, read: false };
    this.queue.push(entry);
    this.queued.set(file.path, entry);
    this.poke();
  }

  /** Drops the files `matches` picks (changed, removed, reindexed): a window holding only them is abandoned. */
  forget(matches: (file: LaneFile) => boolean): void {
    for (const entry of this.queue) if (matches(entry.file)) entry.cancelled = true;
    this.forgetInWindows(matches);
  }

  private forgetInWindows(matches: (file: LaneFile) => boolean): void {
    for (const window of this.windows) {
      for (const part of window.parts) if (matches(part.entry.file)) part.entry.cancelled = true;
      if (window.parts.every((part) => part.entry.cancelled)) window.controller.abort(new Error('the files were cancelled'));
    }
  }

  /** Stops embedding (the windows in flight are abandoned); what is left resumes at the dataset's next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const window of this.windows) window.controller.abort(new Error('the dataset stopped'));
    this.poke();
    await this.running;
    await this.writing;
  }

  private poke(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private sleep(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
    });
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.dropCancelled();
      if (this.queue.length === 0 || this.windows.size >= this.deps.windowsInFlight) {
        await this.sleep();
        continue;
      }
      try {
        const window = await this.nextWindow();
        if (window && !this.stopped) this.launch(window);
      } catch (error) {
        this.deps.unexpected(error);
        await new Promise((resolve) => setTimeout(resolve, 1_000).unref()); // the database may be closing
      }
    }
  }

  private dropCancelled(): void {
    if (!this.queue.some((entry) => entry.cancelled || entry.read)) return;
    this.queue = this.queue.filter((entry) => !entry.cancelled && !entry.read);
    this.queued.clear();
    for (const entry of this.queue) this.queued.set(entry.file.path, entry);
  }

  /** The next chunks to embed, from the first waiting files, up to the window's limits, in one read. */
  private async nextWindow(): Promise<Window | undefined> {
    const { window: limits } = this.deps;
    // A file gives at least one chunk (or its end): no more files than texts can fill one window.
    const entries = this.queue.slice(0, limits.texts);
    const answers = await this.deps.read(
      entries.map((entry) => ({ file: entry.file, from: entry.next })),
      limits,
    );
    const window: Window = { parts: [], texts: [], controller: new AbortController() };
    for (const [index, chunks] of answers.entries()) {
      const entry = entries[index] as Entry;
      if (entry.cancelled) continue;
      if (!chunks) {
        entry.read = true; // its chunks were replaced or deleted meanwhile
        continue;
      }
      window.parts.push({ entry, from: chunks.from, count: chunks.rows.length });
      for (const row of chunks.rows) window.texts.push(row.content);
      entry.next = (chunks.rows.at(-1)?.rowid ?? chunks.from - 1) + 1;
      if (chunks.last || chunks.rows.length === 0) entry.read = true;
    }
    this.dropCancelled();
    return window.parts.length > 0 ? window : undefined;
  }

  /** Embeds the window now; its vectors are written after those of the windows before it. */
  private launch(window: Window): void {
    this.windows.add(window);
    const vectors = window.texts.length > 0 ? this.deps.embed(window.texts, window.controller.signal) : Promise.resolve<ChunkVectors[]>([]);
    vectors.catch(() => undefined); // handled in order below
    this.writing = this.writing
      .then(() => this.writeWindow(window, vectors))
      .catch((error: unknown) => this.deps.unexpected(error))
      .finally(() => {
        this.windows.delete(window);
        if (this.size === 0 && !this.stopped) this.deps.drained?.();
        this.poke();
      });
  }

  private async writeWindow(window: Window, embedding: Promise<ChunkVectors[]>): Promise<void> {
    let vectors: ChunkVectors[];
    try {
      vectors = await embedding;
    } catch (error) {
      if (this.stopped || window.controller.signal.aborted) return;
      const files = window.parts.filter((part) => !part.entry.cancelled).map((part) => part.entry.file);
      const failed = new Set(files);
      this.forget((file) => failed.has(file));
      await this.deps.failed(files, error);
      return;
    }
    if (this.stopped) return;
    const parts: { file: LaneFile; from: number; vectors: ChunkVectors[] }[] = [];
    let offset = 0;
    for (const part of window.parts) {
      if (!part.entry.cancelled)
        parts.push({ file: part.entry.file, from: part.from, vectors: vectors.slice(offset, offset + part.count) });
      offset += part.count;
    }
    await this.deps.write(parts);
  }
}
