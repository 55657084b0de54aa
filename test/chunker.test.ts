import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Chunk, chunkDocument, chunkText } from '../src/ingestion/chunker.ts';
import { parseFile } from '../src/ingestion/parsers/index.ts';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'knode-chunker-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sentence = (i: number) => `Sentence ${i} tells a short story about item ${i}.`;
const paragraph = (from: number, count: number) => Array.from({ length: count }, (_, i) => sentence(from + i)).join(' ');

/**
 * Finds every chunk, in order, in the source: each must be a verbatim slice that starts no later than
 * where the previous one ended (only whitespace may be skipped between them), and together they must
 * cover the source from its first to its last non-space character. Returns each chunk's start offset.
 */
function locate(source: string, chunks: readonly string[]): number[] {
  const starts: number[] = [];
  let previousStart = -1;
  let previousEnd = source.length - source.trimStart().length;
  for (const chunk of chunks) {
    const start = source.indexOf(chunk, previousStart + 1);
    if (start < 0) throw new Error(`chunk not found in order: ${JSON.stringify(chunk.slice(0, 60))}`);
    if (start > previousEnd && source.slice(previousEnd, start).trim() !== '') {
      throw new Error(`text lost before chunk: ${JSON.stringify(source.slice(previousEnd, start).slice(0, 60))}`);
    }
    starts.push(start);
    previousStart = start;
    previousEnd = Math.max(previousEnd, start + chunk.length);
  }
  expect(previousEnd).toBe(source.trimEnd().length);
  return starts;
}

function expectWellFormed(chunks: readonly Chunk[], chunkSize: number): void {
  chunks.forEach((chunk, i) => {
    expect(chunk.chunk_index).toBe(i);
    expect(chunk.text.length).toBeLessThanOrEqual(chunkSize);
    expect(chunk.text.trim()).toBe(chunk.text);
    expect(chunk.text.length).toBeGreaterThan(0);
  });
}

