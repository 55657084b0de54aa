/**
 * Items queued under keys (dataset ids) and served in turns: each key keeps its own first-in, first-out
 * line, and the keys take turns, so a dataset with ten thousand items waiting delays another dataset's
 * first item by one turn, not by ten thousand.
 */
export class FairQueue<T> {
  // A Map iterates in insertion order: that order is the order of turns. A key that was served is
  // re-inserted, which moves it to the back of the line.
  private readonly lines = new Map<string, T[]>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Items waiting under `key`. */
  sizeOf(key: string): number {
    return this.lines.get(key)?.length ?? 0;
  }

  push(key: string, item: T): void {
    const line = this.lines.get(key);
    if (line) line.push(item);
    else this.lines.set(key, [item]);
    this.count++;
  }

  /** Takes the first item of the first key whose turn it is (and that `eligible` accepts). */
  shift(eligible: (key: string) => boolean = () => true): T | undefined {
    return this.serve((items) => items.shift(), eligible);
  }

  /**
   * Hands the line of the key whose turn it is to `take`, which removes the items it uses (several, when
   * a caller batches); that key then goes to the back. Keys `eligible` refuses keep their place.
   */
  serve<R>(take: (items: T[], key: string) => R, eligible: (key: string) => boolean = () => true): R | undefined {
    for (const [key, items] of this.lines) {
      if (!eligible(key)) continue;
      const before = items.length;
      const result = take(items, key);
      this.count -= before - items.length;
      this.lines.delete(key);
      if (items.length > 0) this.lines.set(key, items);
      return result;
    }
    return undefined;
  }

  /** Removes one item (a cancelled one); false when it was not waiting. */
  delete(key: string, item: T): boolean {
    const items = this.lines.get(key);
    const index = items?.indexOf(item) ?? -1;
    if (!items || index < 0) return false;
    items.splice(index, 1);
    this.count--;
    if (items.length === 0) this.lines.delete(key);
    return true;
  }
}
