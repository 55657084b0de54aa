/**
 * Start-up of the compiled binary: its size, the time from starting it to its first healthy answer
 * on /api/v1/health, and its resident memory (VmRSS) once idle, before any model or embedder loads.
 * Targets (issue 8): under 200 MB, under 1 s, under 150 MB.
 *
 * Each run starts the binary (staged with vendor/ in an empty folder) on a fresh data folder. The
 * first run also writes the embedded native files to the cache under its HOME; later runs share that
 * HOME, as every start after the first on a user's machine does.
 *
 * Usage: bun scripts/bench/startup.ts [--runs N] [--idle-ms N] [--dist <folder>]   (after npm run build)
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { launchKnode } from '../binary/launch.ts';
import { stageBinary } from '../binary/stage.ts';

const TARGETS = { sizeMb: 200, healthMs: 1000, rssMb: 150 };

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : Number.NaN;
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

function option(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

/** VmRSS of a process, in MB (10^6 bytes, like the sizes). */
function residentMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]);
  if (!Number.isFinite(kib)) throw new Error(`no VmRSS for process ${pid}`);
  return (kib * 1024) / 1_000_000;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const verdict = (value: number, target: number) => (value < target ? 'ok' : 'MISSED');

const runs = flag('runs', 5);
const idleMs = flag('idle-ms', 2000);
const dist = resolve(import.meta.dir, '../..', option('dist') ?? 'dist');
const scratch = mkdtempSync(join(tmpdir(), 'knode-startup-'));
try {
  const binary = stageBinary(dist, join(scratch, 'knode'));
  const sizeMb = statSync(binary).size / 1_000_000;
  const health: number[] = [];
  const rss: number[] = [];
  for (let run = 0; run < runs; run++) {
    // A fresh data folder each time; HOME (and so the cache of native files) is shared.
    rmSync(join(scratch, 'data'), { recursive: true, force: true });
    const knode = await launchKnode({ binary, scratch, env: { SVC_INGESTION_ROOTS: scratch } });
    await Bun.sleep(idleMs); // let start-up work that does not block health finish
    health.push(knode.healthyAfterMs);
    rss.push(residentMb(knode.pid));
    await knode.stop();
    console.log(
      `run ${run + 1}: healthy after ${knode.healthyAfterMs.toFixed(0)} ms, idle RSS ${rss.at(-1)?.toFixed(1)} MB${run === 0 ? ' (first start: writes the native files to the cache)' : ''}`,
    );
  }
  const warm = health.length > 1 ? health.slice(1) : health;
  console.log('');
  console.log(
    `binary size                   ${sizeMb.toFixed(1)} MB   (target < ${TARGETS.sizeMb} MB: ${verdict(sizeMb, TARGETS.sizeMb)})`,
  );
  console.log(
    `first healthy answer          ${median(warm).toFixed(0)} ms median of later starts, ${health[0]?.toFixed(0)} ms on the first (target < ${TARGETS.healthMs} ms: ${verdict(Math.max(...health), TARGETS.healthMs)})`,
  );
  console.log(
    `idle RSS (no model loaded)    ${median(rss).toFixed(1)} MB median, ${Math.max(...rss).toFixed(1)} MB max (target < ${TARGETS.rssMb} MB: ${verdict(Math.max(...rss), TARGETS.rssMb)})`,
  );
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
