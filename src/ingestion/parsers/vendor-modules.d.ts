/**
 * Declarations for the untyped modules the parsers import, limited to the parts knode uses.
 * html-to-text 10 ships no types (and @types/html-to-text is not installed); these follow its README.
 */
declare module 'html-to-text' {
  export interface SelectorDefinition {
    selector: string;
    format?: string;
    options?: Record<string, unknown>;
  }

  export interface HtmlToTextOptions {
    baseElements?: { selectors?: string[]; orderBy?: 'selectors' | 'occurrence'; returnDomByDefault?: boolean };
    decodeEntities?: boolean;
    limits?: { ellipsis?: string; maxBaseElements?: number; maxChildNodes?: number; maxDepth?: number; maxInputLength?: number };
    preserveNewlines?: boolean;
    selectors?: SelectorDefinition[];
    whitespaceCharacters?: string;
    wordwrap?: number | false | null;
  }

  export function compile(options?: HtmlToTextOptions): (html: string, metadata?: unknown) => string;
  export function convert(html: string, options?: HtmlToTextOptions, metadata?: unknown): string;
}

/** pdf.js's worker code; importing it registers `globalThis.pdfjsWorker` so pdf.js parses in-thread. */
declare module 'pdfjs-dist/legacy/build/pdf.worker.mjs' {
  export const WorkerMessageHandler: unknown;
}
