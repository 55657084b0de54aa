/**
 * Keyword first: files are embedded only once none of them is in its keyword phase. While any file of a
 * running dataset is claimed and not yet searchable (waiting for a parse turn, parsing, or having its
 * chunks written to the keyword index), no embedding slice starts, for any dataset; slices already
 * running finish. The rule spans datasets because both phases share the machine's two cores: a slice of
 * one dataset's vectors slows another dataset's parsing as much as its own.
 *
 * Why: a file becomes searchable (by keywords, and by hybrid and vector searches through its keyword
 * evidence) seconds after it is parsed, while its vectors take the embedder minutes; embedding alongside
 * would take both cores and hold every file's first answer back for the sake of its better ones. With
 * the rule (issue 15, two-phase indexing, scripts/bench/ingest.ts): of 1,000 files the first is
 * keyword-searchable after 0.4 s and 90% after 2.4 to 4.1 s, 7.6% to 11.6% of the time until every chunk
 * has its vector (the goal was under 15%); of 5,000 files, 90% after 14 to 17 s (8.5% to 10.3%).
 *
 * The exception: when no file has started or finished its keyword phase for KEYWORD_FIRST_MS, that phase
 * counts as stalled and embedding goes on anyway, so that a file which takes long to parse (a long PDF,
 * up to the parse budget's time) does not hold every dataset's vectors back. Closing knode opens
 * the gate too: nothing is left for it to protect.
 */

import { type Clock, systemClock } from '../util/clock.ts';

/** How long the keyword phase may go without a file starting or finishing it before embedding goes on. */
export const KEYWORD_FIRST_MS = 2_000;

export interface KeywordFirstOptions {
  /** Whether a file of a running dataset is in its keyword phase now. */
  readonly inKeywordPhase: () => boolean;
  /** Asks the embedder's scheduler to look at `holdsEmbedding` again (the stall timer calls it). */
  readonly recheck: () => void;
  /** Aborted when the engine closes: the gate opens for good. */
  readonly closing: AbortSignal;
  /** Default: a monotonic clock (performance.now), so that a change of the system's time never holds embedding back. */
  readonly clock?: Clock;
}

const monotonicClock: Clock = { now: () => performance.now(), after: systemClock.after };

export class KeywordFirstGate {
  /** When a file last started or finished its keyword phase (never yet: as good as stalled). */
  private lastMove = Number.NEGATIVE_INFINITY;
  /** Cancels the stall timer, while one is set. */
  private cancelStallTimer: (() => void) | undefined;
  private readonly clock: Clock;

  constructor(private readonly options: KeywordFirstOptions) {
    this.clock = options.clock ?? monotonicClock;
    options.closing.addEventListener('abort', () => this.cancelStallTimer?.(), { once: true });
  }

  /** A file started or finished its keyword phase: the phase is moving. */
  moved(): void {
    this.lastMove = this.clock.now();
  }

  /** Whether embedding must wait now (asked before each slice starts). */
  holdsEmbedding(): boolean {
    const { inKeywordPhase, recheck, closing } = this.options;
    if (closing.aborted || !inKeywordPhase()) return false;
    if (this.clock.now() - this.lastMove >= KEYWORD_FIRST_MS) return false; // stalled
    // Looked at again when the keyword phase may count as stalled, if no file finishes before then.
    this.cancelStallTimer ??= this.clock.after(KEYWORD_FIRST_MS, () => {
      this.cancelStallTimer = undefined;
      recheck();
    });
    return true;
  }
}
