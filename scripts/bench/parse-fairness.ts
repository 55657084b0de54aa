/**
 * Parsing under hostile files (issue 22, item 4): how long another dataset's small files wait while one
 * dataset's files hold the parser, before and after the parse budget and the parse lanes.
 *
 * Files go through the parser pool and the parse turns exactly as the ingestion engine hands them out
 * (keyword-phase.ts: a TurnGate of the pool's threads + 1 permits, one more than a dataset's lane per dataset, and
 * `pool.prepare` with the dataset as the lane); the store and the embedder are left out, they come after.
 * Dataset A queues three copies of a file first; once the first holds a thread, dataset B queues three small
 * notes. Reported: how long B waited until all three were parsed, and how A's files ended.
 *
 * Scenarios, each run "before" (one parse thread, 120 s per file, no page or memory budget: the pool as it
 * was) and "after" (the defaults of parser-pool.ts):
 * - hostile: A's files are a 100,000-page PDF (about 25 MB, a line per page), as in issue 22;
 * - lanes: A's files are 5,000-page PDFs of book pages (within every budget: 14 s each on a quiet machine), so only the
 *   lanes make the difference.
 * `--budgets` measures instead what the budgets' comments cite: the slowest files within them, parsed alone.
 *
 * Usage: bun scripts/bench/parse-fairness.ts [--budgets] [--scenarios=hostile,lanes] [--runs=before,after]
 * The hostile "before" run takes about six minutes (three files, each stopped at 120 s). Each run is a process
 * of its own (`--one=<scenario>:<run>`), so that its peak resident size is its own.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PrepareOptions } from '../../src/ingestion/parse-worker.ts';
import { ParserPool, type ParserPoolOptions } from '../../src/ingestion/parser-pool.ts';
import { TurnGate } from '../../src/ingestion/turn-gate.ts';
import { buildDocx, buildPdf } from '../../test/fixtures/make-documents.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => (args.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1] ?? fallback).split(',');
const MEGABYTE = 1024 * 1024;

const BEFORE: ParserPoolOptions = {
  size: 1,
  spare: 0,
  timeoutMs: 120_000,
  maxPages: Number.POSITIVE_INFINITY,
  maxHeapBytes: Number.POSITIVE_INFINITY,
};
const AFTER: ParserPoolOptions = {};

const LINE = 'The quick brown fox jumps over the lazy dog while the river runs down to the sea';
/** A book page: 30 lines of about 80 characters (2,400 characters). */
const BOOK_PAGE = Array.from({ length: 30 }, (_, i) => `${i} ${LINE}`);

const root = mkdtempSync(join(tmpdir(), 'knode-bench-parse-'));
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

function prepareOptions(folder: string): PrepareOptions {
  // SVC_MAX_FILE_MB and SVC_MAX_TEXT_MB at their defaults.
  return {
    chunkSize: 1000,
    chunkOverlap: 100,
    knownHash: null,
    folder,
    roots: [root],
    maxFileBytes: 100 * MEGABYTE,
    maxTextBytes: 20 * MEGABYTE,
  };
}

/** A dataset folder holding `files` (name → bytes). */
function folderOf(name: string, files: Record<string, Uint8Array | string>): string {
  const folder = join(root, name);
  mkdirSync(folder);
  for (const [file, bytes] of Object.entries(files)) writeFileSync(join(folder, file), bytes);
  return folder;
}

/** Resident size of this process (the parse threads are in it), polled while `work` runs. */
async function peakRss<T>(work: () => Promise<T>): Promise<{ result: T; peakMb: number }> {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 50);
  try {
    return { result: await work(), peakMb: Math.round(peak / MEGABYTE) };
  } finally {
    clearInterval(timer);
  }
}

