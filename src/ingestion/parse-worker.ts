/**
 * Entry point of a parse thread (see parser-pool.ts): parses one file per request and answers with
 * the document or a plain error. pdf.js, mammoth and html-to-text are synchronous for long stretches;
 * here they block this thread only, never the one answering HTTP requests.
 *
 * In the compiled binary this file must be an extra entry point of the build
 * (`bun build --compile src/main.ts src/ingestion/parse-worker.ts ...`), as Bun bundles workers only
 * when they are listed.
 */
import { ParseError, parseFile, type ParsedDocument, type ParseErrorCode } from './parsers/index.ts';

export interface ParseRequest {
  id: number;
  path: string;
}

export type ParseResponse =
  | { id: number; ok: true; doc: ParsedDocument }
  | { id: number; ok: false; code: ParseErrorCode; message: string };

declare var self: Worker;

self.onmessage = async (event: MessageEvent<ParseRequest>) => {
  const { id, path } = event.data;
  postMessage(await answer(id, path));
};

async function answer(id: number, path: string): Promise<ParseResponse> {
  try {
    return { id, ok: true, doc: await parseFile(path) };
  } catch (error) {
    if (error instanceof ParseError) return { id, ok: false, code: error.code, message: error.message };
    // parseFile turns library failures into ParseErrors; anything else is a bug, still reported per file.
    const message = error instanceof Error ? error.message : String(error);
    return { id, ok: false, code: 'damaged', message: `file could not be parsed: ${message}` };
  }
}
