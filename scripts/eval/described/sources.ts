/**
 * Documents of this machine that come with a short description written apart from them, for another
 * purpose: the description becomes the question, the text the document. Nobody wrote the question
 * looking at the document's words, which is what keeps this set honest (the first set's questions are
 * made from the documents' own words, so keyword search finds them too easily):
 *
 * - `man`: a man page's NAME line ("ls - list directory contents") against the rest of the page;
 * - `info`: a GNU info menu's description of a node (written in the parent node's menu) against the node;
 * - `debian`: a Debian package's one-line summary (/var/lib/dpkg/status) against its README in /usr/share/doc.
 *
 * node_modules (a package.json `description` against its README) would be a fourth source, but it changes
 * with every dependency update (it did twice in one hour here), and the set must stay the same to compare runs.
 * A pair is dropped when the description is copied word for word into the text (many READMEs open with it):
 * that would be the first set's easy case again.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  capWords,
  documentWords,
  infoSections,
  looksLikeCode,
  markdownSections,
  paragraphsOf,
  readMaybeGzipped,
  type Section,
  SKIPPED_NODES,
  SOURCE_PATHS,
  slug,
} from '../sources.ts';
import { contentWords, normalise } from '../text.ts';

export type DescribedKind = 'man' | 'info' | 'debian';

export interface DescribedDocument {
  id: string;
  kind: DescribedKind;
  origin: string;
  title: string;
  sections: Section[];
  /** The short description written apart from the text: the question. */
  description: string;
}

/** Shorter documents say too little to be found by anything but their title; longer ones are cut (sources.ts). */
const MIN_WORDS = 150;
/** A description of fewer content words ("Perl module") identifies nothing. */
const MIN_DESCRIPTION_WORDS = 3;

const MAN_SECTIONS = ['man1', 'man5', 'man8'];

/** Every candidate of every kind, sorted by id; descriptions that several documents share are dropped (they name no one document). */
export function readDescribedSources(): DescribedDocument[] {
  return uniquelyDescribed(readDescribedCandidates());
}

/**
 * Every document of this machine with a description that can be a question, before the shared ones are
 * dropped: a committed set is read back from these (build.ts), so a package installed later whose description
 * repeats a committed document's does not take that document away (only the committed documents are indexed).
 */
export function readDescribedCandidates(): DescribedDocument[] {
  return [...manPages(), ...infoNodes(), ...debianReadmes()].filter(
    (document) => contentWords(document.description).length >= MIN_DESCRIPTION_WORDS && !copied(document),
  );
}

/** The candidates a draw may choose, sorted by id: one per id, none whose description another shares. */
export function uniquelyDescribed(all: readonly DescribedDocument[]): DescribedDocument[] {
  const byDescription = new Map<string, number>();
  for (const document of all) byDescription.set(key(document.description), (byDescription.get(key(document.description)) ?? 0) + 1);
  const seen = new Set<string>();
  return all
    .filter((document) => byDescription.get(key(document.description)) === 1)
    .filter((document) => !seen.has(document.id) && seen.add(document.id))
    .sort((a, b) => a.id.localeCompare(b.id));
}

function key(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim();
}

/** The description appears in the text as it is (punctuation and case aside). */
function copied(document: DescribedDocument): boolean {
  const text = key([document.title, ...document.sections.flatMap((section) => [section.heading ?? '', ...section.paragraphs])].join(' '));
  return text.includes(key(document.description));
}

function finish(document: Omit<DescribedDocument, 'sections'> & { sections: Section[] }): DescribedDocument | undefined {
  const sections = capWords(document.sections.filter((section) => section.paragraphs.length > 0));
  if (documentWords(sections) < MIN_WORDS || looksLikeCode(sections)) return undefined;
  const description = normalise(document.description)
    .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
    .replace(/\s+/g, ' ')
    .replace(/\.$/, '')
    .trim();
  return { ...document, description, sections };
}

// ------------------------------------------------------------------------------------------ man pages

function manPages(): DescribedDocument[] {
  const root = '/usr/share/man';
  const documents: DescribedDocument[] = [];
  for (const section of MAN_SECTIONS) {
    const dir = join(root, section);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      let roff: string;
      try {
        if (!statSync(path).isFile() || statSync(path).size > 150_000) continue;
        roff = readMaybeGzipped(path);
      } catch {
        continue;
      }
      const page = parseMan(roff);
      if (!page) continue;
      const command = name.replace(/\.gz$/, '').replace(/\.[0-9][a-z]*$/, '');
      const document = finish({
        id: `man-${slug(`${command}-${section.slice(3)}`)}`,
        kind: 'man',
        origin: `/usr/share/man/${section}/${name}`,
        title: `${command}(${section.slice(3)})`,
        sections: page.sections,
        description: page.description,
      });
      if (document) documents.push(document);
    }
  }
  return documents;
}

