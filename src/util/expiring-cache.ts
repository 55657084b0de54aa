/**
 * A bounded map whose entries lapse at their own time. Used for satellite-token verifications: a
 * token's answer is good until the token expires, and no flood of distinct tokens can grow it forever.
 */
export class ExpiringCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();

  /** `now`: the time entries lapse by, in epoch milliseconds (the caller's clock). */
  constructor(
    private readonly maxEntries: number,
    private readonly now: () => number,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** Keeps `value` until `expiresAt` (epoch milliseconds); a time already past stores nothing. */
  set(key: string, value: V, expiresAt: number): void {
    const now = this.now();
    if (expiresAt <= now) return;
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.prune(now);
    this.entries.set(key, { value, expiresAt });
  }

  get size(): number {
    return this.entries.size;
  }

  /** Drops lapsed entries, then the oldest ones until there is room for one more. */
  private prune(now: number): void {
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
    for (const key of this.entries.keys()) {
      if (this.entries.size < this.maxEntries) break;
      this.entries.delete(key);
    }
  }
}
