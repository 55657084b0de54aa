/**
 * Preloaded by `npm test` for the browser files (scripts/test.ts), which it runs one after the other in one
 * process: they share one Chromium (page.ts, `shareChromium`), closed here after the last file. Bun runs a
 * preloaded file's afterAll once, after every file.
 */
import { afterAll } from 'bun:test';
import { shareChromium } from './page.ts';

afterAll(shareChromium());
