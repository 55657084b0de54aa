import { availableParallelism, cpus } from 'node:os';

/**
 * The number of cores this process may use. Bun's availableParallelism() has been seen to answer
 * undefined in a busy process (many worker threads), so the CPU list stands in for it, and 1 for both.
 */
export function coreCount(): number {
  const parallelism = availableParallelism();
  if (Number.isInteger(parallelism) && parallelism > 0) return parallelism;
  return cpus().length || 1;
}
