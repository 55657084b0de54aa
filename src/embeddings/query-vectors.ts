import { LruCache } from '../util/lru-cache.ts';
import type { Embedder } from './embedder.ts';

/** Query vectors kept per embedder: 512 × 512 floats is 1 MB for USE-lite. */
const QUERY_VECTORS_PER_EMBEDDER = 512;

const caches = new WeakMap<Embedder, LruCache<string, Float32Array>>();

/**
 * The vector of a query text, from a small cache: consumers repeat questions (a client retries, a page
 * of results is asked again), and embedding one query costs USE-lite tens of milliseconds. Embedders are
 * shared per spec and server (embedder.ts), so the cache is per embedder.
 */
export async function queryVector(embedder: Embedder, text: string, signal?: AbortSignal): Promise<Float32Array> {
  let cache = caches.get(embedder);
  if (!cache) {
    cache = new LruCache(QUERY_VECTORS_PER_EMBEDDER);
    caches.set(embedder, cache);
  }
  const known = cache.get(text);
  if (known) return known;
  const [vector] = await embedder.embed([text], signal);
  if (!vector) throw new Error(`embedder ${embedder.id} returned no vector`);
  cache.set(text, vector);
  return vector;
}
