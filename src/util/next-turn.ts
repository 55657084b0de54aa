/**
 * Resolves on a later turn of the event loop, after the I/O that is waiting (setImmediate: Bun polls
 * sockets before it runs immediates). Background work that chains synchronous SQLite calls through
 * promises never lets a request in otherwise: promise callbacks all run before the loop polls again.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
