import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ParserPool, ParserPoolClosedError } from '../src/ingestion/parser-pool.ts';
import { fileTypeOf, type ParsedDocument, ParseError, parseFile, SUPPORTED_EXTENSIONS } from '../src/ingestion/parsers/index.ts';
import { decodeText, markdownTitle } from '../src/ingestion/parsers/text.ts';
import { CONTENT, type DocumentFixtures, makeDocuments } from './fixtures/make-documents.ts';

let dir: string;
let files: DocumentFixtures;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'knode-parsers-'));
  files = await makeDocuments(join(dir, 'docs'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function parseError(promise: Promise<unknown>): Promise<ParseError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ParseError)) throw new Error(`expected a ParseError, got ${String(error)}`);
  return error;
}

function allText(doc: ParsedDocument): string {
  return doc.sections.map((section) => section.text).join('\n');
}

describe('parseFile', () => {
  test('PDF: one section per page with its page number, and the title from the PDF info', async () => {
    const doc = await parseFile(files.pdf);
    expect(doc.title).toBe(CONTENT.pdfTitle);
    expect(doc.sections.map((s) => s.page)).toEqual([1, 2, 3]);
    CONTENT.pdfPages.forEach((lines, i) => {
      for (const line of lines) expect(doc.sections[i]?.text).toContain(line);
    });
    expect(doc.sections[0]?.text).not.toContain('bananas');
  });

  test('PDF: a page without text is dropped and the following pages keep their numbers', async () => {
    const doc = await parseFile(files.pdfWithBlankPage);
    expect(doc.sections).toEqual([
      { text: 'First page text.', page: 1 },
      { text: 'Third page text.', page: 3 },
    ]);
    expect(doc.title).toBeUndefined();
  });

  test('PDF: a corrupt file fails with a reason', async () => {
    const error = await parseError(parseFile(files.corruptPdf));
    expect(error.code).toBe('damaged');
    expect(error.message).toStartWith('PDF is damaged: ');
    expect(error.message.length).toBeGreaterThan('PDF is damaged: '.length);
  });

  test('PDF: a file with pages but no text fails as "no text found"', async () => {
    const error = await parseError(parseFile(files.pdfWithoutText));
    expect(error.code).toBe('no_text');
    expect(error.message).toContain('no text found');
  });

  test('DOCX: headings, paragraphs and table cells are kept as text; the title is the first heading', async () => {
    const doc = await parseFile(files.docx);
    expect(doc.title).toBe(CONTENT.docxHeading);
    expect(doc.sections).toHaveLength(1);
    const text = allText(doc);
    for (const part of [CONTENT.docxHeading, CONTENT.docxSubheading, CONTENT.docxParagraph, 'Closing paragraph.']) {
      expect(text).toContain(part);
    }
    for (const cell of CONTENT.docxTable.flat()) expect(text).toContain(cell);
    // A table row stays on one line, so its cells are searched together.
    expect(text).toContain('North | 1200');
    expect(text.indexOf(CONTENT.docxHeading)).toBeLessThan(text.indexOf(CONTENT.docxParagraph));
  });

  test('DOCX: a file that is not a real DOCX fails with a reason', async () => {
    const error = await parseError(parseFile(files.corruptDocx));
    expect(error.code).toBe('damaged');
    expect(error.message).toStartWith('DOCX is damaged: ');
  });

  test('HTML: visible text only (no script or style), headings as written, title from <title>', async () => {
    const doc = await parseFile(files.html);
    expect(doc.title).toBe(CONTENT.htmlTitle);
    const text = allText(doc);
    expect(text).toContain(CONTENT.htmlHeading);
    expect(text).toContain(CONTENT.htmlParagraph);
    expect(text).toContain('Fruit | Colour');
    expect(text).not.toContain(CONTENT.htmlScriptMarker);
    expect(text).not.toContain(CONTENT.htmlStyleMarker);
    expect(text).not.toContain('color: red');
    expect(text).not.toContain(CONTENT.htmlHeading.toUpperCase());
  });

  test('Markdown: indexed as written, title from the first "# " heading outside code fences', async () => {
    const doc = await parseFile(files.md);
    expect(doc.title).toBe(CONTENT.mdTitle);
    expect(allText(doc)).toContain(CONTENT.mdBody);
    expect(allText(doc)).toContain('## Details');
  });

  test('TXT: invalid UTF-8 bytes become U+FFFD, the BOM is dropped, valid text is kept', async () => {
    const doc = await parseFile(files.txtInvalidUtf8);
    expect(doc.title).toBeUndefined();
    expect(doc.sections).toEqual([{ text: 'Caf\uFFFD au lait, \uFFFD\uFFFD still readable. Ünïcödé stays.' }]);
  });

  test('an empty or whitespace-only file fails as "no text found"', async () => {
    for (const path of [files.empty, files.whitespaceOnly]) {
      const error = await parseError(parseFile(path));
      expect(error.code).toBe('no_text');
      expect(error.message).toBe('no text found in file');
    }
  });

  test('an unknown extension fails as unsupported, a missing file as not found', async () => {
    const unsupported = await parseError(parseFile(files.unsupported));
    expect(unsupported.code).toBe('unsupported_type');
    expect(unsupported.message).toContain('.xyz');
    const missing = await parseError(parseFile(join(dir, 'does-not-exist.txt')));
    expect(missing.code).toBe('not_found');
  });

  test('the extension decides the parser, whatever its case', async () => {
    const upper = join(dir, 'UPPER.TXT');
    await writeFile(upper, 'shouting text');
    expect(await parseFile(upper)).toEqual({ sections: [{ text: 'shouting text' }] });
    expect(fileTypeOf('/a/b/Report.PDF')).toBe('pdf');
    expect(fileTypeOf('/a/b/README')).toBe('');
    expect([...SUPPORTED_EXTENSIONS].sort()).toEqual(['csv', 'docx', 'htm', 'html', 'json', 'markdown', 'md', 'pdf', 'txt', 'xlsx']);
  });
});