describe('chunkDocument', () => {
  test('a short text is one trimmed chunk with index 0', () => {
    expect(chunkDocument({ sections: [{ text: '  \n Hello world. \n' }] }, { chunkSize: 100, chunkOverlap: 10 })).toEqual([
      { text: 'Hello world.', chunk_index: 0 },
    ]);
  });

  test('an empty or whitespace-only section yields no chunk', () => {
    expect(chunkDocument({ sections: [{ text: '' }, { text: ' \n\t ' }] }, { chunkSize: 10, chunkOverlap: 2 })).toEqual([]);
  });

  test('chunks are at most chunkSize, never blank, verbatim, in order, and lose no text', () => {
    const text = [paragraph(0, 7), paragraph(7, 15), paragraph(22, 2), paragraph(24, 40)].join('\n\n');
    for (const [chunkSize, chunkOverlap] of [
      [200, 0],
      [200, 40],
      [1000, 100],
      [57, 13],
    ] as const) {
      const chunks = chunkDocument({ sections: [{ text }] }, { chunkSize, chunkOverlap });
      expectWellFormed(chunks, chunkSize);
      locate(
        text,
        chunks.map((c) => c.text),
      );
    }
  });

  test('breaks at a paragraph when one falls in the second half of the window', () => {
    const first = paragraph(0, 5); // about 250 characters
    const second = paragraph(5, 5);
    const chunks = chunkText(`${first}\n\n${second}`, { chunkSize: 400, chunkOverlap: 0 });
    expect(chunks).toEqual([first, second]);
  });

  test('breaks at a sentence end when no paragraph break is close enough', () => {
    const text = paragraph(0, 40);
    const chunks = chunkText(text, { chunkSize: 300, chunkOverlap: 0 });
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk).toMatch(/^Sentence \d+/);
      expect(chunk).toMatch(/\d\.$/);
    }
    expect(chunks.join(' ')).toBe(text);
  });

  test('prefers a sentence end to a line break, and a line break to a space', () => {
    const lines = 'one two three four five six seven\neight nine ten eleven twelve\nthirteen fourteen';
    // The window [0, 60] holds one line break (at 33) and later spaces: the line break wins.
    expect(chunkText(lines, { chunkSize: 60, chunkOverlap: 0 })[0]).toBe('one two three four five six seven');
    const mixed = 'First sentence ends here. Then a line\ncontinues the second one with more words';
    expect(chunkText(mixed, { chunkSize: 50, chunkOverlap: 0 })[0]).toBe('First sentence ends here.');
  });

  test('breaks between words, never inside one, when there is no punctuation', () => {
    const words = Array.from({ length: 500 }, (_, i) => `word${i}`);
    const chunks = chunkText(words.join(' '), { chunkSize: 64, chunkOverlap: 0 });
    expect(chunks.flatMap((c) => c.split(' '))).toEqual(words);
  });

  test('a word longer than chunkSize is cut into chunkSize pieces', () => {
    const long = 'x'.repeat(250);
    const chunks = chunkText(`short ${long} tail`, { chunkSize: 100, chunkOverlap: 10 });
    expect(chunks).toEqual(['short', 'x'.repeat(100), 'x'.repeat(100), `${'x'.repeat(50)} tail`]);
  });

  test('never splits a surrogate pair when cutting a long run', () => {
    const emoji = '😀'.repeat(100);
    const chunks = chunkText(emoji, { chunkSize: 7, chunkOverlap: 0 });
    for (const chunk of chunks) expect(chunk.length % 2).toBe(0);
    expect(chunks.join('')).toBe(emoji);
  });

  test('breaks after CJK full stops, which have no space after them', () => {
    const text = '这是第一句话。这是第二句话。这是第三句话。这是第四句话。';
    const chunks = chunkText(text, { chunkSize: 16, chunkOverlap: 0 });
    for (const chunk of chunks) expect(chunk.endsWith('。')).toBe(true);
    expect(chunks.join('')).toBe(text);
  });

  test('consecutive chunks overlap by about chunkOverlap characters, starting on a word', () => {
    const words = Array.from({ length: 2000 }, (_, i) => `w${i % 1000}`);
    const text = words.join(' ');
    const chunkOverlap = 50;
    const chunks = chunkText(text, { chunkSize: 300, chunkOverlap });
    const starts = locate(text, chunks);
    for (let i = 1; i < chunks.length; i++) {
      const previousEnd = (starts[i - 1] ?? 0) + (chunks[i - 1]?.length ?? 0);
      const overlap = previousEnd - (starts[i] ?? 0);
      // Moved forward to the next word start: at most one word (5 characters here) shorter.
      expect(overlap).toBeLessThanOrEqual(chunkOverlap);
      expect(overlap).toBeGreaterThanOrEqual(chunkOverlap - 6);
      expect(text[(starts[i] ?? 0) - 1]).toBe(' ');
    }
  });

  test('with no overlap, the chunks are the text split at whitespace', () => {
    const text = [paragraph(0, 10), paragraph(10, 10)].join('\n\n');
    const chunks = chunkText(text, { chunkSize: 180, chunkOverlap: 0 });
    expect(chunks.join(' ').split(/\s+/)).toEqual(text.split(/\s+/));
  });

  test('chunks never cross pages; they keep their page, and indices run across the document', () => {
    const pages = [paragraph(0, 12), 'A short page.', paragraph(100, 9)];
    const chunks = chunkDocument(
      { title: 'T', sections: pages.map((text, i) => ({ text, page: i + 1 })) },
      { chunkSize: 200, chunkOverlap: 30 },
    );
    expectWellFormed(chunks, 200);
    for (const [i, text] of pages.entries()) {
      const own = chunks.filter((c) => c.page === i + 1);
      expect(own.length).toBeGreaterThan(0);
      for (const chunk of own) expect(text).toContain(chunk.text);
      locate(
        text,
        own.map((c) => c.text),
      );
    }
    expect(chunks.find((c) => c.page === 2)?.text).toBe('A short page.');
    expect(chunks.map((c) => c.page)).toEqual([...chunks.map((c) => c.page)].sort());
  });

  test('rejects sizes that cannot make progress', () => {
    const doc = { sections: [{ text: 'some text' }] };
    expect(() => chunkDocument(doc, { chunkSize: 0, chunkOverlap: 0 })).toThrow(RangeError);
    expect(() => chunkDocument(doc, { chunkSize: 100, chunkOverlap: 100 })).toThrow(RangeError);
    expect(() => chunkDocument(doc, { chunkSize: 100, chunkOverlap: -1 })).toThrow(RangeError);
    expect(() => chunkDocument(doc, { chunkSize: 10.5, chunkOverlap: 1 })).toThrow(RangeError);
  });

  test('a 20 MB text file is parsed and chunked whole', async () => {
    const path = join(dir, 'big.txt');
    const paragraphs: string[] = [];
    let size = 0;
    for (let i = 0; size < 20 * 1024 * 1024; i++) {
      const p = paragraph(i * 10, 10);
      paragraphs.push(p);
      size += p.length + 2;
    }
    await writeFile(path, paragraphs.join('\n\n'));
    const doc = await parseFile(path);
    const text = doc.sections[0]?.text ?? '';
    expect(text.length).toBeGreaterThanOrEqual(20 * 1024 * 1024);

    const chunks = chunkDocument(doc, { chunkSize: 1000, chunkOverlap: 100 });
    expectWellFormed(chunks, 1000);
    // Every step moves at least half a chunk and at most a whole one.
    expect(chunks.length).toBeGreaterThan(text.length / 1000);
    expect(chunks.length).toBeLessThan((text.length / 500) * 1.05);
    locate(
      text,
      chunks.map((c) => c.text),
    );
    expect(chunks[0]?.text.startsWith(sentence(0))).toBe(true);
    expect(chunks.at(-1)?.text.endsWith(paragraphs.at(-1) ?? '?')).toBe(true);
  });
});
