import { dirname } from 'node:path';

/**
 * How this process runs: from source (`bun src/main.ts`, the tests) or as the single binary that
 * scripts/build.ts makes with `bun build --compile`. Code that must behave differently in the binary
 * asks here, so that every such difference is a named call that is easy to find.
 */

/** True inside dist/knode. */
export const isCompiled: boolean = Bun.isStandaloneExecutable;

/** The folder holding the running binary; `vendor/` (node-llama-cpp) is looked up beside it. */
export function binaryDirectory(): string {
  // process.execPath is the binary's real path (Linux reads /proc/self/exe), so a symlink to the
  // binary from elsewhere (say /usr/local/bin/knode) still finds vendor/ beside the real file.
  return dirname(process.execPath);
}

/**
 * The URL of a worker thread's entry point. From source it is `fromSource`, the worker file beside its
 * caller. In the binary every extra entry point of the build (scripts/build.ts lists the workers) sits
 * at its path relative to the build root, src/, under `/$bunfs/root/`, and every module bundled with
 * main.ts sees main's URL (`/$bunfs/root/knode`) as import.meta.url; so the path under src/ is resolved
 * against that (Bun maps the .ts name to the bundled file).
 */
export function workerUrl(fromSource: URL, pathUnderSrc: string): URL {
  return isCompiled ? new URL(`./${pathUnderSrc}`, import.meta.url) : fromSource;
}
