/**
 * A hostile file through the parse thread, as ingestion parses it: the security tests that feed one file at a
 * time (a zip bomb, a sparse grid, a million rows, a million levels of nesting) write it into a temporary
 * folder of their own and hand it to a real ParserPool (its default time and heap budgets) with the size
 * limits they test. `hostileFilesThroughTheParseThread` registers the folder's and the pool's set-up and
 * teardown on the calling `describe`.
 */
import { afterAll, beforeAll } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PreparedFile } from '../../src/ingestion/parse-worker.ts';
import { ParserPool } from '../../src/ingestion/parser-pool.ts';

/** The limits a test sets: SVC_MAX_FILE_MB and SVC_MAX_TEXT_MB in bytes, and the chunks' overlap. */
export interface HostileFileLimits {
  chunkOverlap: number;
  maxFileBytes: number;
  maxTextBytes: number;
}

export interface HostileFiles {
  /** The folder to write the files into (the only ingestion root), set once the describe's hooks ran. */
  readonly folder: string;
  /** Parses `name` (in `folder`) on the parse thread into chunks of 1,000 characters. */
  prepare(name: string): Promise<PreparedFile>;
}

export function hostileFilesThroughTheParseThread(folderPrefix: string, limits: HostileFileLimits): HostileFiles {
  let folder = '';
  let pool: ParserPool | undefined;
  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), folderPrefix));
    pool = new ParserPool();
  });
  afterAll(async () => {
    await pool?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });
  return {
    get folder() {
      return folder;
    },
    prepare(name: string) {
      if (!pool) throw new Error('the parse thread is started by the describe block that asked for it');
      return pool.prepare(join(folder, name), { chunkSize: 1000, knownHash: null, folder, roots: [folder], ...limits });
    },
  };
}