describe('text decoding', () => {
  test('CRLF and CR become LF; a UTF-16 file with a byte-order mark is decoded', () => {
    expect(decodeText(Buffer.from('a\r\nb\rc\n'))).toBe('a\nb\nc\n');
    expect(decodeText(Buffer.from([0xff, 0xfe, 0x68, 0x00, 0xe9, 0x00]))).toBe('hé');
    expect(decodeText(Buffer.from([0xfe, 0xff, 0x00, 0x68, 0x00, 0xe9]))).toBe('hé');
  });

  test('markdownTitle ignores "#" lines in code fences and deeper headings', () => {
    expect(markdownTitle('## Sub\n\n~~~\n# code\n~~~\n#  Real  Title  ##\n')).toBe('Real  Title');
    expect(markdownTitle('#hashtag is not a heading\n')).toBeUndefined();
  });
});

describe('ParserPool', () => {
  const misbehaving = new URL('./fixtures/misbehaving-parse-worker.ts', import.meta.url);

  test('parses every format on a worker thread, with the same result as parseFile', async () => {
    const pool = new ParserPool();
    try {
      for (const path of [files.pdf, files.docx, files.html, files.md, files.txtInvalidUtf8]) {
        expect(await pool.parse(path)).toEqual(await parseFile(path));
      }
    } finally {
      await pool.close();
    }
  });

  test('the calling thread keeps running while a large file is parsed', async () => {
    const big = join(dir, 'big.html');
    const paragraphs = Array.from({ length: 20_000 }, (_, i) => `<p>Paragraph ${i} about item <b>${i}</b>.</p>`);
    await writeFile(big, `<html><body>${paragraphs.join('\n')}</body></html>`);
    const pool = new ParserPool();
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    try {
      const doc = await pool.parse(big);
      expect(allText(doc)).toContain('Paragraph 19999 about item 19999.');
      // Parsed on the calling thread, the conversion would block every timer until it finished.
      expect(ticks).toBeGreaterThan(5);
    } finally {
      clearInterval(timer);
      await pool.close();
    }
  });

  test('a corrupt file fails with its reason and the pool goes on with the next files', async () => {
    const pool = new ParserPool({ size: 2 });
    try {
      const results = await Promise.allSettled([files.pdf, files.corruptPdf, files.empty, files.docx, files.md].map((p) => pool.parse(p)));
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled', 'fulfilled']);
      const [, corrupt, empty] = results;
      expect(corrupt?.status === 'rejected' && corrupt.reason).toBeInstanceOf(ParseError);
      expect(corrupt?.status === 'rejected' && (corrupt.reason as ParseError).code).toBe('damaged');
      expect(empty?.status === 'rejected' && (empty.reason as ParseError).code).toBe('no_text');
      expect(pool.pending).toBe(0);
    } finally {
      await pool.close();
    }
  });

  test('a thread that throws or exits is replaced; only its file fails', async () => {
    const pool = new ParserPool({ workerUrl: misbehaving });
    try {
      expect(allText(await pool.parse('one'))).toBe('parsed one');
      const thrown = await parseError(pool.parse('throw'));
      expect(thrown.code).toBe('worker_crashed');
      expect(thrown.message).toContain('simulated parser bug');
      expect(allText(await pool.parse('two'))).toBe('parsed two');
      expect((await parseError(pool.parse('exit'))).code).toBe('worker_crashed');
      expect(allText(await pool.parse('three'))).toBe('parsed three');
    } finally {
      await pool.close();
    }
  });

  test('a thread that hangs is stopped at the timeout; the queue behind it still runs', async () => {
    const pool = new ParserPool({ workerUrl: misbehaving, timeoutMs: 1000 });
    try {
      const [hung, after] = await Promise.allSettled([pool.parse('hang'), pool.parse('after')]);
      expect(hung?.status).toBe('rejected');
      const error = hung?.status === 'rejected' ? (hung.reason as ParseError) : undefined;
      expect(error?.code).toBe('timeout');
      expect(error?.message).toContain('longer than');
      expect(after?.status === 'fulfilled' && allText(after.value)).toBe('parsed after');
    } finally {
      await pool.close();
    }
  });

  test('close() rejects waiting files and later calls as closed, not as parse failures', async () => {
    const pool = new ParserPool({ workerUrl: misbehaving, timeoutMs: 60_000 });
    const running = pool.parse('hang');
    const waiting = pool.parse('waiting');
    await pool.close();
    await expect(running).rejects.toBeInstanceOf(ParserPoolClosedError);
    await expect(waiting).rejects.toBeInstanceOf(ParserPoolClosedError);
    await expect(pool.parse(files.md)).rejects.toBeInstanceOf(ParserPoolClosedError);
  });

  test('rejects a nonsensical size or timeout', () => {
    expect(() => new ParserPool({ size: 0 })).toThrow(RangeError);
    expect(() => new ParserPool({ timeoutMs: 0 })).toThrow(RangeError);
  });
});
