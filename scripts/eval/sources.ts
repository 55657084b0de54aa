/**
 * Reads the freely licensed technical text of this machine into topic-sized documents: GNU info manuals
 * (one node, or a few short neighbouring nodes), the Node.js API reference (one `##` section), READMEs
 * and other notes under /usr/share/doc, package descriptions of /var/lib/dpkg/status (a dozen packages of
 * one section per document) and the licences of /usr/share/common-licenses. Man pages are never read.
 */
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { normalise, wordCount } from './text.ts';

export type SourceKind = 'manual' | 'nodejs' | 'readme' | 'packages' | 'licence';

export interface Section {
  heading?: string;
  paragraphs: string[];
}

export interface SourceDocument {
  /** Stable, unique, file-name safe: becomes the file name in the corpus. */
  id: string;
  kind: SourceKind;
  /** Where the text came from, for people reading the labelled set. */
  origin: string;
  title: string;
  sections: Section[];
}

/** Documents are cut to this many words: long enough to be realistic, short enough to index in minutes. */
export const MAX_WORDS = 3000;
const MIN_WORDS = 250;

export const SOURCE_PATHS = {
  info: '/usr/share/info',
  doc: '/usr/share/doc',
  dpkgStatus: '/var/lib/dpkg/status',
  licences: '/usr/share/common-licenses',
} as const;

export function readAllSources(): SourceDocument[] {
  return [...infoManuals(), ...nodejsReference(), ...readmes(), ...packageDescriptions(), ...licences()];
}

// ------------------------------------------------------------------------------------------ helpers

export function readMaybeGzipped(path: string): string {
  const bytes = readFileSync(path);
  return path.endsWith('.gz') ? gunzipSync(bytes).toString('utf8') : bytes.toString('utf8');
}

export function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 60);
}

export function documentWords(sections: readonly Section[]): number {
  return sections.reduce((sum, section) => sum + wordCount(section.paragraphs.join(' ')), 0);
}

/** Keeps whole paragraphs until MAX_WORDS, so a long source still ends at a paragraph boundary. */
export function capWords(sections: readonly Section[], max = MAX_WORDS): Section[] {
  const kept: Section[] = [];
  let total = 0;
  for (const section of sections) {
    const paragraphs: string[] = [];
    for (const paragraph of section.paragraphs) {
      if (total >= max) break;
      // A text file without blank lines is one "paragraph": it is cut too.
      const kept = paragraph
        .split(' ')
        .slice(0, max - total)
        .join(' ');
      paragraphs.push(kept);
      total += wordCount(kept);
    }
    if (paragraphs.length > 0) kept.push({ ...(section.heading ? { heading: section.heading } : {}), paragraphs });
    if (total >= max) break;
  }
  return kept;
}

/** Paragraphs of plain text: blank-line separated, lines joined, whitespace collapsed. */
export function paragraphsOf(text: string): string[] {
  return text
    .split(/\n\s*\n/)
    .map((block) =>
      block
        .split('\n')
        .map((line) => line.trim())
        .join(' ')
        .replace(/\s+/g, ' ')
        .trim(),
    )
    .filter((paragraph) => /[a-zA-Z]{2}/.test(paragraph));
}

// --------------------------------------------------------------------------------------- info manuals

interface InfoNode {
  manual: string;
  name: string;
  sections: Section[];
  words: number;
}

// Indexes, licences (common-licenses has them), the Top node (a table of contents) and history notes.
export const SKIPPED_NODES = /index|^top$|copying|license|licence|^(gnu )?free documentation|^history$|^contributors|^thanks|^authors/i;

function infoManuals(): SourceDocument[] {
  if (!existsSync(SOURCE_PATHS.info)) return [];
  const files = readdirSync(SOURCE_PATHS.info)
    .filter((name) => name.endsWith('.gz'))
    .sort();
  const nodes = new Map<string, InfoNode[]>();
  for (const file of files) {
    const manual = file.replace(/\.info(-\d+)?\.gz$/, '');
    const list = nodes.get(manual) ?? [];
    list.push(...infoNodes(manual, readMaybeGzipped(join(SOURCE_PATHS.info, file))));
    nodes.set(manual, list);
  }
  const documents: SourceDocument[] = [];
  for (const [manual, list] of nodes) documents.push(...groupNodes(manual, list));
  return documents;
}

