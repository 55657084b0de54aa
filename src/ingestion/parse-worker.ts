/**
 * Entry point of a parse thread (see parser-pool.ts): parses one file per request and answers with
 * the document or a plain error. pdf.js, mammoth, html-to-text, read-excel-file and csv-parse are synchronous for long stretches;
 * here they block this thread only, never the one answering HTTP requests.
 *
 * In the compiled binary this file must be an extra entry point of the build
 * (`bun build --compile src/main.ts src/ingestion/parse-worker.ts ...`), as Bun bundles workers only
 * when they are listed.
 */
import { errorMessage } from '../domain/errors.ts';
import { type Chunk, chunkDocument } from './chunker.ts';
import { type ParsedDocument, ParseError, type ParseErrorCode, parseBytes, parseFile } from './parsers/index.ts';
import { checkMemory } from './parsers/limits.ts';
import { readFileLimited } from './read-file.ts';

/** What ingestion asks of a file besides its text: chunks of this size, unless its hash is known already. */
export interface PrepareOptions {
  chunkSize: number;
  chunkOverlap: number;
  /** The hash of the content last indexed: the same content is not parsed again. */
  knownHash: string | null;
  /** Real path of the dataset folder: the file must really be inside it (see read-file.ts). */
  folder: string;
  /** Real paths of the tenant's ingestion roots: the file must really be inside one of them too. */
  roots: readonly string[];
  /** SVC_MAX_FILE_MB and SVC_MAX_TEXT_MB, in bytes. */
  maxFileBytes: number;
  maxTextBytes: number;
}

/** A file ready for embedding, or the news that its content has not changed. */
export interface PreparedFile {
  hash: string;
  unchanged: boolean;
  title?: string;
  chunks: Chunk[];
}

/** The parse budget of one file besides its sizes (parser-pool.ts sets it; the time limit is the pool's own). */
export interface ParseBudget {
  maxPages: number;
  maxHeapBytes: number;
}

export interface ParseRequest {
  id: number;
  path: string;
  prepare?: PrepareOptions;
  budget?: ParseBudget;
  /** A document's bytes handed over (a feed's item): parsed as `path` names its type, nothing read from disk. */
  bytes?: Uint8Array;
}

export type ParseResponse =
  | { id: number; ok: true; doc?: ParsedDocument; prepared?: PreparedFile }
  | { id: number; ok: false; code: ParseErrorCode; message: string };

declare var self: Worker;

self.onmessage = async (event: MessageEvent<ParseRequest>) => {
  const { id, path, prepare, budget, bytes } = event.data;
  postMessage(await answer(id, path, prepare && { ...prepare, ...budget }, bytes));
};

/**
 * Reads the file once, confined to the dataset folder and the tenant's roots and within the size limit;
 * hashes, parses and chunks those same bytes. Hashing and chunking run here too: for a 20 MB file each
 * is work the HTTP thread should not do.
 */
async function prepareFile(path: string, options: PrepareOptions & Partial<ParseBudget>, given?: Uint8Array): Promise<PreparedFile> {
  const bytes = given ?? (await readFileLimited(path, options, { folder: options.folder, roots: options.roots }));
  const hash = new Bun.CryptoHasher('sha256').update(bytes).digest('hex');
  if (hash === options.knownHash) return { hash, unchanged: true, chunks: [] };
  // `options` carries the chunk size too: XLSX, CSV and JSON lay their rows out in chunk-sized groups by it.
  const doc = await parseBytes(path, bytes, options);
  // DOCX and HTML are parsed in one go: their memory is looked at once they are done, and once chunked.
  checkMemory(options);
  const chunks = chunkDocument(doc, options);
  checkMemory(options);
  return { hash, unchanged: false, title: doc.title, chunks };
}

async function answer(
  id: number,
  path: string,
  prepare?: PrepareOptions & Partial<ParseBudget>,
  bytes?: Uint8Array,
): Promise<ParseResponse> {
  try {
    if (prepare) return { id, ok: true, prepared: await prepareFile(path, prepare, bytes) };
    return { id, ok: true, doc: await parseFile(path) };
  } catch (error) {
    if (error instanceof ParseError) return { id, ok: false, code: error.code, message: error.message };
    // parseFile turns library failures into ParseErrors; anything else is a bug, still reported per file.
    const message = errorMessage(error);
    return { id, ok: false, code: 'damaged', message: `file could not be parsed: ${message}` };
  }
}
