/**
 * Starts a built knode binary the way a user would, for the smoke test and the start-up benchmark:
 * from a folder of its own, with a fresh data folder, HOME (so the cache of native files lands in the
 * scratch folder too) and a free port, and nothing of this machine's environment but PATH.
 *
 * With `hide`, the binary runs in a private mount namespace (`unshare`) where that folder, the project
 * checkout, is an empty tmpfs: the bundler freezes package paths such as __dirname to the build
 * machine's node_modules, so on the build machine a binary can look self-contained while it still
 * reads from there. Hiding the checkout proves it does not. When unshare is not permitted the binary
 * runs unhidden and `hidden` says so.
 */

import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { type Subprocess, spawn, spawnSync } from 'bun';

export interface LaunchOptions {
  /** The binary, in the folder it was staged to (its vendor/ beside it). */
  binary: string;
  /** Scratch folder: home/, data/ and knode.log are made in it. */
  scratch: string;
  /** Extra environment (SVC_INGESTION_ROOTS...). */
  env?: Record<string, string>;
  /** A folder the binary must not see (the project checkout). */
  hide?: string;
}

export interface RunningKnode {
  readonly url: string;
  readonly pid: number;
  /** Whether `hide` was applied. */
  readonly hidden: boolean;
  /** Milliseconds from spawn to the first 200 from /api/v1/health. */
  readonly healthyAfterMs: number;
  /** What the binary has written to stdout and stderr so far. */
  log(): string;
  /** SIGTERM (SIGKILL after 15 s); how it ended. */
  stop(): Promise<{ code: number | null; signal: string | null }>;
}

/** A port nobody listens on right now. */
export function freePort(): number {
  const listener = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const port = listener.port;
  listener.stop(true);
  return port;
}

/** Whether this machine lets us mount a tmpfs over `folder` in a private mount namespace. */
function canHide(folder: string): boolean {
  try {
    const probe = spawnSync(['unshare', '--mount', '--map-root-user', 'sh', '-c', 'mount -t tmpfs knode-hidden "$1"', 'sh', folder], {
      stdout: 'ignore',
      stderr: 'ignore',
    });
    return probe.exitCode === 0;
  } catch {
    return false; // no unshare at all
  }
}

function command(binary: string, scratch: string, hide: string | undefined): { argv: string[]; hidden: boolean } {
  // Hiding a folder that holds the binary or its scratch folder (TMPDIR inside the checkout) would break it.
  const inside = (path: string, folder: string) => resolve(path).startsWith(resolve(folder) + sep);
  if (!hide || inside(binary, hide) || inside(scratch, hide) || !canHide(hide)) return { argv: [binary], hidden: false };
  // sh mounts the tmpfs in the new namespace, then becomes knode (exec), so the pid is knode's own.
  const script = 'mount -t tmpfs knode-hidden "$1" && shift && exec "$@"';
  return { argv: ['unshare', '--mount', '--map-root-user', 'sh', '-c', script, 'sh', hide, binary], hidden: true };
}

export async function launchKnode(options: LaunchOptions, timeoutMs = 30_000): Promise<RunningKnode> {
  const home = join(options.scratch, 'home');
  const data = join(options.scratch, 'data');
  mkdirSync(home, { recursive: true });
  mkdirSync(data, { recursive: true });
  const port = freePort();
  const logPath = join(options.scratch, 'knode.log');
  const { argv, hidden } = command(options.binary, options.scratch, options.hide);
  const logFile = openSync(logPath, 'w');
  const started = performance.now();
  const child: Subprocess = spawn(argv, {
    cwd: options.scratch,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      SVC_HOST: '127.0.0.1',
      SVC_PORT: String(port),
      SVC_DATA_DIR: data,
      SVC_LOG_LEVEL: 'warn',
      ...options.env,
    },
    stdin: 'ignore',
    stdout: logFile,
    stderr: logFile,
  });
  closeSync(logFile); // the child has its own copy
  const url = `http://127.0.0.1:${port}`;
  const log = () => {
    try {
      return readFileSync(logPath, 'utf8');
    } catch {
      return '';
    }
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await child.exited;
      clearTimeout(killer);
    }
    return { code: child.exitCode, signal: child.signalCode === null ? null : String(child.signalCode) };
  };

  while (true) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`knode exited during start-up (code ${child.exitCode}, signal ${child.signalCode}):\n${log()}`);
    }
    if (performance.now() - started > timeoutMs) {
      await stop();
      throw new Error(`knode did not answer /api/v1/health within ${timeoutMs / 1000} s:\n${log()}`);
    }
    const healthy = await fetch(`${url}/api/v1/health`, { signal: AbortSignal.timeout(1_000) })
      .then((response) => response.status === 200)
      .catch(() => false);
    if (healthy) break;
    await Bun.sleep(5);
  }
  return { url, pid: child.pid, hidden, healthyAfterMs: performance.now() - started, log, stop };
}