function infoNodes(manual: string, text: string): InfoNode[] {
  const result: InfoNode[] = [];
  for (const part of text.split('\x1f')) {
    const header = /^\n?File: [^,]+,\s+Node: ([^,\n]+)[^\n]*\n/.exec(part);
    if (!header?.[1]) continue;
    const name = header[1].trim();
    if (SKIPPED_NODES.test(name)) continue;
    const sections = infoSections(part.slice(header[0].length));
    const words = documentWords(sections);
    if (words > 0) result.push({ manual, name, sections, words });
  }
  return result;
}

/** A node's text in sections: info headings are a line underlined with *, =, - or . of the same length. */
export function infoSections(body: string): Section[] {
  const withoutMenu = body.replace(/\n\* Menu:[\s\S]*$/, '\n');
  const cleaned = withoutMenu
    // Cross references read as plain words: "*Note Sorting::" -> "see Sorting".
    .replace(/\*[Nn]ote\s+([^:]+?)(::|:\s*[^.,]*[.,])/g, 'see $1')
    .replace(/^\s*\[[^\]]*\]\s*$/gm, '');
  const lines = cleaned.split('\n');
  const sections: Section[] = [];
  let current: { heading?: string; lines: string[] } = { lines: [] };
  const flush = () => {
    const paragraphs = paragraphsOf(current.lines.join('\n'));
    if (paragraphs.length > 0) sections.push({ ...(current.heading ? { heading: current.heading } : {}), paragraphs });
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const next = lines[i + 1] ?? '';
    if (line.trim() && /^[*=.-]{3,}$/.test(next.trim()) && Math.abs(next.trim().length - line.trim().length) <= 2) {
      flush();
      current = { heading: normalise(line.trim().replace(/^[\d.]+\s+/, '')), lines: [] };
      i++;
      continue;
    }
    current.lines.push(normalise(line));
  }
  flush();
  return sections;
}

/**
 * One document per node of a useful size; short neighbouring nodes (the way manuals split one topic
 * into small pieces) are merged until the document has MIN_WORDS words, at most four nodes.
 */
function groupNodes(manual: string, nodes: readonly InfoNode[]): SourceDocument[] {
  const documents: SourceDocument[] = [];
  let group: InfoNode[] = [];
  const flush = () => {
    const words = group.reduce((sum, node) => sum + node.words, 0);
    const first = group[0];
    if (first && words >= MIN_WORDS) {
      const sections = group.flatMap((node, index) => {
        // Every node after the first starts with its own name as a heading.
        if (index === 0 || node.sections[0]?.heading) return node.sections;
        return [{ heading: node.name, paragraphs: node.sections[0]?.paragraphs ?? [] }, ...node.sections.slice(1)];
      });
      const title = normalise(first.sections[0]?.heading ?? first.name);
      documents.push({
        id: `${manual}-${slug(first.name)}`,
        kind: 'manual',
        origin: `info ${manual}: ${group.map((node) => node.name).join(', ')}`,
        title,
        sections: capWords(first.sections[0]?.heading ? sections : [{ heading: title, paragraphs: [] }, ...sections]),
      });
    }
    group = [];
  };
  for (const node of nodes) {
    if (node.words >= MIN_WORDS) {
      flush();
      group = [node];
      flush();
      continue;
    }
    group.push(node);
    const words = group.reduce((sum, member) => sum + member.words, 0);
    if (words >= MIN_WORDS || group.length >= 4) flush();
  }
  flush();
  return documents;
}

// ---------------------------------------------------------------------------- Node.js API reference

const NODEJS_API = join(SOURCE_PATHS.doc, 'nodejs', 'api');

function nodejsReference(): SourceDocument[] {
  if (!existsSync(NODEJS_API)) return [];
  const documents: SourceDocument[] = [];
  for (const file of readdirSync(NODEJS_API)
    .filter((name) => name.endsWith('.md'))
    .sort()) {
    if (file === 'all.md' || file === 'index.md' || file === 'deprecations.md' || file === 'errors.md') continue;
    const { title, sections } = markdownSections(readFileSync(join(NODEJS_API, file), 'utf8'));
    // One document per `##` section (with its `###` sub-sections); a long one is cut at MAX_WORDS.
    let group: Section[] = [];
    const flush = () => {
      const head = group[0];
      if (head?.heading && documentWords(group) >= MIN_WORDS) {
        documents.push({
          id: `nodejs-${file.replace(/\.md$/, '')}-${slug(head.heading)}`,
          kind: 'nodejs',
          origin: `Node.js API reference, ${file}: ${head.heading}`,
          title: `${title}: ${head.heading}`,
          sections: capWords(group),
        });
      }
      group = [];
    };
    for (const section of sections) {
      if (section.level === 2) flush();
      if (section.level >= 2) group.push(section);
    }
    flush();
  }
  return documents;
}