async function scenario(name: string, slowFile: Uint8Array, run: string): Promise<void> {
  const pool = new ParserPool(run === 'before' ? BEFORE : AFTER);
  // As keyword-phase.ts builds its parse turns.
  const gate = new TurnGate(pool.threadCount + 1, undefined, pool.size + 1);
  const slow = folderOf(`${name}-${run}-a`, { 'copy-1.pdf': slowFile, 'copy-2.pdf': slowFile, 'copy-3.pdf': slowFile });
  const small = folderOf(`${name}-${run}-b`, {
    'one.txt': 'A short note about lighthouses.',
    'two.md': '# Tides\n\nThe tide comes in twice a day.',
    'three.txt': 'Harbour opening hours, summer and winter.',
  });
  const parse = async (dataset: string, folder: string, file: string, started?: () => void) => {
    const release = await gate.acquire(dataset, new AbortController().signal);
    started?.();
    const began = performance.now();
    try {
      const prepared = await pool.prepare(join(folder, file), prepareOptions(folder), undefined, dataset);
      return { file, ms: performance.now() - began, outcome: `${prepared.chunks.length} chunks` };
    } catch (error) {
      return { file, ms: performance.now() - began, outcome: error instanceof Error ? error.message : String(error) };
    } finally {
      release();
    }
  };
  const { result, peakMb } = await peakRss(async () => {
    const t0 = performance.now();
    let firstStarted: () => void = () => undefined;
    const holding = new Promise<void>((resolve) => {
      firstStarted = resolve;
    });
    const aFiles = ['copy-1.pdf', 'copy-2.pdf', 'copy-3.pdf'].map((file, i) => parse('a', slow, file, i === 0 ? firstStarted : undefined));
    await holding;
    const queued = performance.now();
    const bFiles = ['one.txt', 'two.md', 'three.txt'].map((file) => parse('b', small, file));
    const b = await Promise.all(bFiles);
    const bWaited = performance.now() - queued;
    const a = await Promise.all(aFiles);
    return { a, b, bWaited, total: performance.now() - t0 };
  });
  await pool.close();
  // A file's time runs from its parse turn, so it includes the wait in the pool's queue behind its own dataset.
  const aOutcomes = result.a.map((file) => `${file.file}: ${seconds(file.ms)}, ${file.outcome}`).join('; ');
  console.log(
    `${name} / ${run}: dataset B's 3 small files parsed ${seconds(result.bWaited)} after they were queued; ` +
      `A's files [${aOutcomes}]; all done after ${seconds(result.total)}; peak RSS ${peakMb} MB; ` +
      `load average ${loadavg()[0]?.toFixed(1)} (other work on the machine slows parsing)`,
  );
}

/** The slowest files each budget admits, parsed alone (the figures parser-pool.ts cites). */
async function budgets(): Promise<void> {
  const paragraph = `${LINE}. `.repeat(10);
  const paragraphs = (megabytes: number) => Math.floor((megabytes * MEGABYTE) / paragraph.length);
  const folder = folderOf('budgets', {
    'book-1000.pdf': buildPdf(Array.from({ length: 1_000 }, () => BOOK_PAGE)),
    'book-5000.pdf': buildPdf(Array.from({ length: 5_000 }, () => BOOK_PAGE)),
    'text-19mb.txt': Array.from({ length: paragraphs(19) }, (_, i) => `${i} ${paragraph}`).join('\n\n'),
    'html-19mb.html': `<html><body>${Array.from({ length: paragraphs(19) }, (_, i) => `<p>${i} ${paragraph}</p>`).join('\n')}</body></html>`,
    'docx-15mb.docx': await buildDocx(Array.from({ length: paragraphs(15) }, (_, i) => ({ paragraph: `${i} ${paragraph}` }))),
  });
  for (const file of ['book-1000.pdf', 'book-5000.pdf', 'text-19mb.txt', 'html-19mb.html', 'docx-15mb.docx']) {
    // A pool each: every file starts on a fresh thread, as the first file of a quiet knode does.
    const pool = new ParserPool();
    const began = performance.now();
    const { result, peakMb } = await peakRss(() =>
      pool.prepare(join(folder, file), prepareOptions(folder)).then((prepared) => prepared.chunks.length),
    );
    console.log(`${file}: ${result} chunks in ${seconds(performance.now() - began)}; peak RSS ${peakMb} MB`);
    await pool.close();
  }
}

const FILES: Record<string, () => Uint8Array> = {
  hostile: () => buildPdf(Array.from({ length: 100_000 }, (_, i) => [`page ${i + 1}`])),
  lanes: () => buildPdf(Array.from({ length: 5_000 }, () => BOOK_PAGE)),
};

try {
  const one = args.find((arg) => arg.startsWith('--one='))?.slice('--one='.length);
  if (args.includes('--budgets')) await budgets();
  else if (one) {
    const [name = '', run = ''] = one.split(':');
    const make = FILES[name];
    if (!make) throw new Error(`unknown scenario ${name}`);
    const bytes = make();
    console.log(`${name}: dataset A's file is ${(bytes.length / MEGABYTE).toFixed(1)} MB`);
    await scenario(name, bytes, run);
  } else {
    for (const name of option('scenarios', 'hostile,lanes')) {
      for (const run of option('runs', 'before,after')) {
        const child = Bun.spawn([process.execPath, import.meta.path, `--one=${name}:${run}`], { stdout: 'inherit', stderr: 'inherit' });
        if ((await child.exited) !== 0) throw new Error(`${name} / ${run} failed`);
      }
    }
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