interface ManPage {
  description: string;
  sections: Section[];
}

/** A man page's roff source as text: its NAME line's description, and its other sections. Undefined for a `.so` link. */
export function parseMan(roff: string): ManPage | undefined {
  const sections: { heading: string; lines: string[] }[] = [];
  let current: { heading: string; lines: string[] } | undefined;
  let skippingDefinition = false;
  for (const raw of roff.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (skippingDefinition) {
      if (/^\.\.\s*$/.test(line)) skippingDefinition = false;
      continue;
    }
    if (/^\.so\s/.test(line)) return undefined;
    if (/^[.'](de|ig|am)\b/.test(line)) {
      skippingDefinition = true;
      continue;
    }
    const macro = /^[.'](\S+)\s*(.*)$/.exec(line);
    if (macro) {
      const [, name = '', rest = ''] = macro;
      if (name === 'SH' || name === 'SS') {
        current = { heading: unquote(plain(rest)), lines: [] };
        sections.push(current);
      } else if (/^(PP|LP|P|TP|IP|HP|sp|br|RS|RE|nf|fi|in|ti|EX|EE|TQ|Sh|Pp)$/.test(name)) {
        current?.lines.push('');
        if (name === 'IP' && rest) current?.lines.push(unquote(plain(rest.replace(/\s+\S+$/, ''))));
      } else if (/^(B|I|BR|IR|BI|RB|RI|IB|SM|SB|UR|MT|Nm|Nd|Ar|Fl)$/.test(name)) {
        current?.lines.push(macroWords(rest));
      }
      continue;
    }
    if (/^\\"/.test(line)) continue;
    current?.lines.push(plain(line));
  }
  const nameSection = sections.find((section) => /^name$/i.test(section.heading));
  if (!nameSection) return undefined;
  const nameLine = nameSection.lines.join(' ').replace(/\s+/g, ' ').trim();
  const dash = /\s[-\u2013\u2014]+\s/.exec(nameLine);
  if (!dash) return undefined;
  const description = nameLine.slice(dash.index + dash[0].length).trim();
  const body = sections
    .filter(
      (section) =>
        section !== nameSection && !/^(see also|author|authors|copyright|reporting bugs|bugs|colophon|history)$/i.test(section.heading),
    )
    .map((section) => ({ heading: titleCase(section.heading), paragraphs: paragraphsOf(normalise(section.lines.join('\n'))) }));
  return { description, sections: body };
}

function titleCase(heading: string): string {
  return heading === heading.toUpperCase() ? heading.charAt(0) + heading.slice(1).toLowerCase() : heading;
}

function unquote(text: string): string {
  return text.replace(/^"(.*)"$/, '$1').trim();
}

/** `.BR ls (1)` reads "ls(1)": alternating-font macros join their arguments. */
function macroWords(rest: string): string {
  const args = rest.match(/"[^"]*"|\S+/g) ?? [];
  return plain(args.map((arg) => arg.replace(/^"|"$/g, '')).join(' '));
}

const GLYPHS: Record<string, string> = {
  em: '-',
  en: '-',
  hy: '-',
  aq: "'",
  lq: '"',
  rq: '"',
  oq: "'",
  cq: "'",
  bu: '*',
  co: '(c)',
  dq: '"',
};

/** Roff escapes out of a line of text: fonts, glyphs, strings, spacing. */
function plain(text: string): string {
  return text
    .replace(/\\f(\[[^\]]*\]|\(..|.)/g, '')
    .replace(/\\\((..)/g, (_, glyph: string) => GLYPHS[glyph] ?? '')
    .replace(/\\\[([^\]]*)\]/g, (_, glyph: string) => GLYPHS[glyph] ?? '')
    .replace(/\\\*(\[[^\]]*\]|\(..|.)/g, '')
    .replace(/\\s[+-]?\d+/g, '')
    .replace(/\\[-]/g, '-')
    .replace(/\\e/g, '\\')
    .replace(/\\[ ~0]/g, ' ')
    .replace(/\\[&%c|^)]/g, '')
    .replace(/\\"(.*)$/, '')
    .replace(/\\(.)/g, '$1');
}

// ---------------------------------------------------------------------------------------- info nodes

/** Each node a menu describes, with that description (written in the parent node, to choose among its children). */
function infoNodes(): DescribedDocument[] {
  if (!existsSync(SOURCE_PATHS.info)) return [];
  const files = readdirSync(SOURCE_PATHS.info)
    .filter((name) => name.endsWith('.gz'))
    .sort();
  const texts = new Map<string, string[]>();
  for (const file of files) {
    const manual = file.replace(/\.info(-\d+)?\.gz$/, '');
    texts.set(manual, [...(texts.get(manual) ?? []), readMaybeGzipped(join(SOURCE_PATHS.info, file))]);
  }
  const documents: DescribedDocument[] = [];
  for (const [manual, parts] of texts) {
    const nodes = new Map<string, string>();
    const descriptions = new Map<string, string>();
    for (const part of parts.join('\x1f').split('\x1f')) {
      const header = /^\n?File: [^,]+,\s+Node: ([^,\n]+)[^\n]*\n/.exec(part);
      if (!header?.[1]) continue;
      const body = part.slice(header[0].length);
      nodes.set(header[1].trim(), body);
      for (const [node, description] of menuEntries(body)) if (!descriptions.has(node)) descriptions.set(node, description);
    }
    for (const [node, description] of descriptions) {
      const body = nodes.get(node);
      if (!body || SKIPPED_NODES.test(node)) continue;
      const document = finish({
        id: `info-${manual}-${slug(node)}`,
        kind: 'info',
        origin: `info ${manual}: ${node}`,
        title: node,
        sections: infoSections(body),
        description,
      });
      if (document) documents.push(document);
    }
  }
  return documents;
}

/** `* Node::  Description` or `* Entry: Node.  Description`, descriptions continued on indented lines. */
function menuEntries(body: string): [string, string][] {
  const menu = /\n\* Menu:([\s\S]*)$/.exec(body)?.[1];
  if (!menu) return [];
  const entries: [string, string][] = [];
  let current: { node: string; words: string[] } | undefined;
  const flush = () => {
    if (current && current.words.length > 0) entries.push([current.node, current.words.join(' ').replace(/\s+/g, ' ').trim()]);
    current = undefined;
  };
  for (const line of menu.split('\n')) {
    const short = /^\* ([^:]+)::\s*(.*)$/.exec(line);
    const long = short ? null : /^\* [^:]+:\s*([^.,\t]+)[.,]\s*(.*)$/.exec(line);
    if (short?.[1] !== undefined || long?.[1] !== undefined) {
      flush();
      const node = (short?.[1] ?? long?.[1] ?? '').trim();
      const text = (short?.[2] ?? long?.[2] ?? '').trim();
      current = { node, words: text ? [text] : [] };
    } else if (current && /^\s{3,}\S/.test(line)) {
      current.words.push(line.trim());
    } else {
      flush();
    }
  }
  flush();
  return entries;
}

// ----------------------------------------------------------------------------- Debian package READMEs

const README_FILE = /^readme(\.(md|txt|markdown|rst))?(\.gz)?$/i;

function debianReadmes(): DescribedDocument[] {
  if (!existsSync(SOURCE_PATHS.dpkgStatus)) return [];
  const documents: DescribedDocument[] = [];
  for (const stanza of readFileSync(SOURCE_PATHS.dpkgStatus, 'utf8').split(/\n\n+/)) {
    const name = /^Package: (.*)$/m.exec(stanza)?.[1]?.trim();
    const summary = /^Description: (.*)$/m.exec(stanza)?.[1]?.trim();
    if (!name || !summary) continue;
    const dir = join(SOURCE_PATHS.doc, name);
    if (!existsSync(dir)) continue;
    const readme = readdirSync(dir)
      .sort()
      .find((file) => README_FILE.test(file));
    if (!readme) continue;
    const path = join(dir, readme);
    let text: string;
    try {
      if (statSync(path).size > 200_000) continue;
      text = readMaybeGzipped(path);
    } catch {
      continue;
    }
    const { title, sections } = markdownSections(text);
    const document = finish({
      id: `debian-${slug(name)}`,
      kind: 'debian',
      origin: `/usr/share/doc/${name}/${readme} (summary: /var/lib/dpkg/status)`,
      title: title || `${name} README`,
      sections,
      description: summary,
    });
    if (document) documents.push(document);
  }
  return documents;
}