interface MarkdownSection extends Section {
  level: number;
}

/** Headings and paragraphs of Markdown (ATX or underlined headings); code blocks kept as paragraphs. */
export function markdownSections(markdown: string): { title: string; sections: MarkdownSection[] } {
  const text = normalise(
    markdown
      .replace(/<!--[\s\S]*?-->/g, '')
      .replace(/!\[[^\]]*\]\([^)]*\)/g, '')
      .replace(/\[([^\]]+)\]\[[^\]]*\]/g, '$1')
      .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
      .replace(/^\[[^\]]+\]:.*$/gm, '')
      .replace(/<\/?[a-z][^>]*>/gi, ''),
  );
  const sections: MarkdownSection[] = [];
  let title = '';
  let current: { heading?: string; level: number; lines: string[] } = { level: 0, lines: [] };
  const flush = () => {
    const paragraphs = paragraphsOf(current.lines.join('\n').replace(/`/g, ''));
    if (paragraphs.length > 0 || current.heading)
      sections.push({ ...(current.heading ? { heading: current.heading } : {}), level: current.level, paragraphs });
  };
  const lines = text.split('\n');
  let fenced = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      current.lines.push('');
      continue;
    }
    const atx = fenced ? null : /^(#{1,6})\s+(.+?)\s*#*\s*$/.exec(line);
    const underline = fenced ? null : /^(=+|-+)\s*$/.exec(lines[i + 1] ?? '');
    if (atx?.[1] && atx[2]) {
      flush();
      current = { heading: atx[2].replace(/`/g, ''), level: atx[1].length, lines: [] };
    } else if (underline?.[1] && line.trim() && !/^\s*[-*]/.test(line)) {
      flush();
      current = { heading: line.trim().replace(/`/g, ''), level: underline[1].startsWith('=') ? 1 : 2, lines: [] };
      i++;
    } else {
      current.lines.push(line);
      continue;
    }
    if (current.level === 1 && !title) title = current.heading ?? '';
  }
  flush();
  return { title, sections };
}

// -------------------------------------------------------------------------- READMEs and other notes

const README_NAME = /^(readme([._-].*)?|.*\.(md|markdown|txt|rst))(\.gz)?$/i;
// Release notes and credits are lists of versions and names, not documents anyone searches by topic.
const README_SKIPPED = /^(changelog|changes|news|thanks|authors|copyright|copying|license|todo|bugs|code_of_conduct)/i;
// Handled elsewhere (Node.js), or hundreds of near-identical release notes (git), or build data.
const README_SKIPPED_DIRS = /^(nodejs|git\/RelNotes|.*\/(test|tests|t|examples?)(\/|$))/;

function readmes(): SourceDocument[] {
  if (!existsSync(SOURCE_PATHS.doc)) return [];
  const documents: SourceDocument[] = [];
  const seen = new Set<string>();
  const perPackage = new Map<string, number>();
  for (const path of listFiles(SOURCE_PATHS.doc)) {
    const rel = relative(SOURCE_PATHS.doc, path);
    const name = basename(path);
    if (!README_NAME.test(name) || README_SKIPPED.test(name) || README_SKIPPED_DIRS.test(rel)) continue;
    const size = statSync(path).size;
    if (size < 1200 || size > 200_000) continue;
    const pkg = rel.split('/')[0] ?? rel;
    // At most three notes of one package, so a few big packages do not make up the corpus.
    if ((perPackage.get(pkg) ?? 0) >= 3) continue;
    let text: string;
    try {
      text = readMaybeGzipped(path);
    } catch {
      continue;
    }
    const key = text.replace(/\s+/g, ' ').slice(0, 2000);
    if (seen.has(key) || !/^[\s\S]{0,200}[a-zA-Z]{3}/.test(text)) continue;
    seen.add(key);
    const { title, sections } = markdownSections(text);
    const body = capWords(sections.filter((section) => section.paragraphs.length > 0));
    if (documentWords(body) < MIN_WORDS || looksLikeCode(body)) continue;
    perPackage.set(pkg, (perPackage.get(pkg) ?? 0) + 1);
    const plainName = name.replace(/\.gz$/, '');
    documents.push({
      id: `doc-${slug(rel.replace(/\.gz$/, ''))}`,
      kind: 'readme',
      origin: `/usr/share/doc/${rel}`,
      title: title || `${pkg}: ${plainName}`,
      sections: body,
    });
  }
  return documents;
}

export function listFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...listFiles(path));
    else if (entry.isFile()) files.push(path);
  }
  return files;
}

/** Source code, configuration or tables saved as .txt: few sentences per symbol. */
export function looksLikeCode(sections: readonly Section[]): boolean {
  const text = sections.flatMap((section) => section.paragraphs).join(' ');
  const symbols = (text.match(/[{}();=<>|\\$]/g) ?? []).length;
  return symbols / Math.max(1, text.length) > 0.03;
}

// ----------------------------------------------------------------------------- package descriptions

interface PackageEntry {
  name: string;
  section: string;
  summary: string;
  description: string[];
  homepage?: string;
}

const PACKAGES_PER_DOCUMENT = 12;

function packageDescriptions(): SourceDocument[] {
  if (!existsSync(SOURCE_PATHS.dpkgStatus)) return [];
  const bySection = new Map<string, PackageEntry[]>();
  const seenSummaries = new Set<string>();
  for (const stanza of readFileSync(SOURCE_PATHS.dpkgStatus, 'utf8').split(/\n\n+/)) {
    const entry = packageEntry(stanza);
    // Library packages repeat their source package's description: keep the first of each.
    if (!entry || seenSummaries.has(entry.summary) || wordCount(entry.description.join(' ')) < 30) continue;
    seenSummaries.add(entry.summary);
    const list = bySection.get(entry.section) ?? [];
    list.push(entry);
    bySection.set(entry.section, list);
  }
  const documents: SourceDocument[] = [];
  for (const [section, entries] of [...bySection].sort(([a], [b]) => a.localeCompare(b))) {
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (let start = 0; start + 4 <= entries.length; start += PACKAGES_PER_DOCUMENT) {
      const group = entries.slice(start, start + PACKAGES_PER_DOCUMENT);
      const first = group[0]?.name ?? '';
      const last = group.at(-1)?.name ?? '';
      documents.push({
        id: `packages-${slug(section)}-${slug(first)}`,
        kind: 'packages',
        origin: `/var/lib/dpkg/status, section ${section}: ${first} to ${last}`,
        title: `Debian packages in section ${section}: ${first} to ${last}`,
        sections: group.map((entry) => ({
          heading: `${entry.name}: ${entry.summary}`,
          paragraphs: [...entry.description, ...(entry.homepage ? [`Homepage: ${entry.homepage}`] : [])],
        })),
      });
    }
  }
  return documents;
}

function packageEntry(stanza: string): PackageEntry | undefined {
  const field = (name: string) => new RegExp(`^${name}: (.*)$`, 'm').exec(stanza)?.[1]?.trim();
  const name = field('Package');
  const descriptionAt = stanza.search(/^Description: /m);
  if (!name || descriptionAt < 0) return undefined;
  const [first = '', ...rest] = stanza.slice(descriptionAt + 'Description: '.length).split('\n');
  const continuation: string[] = [];
  for (const line of rest) {
    if (!line.startsWith(' ')) break;
    continuation.push(line.trim() === '.' ? '' : line.trim());
  }
  const homepage = field('Homepage');
  return {
    name,
    section: (field('Section') ?? 'misc').replace(/^.*\//, ''),
    summary: normalise(first.trim()),
    description: paragraphsOf(normalise(continuation.join('\n'))),
    ...(homepage ? { homepage } : {}),
  };
}

// -------------------------------------------------------------------------------------------- licences

function licences(): SourceDocument[] {
  if (!existsSync(SOURCE_PATHS.licences)) return [];
  const documents: SourceDocument[] = [];
  const seen = new Set<string>();
  for (const name of readdirSync(SOURCE_PATHS.licences).sort()) {
    const path = join(SOURCE_PATHS.licences, name);
    const real = realpathSync(path);
    // GPL is a link to GPL-3, LGPL to LGPL-3...: one document per text.
    if (seen.has(real)) continue;
    seen.add(real);
    const paragraphs = paragraphsOf(normalise(readFileSync(real, 'utf8')));
    const title = paragraphs[0]?.slice(0, 100) ?? name;
    documents.push({
      id: `licence-${slug(basename(real))}`,
      kind: 'licence',
      origin: `/usr/share/common-licenses/${basename(real)}`,
      title,
      sections: capWords([{ heading: title, paragraphs: paragraphs.slice(1) }]),
    });
  }
  return documents;
}
