/**
 * The console's first render in headless Chromium (Debian's, or KNODE_CHROMIUM), against a real knode
 * (`bun src/main.ts`, or KNODE_BINARY) on a fresh data folder: the first-run page (no user yet) loaded
 * N times, each in a fresh browser context (nothing cached), and the JavaScript it downloaded.
 *
 * Reported: the `knode:first-render` mark (the page's content is on screen, web/lib/hooks.ts) and the
 * first contentful paint, from navigation start: median, 90th percentile and worst; the initial load's
 * JavaScript, compressed as sent. The console issue's goals: first render under 300 ms, under 250 kB.
 *
 * Usage: bun scripts/bench/console.ts [loads, default 20]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { startKnodeProcess } from '../../test/helpers/knode-process.ts';

const loads = Number(process.argv[2] ?? 20);
const scratch = mkdtempSync(join(tmpdir(), 'knode-bench-console-'));
const knode = await startKnodeProcess({ SVC_DATA_DIR: join(scratch, 'data'), HOME: scratch });
const browser = await puppeteer.launch({
  executablePath: process.env.KNODE_CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check'],
});

function summary(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] as number;
  return `median ${at(0.5).toFixed(0)} ms, p90 ${at(0.9).toFixed(0)} ms, worst ${at(1).toFixed(0)} ms`;
}

try {
  const firstRender: number[] = [];
  const firstPaint: number[] = [];
  let javascript = 0;
  for (let load = 0; load < loads; load++) {
    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    await page.goto(`${knode.url}/`, { waitUntil: 'networkidle0' });
    await page.waitForFunction(() => performance.getEntriesByName('knode:first-render').length > 0);
    const times = await page.evaluate(() => ({
      render: performance.getEntriesByName('knode:first-render')[0]?.startTime ?? Number.NaN,
      paint: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Number.NaN,
      javascript: (performance.getEntriesByType('resource') as PerformanceResourceTiming[])
        .filter((entry) => entry.name.endsWith('.js'))
        .reduce((sum, entry) => sum + entry.encodedBodySize, 0),
    }));
    firstRender.push(times.render);
    firstPaint.push(times.paint);
    javascript = times.javascript;
    await context.close();
  }
  console.log(`console, first-run page, ${loads} loads in fresh contexts (${process.env.KNODE_BINARY ?? 'from source'}):`);
  console.log(`  first render:           ${summary(firstRender)} (goal: under 300 ms)`);
  console.log(`  first contentful paint: ${summary(firstPaint)}`);
  console.log(`  initial JavaScript:     ${(javascript / 1000).toFixed(1)} kB as sent (goal: under 250 kB)`);
} finally {
  await browser.close();
  await knode.stop();
  rmSync(scratch, { recursive: true, force: true });
}
