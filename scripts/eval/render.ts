/**
 * Writes a document in one of the five formats knode indexes, with the project's own PDF and DOCX
 * writers (test/fixtures/make-documents.ts), so the evaluation goes through every parser.
 */
import { buildDocx, buildPdf, type DocxBlock } from '../../test/fixtures/make-documents.ts';
import type { Section, SourceDocument } from './sources.ts';

export const FORMATS = ['pdf', 'txt', 'md', 'docx', 'html'] as const;
export type Format = (typeof FORMATS)[number];

/** Sections with the title's own heading dropped (info nodes repeat it as their first heading). */
function bodySections(document: SourceDocument): Section[] {
  return document.sections.map((section, index) =>
    index === 0 && section.heading === document.title ? { paragraphs: section.paragraphs } : section,
  );
}

export async function renderDocument(document: SourceDocument, format: Format): Promise<Uint8Array | string> {
  const sections = bodySections(document);
  switch (format) {
    case 'txt':
      return [
        document.title,
        '='.repeat(Math.min(79, document.title.length)),
        '',
        ...sections.flatMap((section) => [
          ...(section.heading ? [section.heading, '-'.repeat(Math.min(79, section.heading.length)), ''] : []),
          ...section.paragraphs.flatMap((paragraph) => [...wrap(paragraph, 78), '']),
        ]),
      ].join('\n');
    case 'md':
      return [
        `# ${document.title}`,
        '',
        ...sections.flatMap((section) => [
          ...(section.heading ? [`## ${section.heading}`, ''] : []),
          ...section.paragraphs.flatMap((p) => [p, '']),
        ]),
      ].join('\n');
    case 'html':
      return [
        '<!doctype html>',
        `<html><head><meta charset="utf-8"><title>${escapeHtml(document.title)}</title></head><body>`,
        `<h1>${escapeHtml(document.title)}</h1>`,
        ...sections.flatMap((section) => [
          ...(section.heading ? [`<h2>${escapeHtml(section.heading)}</h2>`] : []),
          ...section.paragraphs.map((paragraph) => `<p>${escapeHtml(paragraph)}</p>`),
        ]),
        '</body></html>',
        '',
      ].join('\n');
    case 'docx':
      return buildDocx([
        { heading: document.title, level: 1 },
        ...sections.flatMap((section): DocxBlock[] => [
          ...(section.heading ? [{ heading: section.heading, level: 2 as const }] : []),
          ...section.paragraphs.map((paragraph) => ({ paragraph })),
        ]),
      ]);
    case 'pdf':
      return buildPdf(pdfPages(document.title, sections), { title: document.title });
  }
}

/** Lines of about 90 characters (what fits a Letter page in 12 pt Helvetica), 48 lines a page. */
function pdfPages(title: string, sections: readonly Section[]): string[][] {
  const lines = [
    ...wrap(title, 90),
    '',
    ...sections.flatMap((section) => [
      ...(section.heading ? [...wrap(section.heading, 90), ''] : []),
      ...section.paragraphs.flatMap((paragraph) => [...wrap(paragraph, 90), '']),
    ]),
  ];
  const pages: string[][] = [];
  for (let i = 0; i < lines.length; i += 48) pages.push(lines.slice(i, i + 48));
  return pages;
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

function escapeHtml(text: string): string {
  return text.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c] ?? c);
}
