/**
 * `npm test`: every test file under test/, in two parts, then one summary.
 *
 * 1. The files without a browser, in parallel (`bun test --parallel`, one worker per core), slowest first
 *    by test/timings.json (milliseconds per file: only the order matters; new files are estimated there until
 *    `--update-timings` measures them) so that no long file starts last and runs alone. `--no-isolate`: each worker loads knode's modules once, as the single `bun test` process did;
 *    isolating every file doubled the CPU time (16 security files: 49 s against 23 s).
 * 2. The browser files (test/browser/, Chromium through puppeteer-core), one at a time, after the first part:
 *    run beside the parallel part, their pages timed out on a 2-core machine. They share one Chromium
 *    (test/browser/share-chromium.ts, preloaded), each file in a context of its own.
 *
 * Both parts print bun's own per-file progress. The run ends with the sums of both parts as bun writes
 * them (" N pass", " N fail"), which .ci/run reads, and exits non-zero when a test failed, a file failed
 * to load or a part's runner failed.
 *
 * The files about cluster mode (`test/postgres-*`, `test/cluster-*`: test/engine-files.ts, isClusterModeFile)
 * are not among them: most need a PostgreSQL server, and `npm test` needs none.
 *
 * `--engine=postgres` (`npm run test:postgres`, issue 26), in two parts, in parallel as the first part above,
 * ordered by test/timings-postgres.json; no browser part:
 * 1. the cluster-mode files, each starting the PostgreSQL it needs (Debian's, or the copy with pgvector);
 * 2. the route tests again, with every app's state in PostgreSQL (KNODE_TEST_ENGINE=postgres:
 *    test/helpers/app.ts, a private cluster per worker process): the files test/engine-files.ts selects (those
 *    building apps through createTestApp, less the SQLite-only ones and those left out for time, each listed
 *    there with why).
 *
 * Usage: bun scripts/test.ts [--engine=postgres] [--update-timings]   (--update-timings rewrites the timings file from this run)
 * Environment: KNODE_TEST_WORKERS (the first part's worker count, default the core count).
 */
import { availableParallelism, cpus } from 'node:os';
import { relative, resolve } from 'node:path';
import { isClusterModeFile, postgresRouteFiles } from '../test/engine-files.ts';

const ROOT = resolve(import.meta.dir, '..');
const BUN = process.execPath;
const engine = process.argv.includes('--engine=postgres') ? 'postgres' : 'sqlite';
/** Each engine's own durations: PostgreSQL's files take other times than SQLite's. */
const TIMINGS = engine === 'postgres' ? 'test/timings-postgres.json' : 'test/timings.json';
/** Per test; a browser page under load or a first ONNX conversion can take tens of seconds. */
const TIMEOUT_MS = 60_000;

interface PartResult {
  pass: number;
  fail: number;
  exitCode: number;
  seconds: number;
}

/** The test files bun would find under test/: those about cluster mode, and the others split by whether they drive a browser. */
function testFiles(): { plain: string[]; browser: string[]; cluster: string[] } {
  const files = [...new Bun.Glob('test/**/*.test.{ts,tsx,js,jsx}').scanSync({ cwd: ROOT })].sort();
  const isBrowser = (file: string) => file.startsWith('test/browser/');
  const single = files.filter((file) => !isClusterModeFile(file));
  return { plain: single.filter((file) => !isBrowser(file)), browser: single.filter(isBrowser), cluster: files.filter(isClusterModeFile) };
}

/** The last " N <word>" summary line of bun's output, or undefined when there is none. */
function lastCount(output: string, word: 'pass' | 'fail'): number | undefined {
  const matches = [...output.matchAll(new RegExp(`^\\s*(\\d+) ${word}$`, 'gm'))];
  const last = matches.at(-1);
  return last ? Number(last[1]) : undefined;
}

/** Copies a child's stream to ours as it comes (progress stays live) and keeps its text for the summary. */
async function relay(stream: ReadableStream<Uint8Array>, to: NodeJS.WriteStream): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of stream) {
    to.write(chunk);
    text += decoder.decode(chunk, { stream: true });
  }
  return text + decoder.decode();
}

async function runPart(title: string, args: string[], env: Record<string, string> = {}): Promise<PartResult> {
  console.log(`\n== ${title}`);
  const started = performance.now();
  const child = Bun.spawn([BUN, 'test', `--timeout=${TIMEOUT_MS}`, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [out, err, exitCode] = await Promise.all([relay(child.stdout, process.stdout), relay(child.stderr, process.stderr), child.exited]);
  const output = `${out}\n${err}`;
  const pass = lastCount(output, 'pass') ?? 0;
  let fail = lastCount(output, 'fail') ?? 0;
  // A runner that failed without counting a failed test (a crash, a file that did not load) is one failure: never green.
  if (exitCode !== 0 && fail === 0) fail = 1;
  return { pass, fail, exitCode, seconds: (performance.now() - started) / 1000 };
}

function workerCount(): number {
  const asked = Number(process.env.KNODE_TEST_WORKERS);
  if (Number.isInteger(asked) && asked > 0) return asked;
  // Bun's availableParallelism() may answer undefined in a busy process (docs/STACK.md).
  return availableParallelism?.() || cpus().length || 2;
}

const updateTimings = process.argv.includes('--update-timings');
const timingFlags = [`--timings=${TIMINGS}`, ...(updateTimings ? ['--update-timings'] : [])];
const { plain, browser, cluster } = testFiles();
const workers = workerCount();
const relativeToRoot = (file: string) => `./${relative(ROOT, resolve(ROOT, file))}`;

const parts: PartResult[] = [];
if (engine === 'postgres') {
  const routes = postgresRouteFiles(ROOT, plain);
  parts.push(
    await runPart(`${cluster.length} cluster-mode files, ${workers} in parallel`, [
      `--parallel=${workers}`,
      '--no-isolate',
      ...timingFlags,
      ...cluster.map(relativeToRoot),
    ]),
  );
  parts.push(
    await runPart(
      `${routes.length} route files on PostgreSQL, ${workers} in parallel`,
      [`--parallel=${workers}`, '--no-isolate', ...timingFlags, ...routes.map(relativeToRoot)],
      { KNODE_TEST_ENGINE: 'postgres' },
    ),
  );
} else {
  parts.push(
    await runPart(`${plain.length} files without a browser, ${workers} in parallel`, [
      `--parallel=${workers}`,
      '--no-isolate',
      ...timingFlags,
      ...plain.map(relativeToRoot),
    ]),
  );
}
if (engine === 'sqlite' && browser.length > 0) {
  parts.push(
    await runPart(`${browser.length} browser files, one at a time`, [
      '--preload=./test/browser/share-chromium.ts',
      ...browser.map(relativeToRoot),
    ]),
  );
}

const pass = parts.reduce((sum, part) => sum + part.pass, 0);
const fail = parts.reduce((sum, part) => sum + part.fail, 0);
const seconds = parts.reduce((sum, part) => sum + part.seconds, 0);
console.log(
  `\n== all tests${engine === 'postgres' ? ' on PostgreSQL' : ''}: ${parts.map((part) => `${part.seconds.toFixed(1)} s`).join(' + ')} = ${seconds.toFixed(1)} s`,
);
console.log(` ${pass} pass`);
console.log(` ${fail} fail`);
process.exit(parts.some((part) => part.exitCode !== 0) || fail > 0 ? 1 : 0);
