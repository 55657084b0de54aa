/**
 * Which documents a sample uses and which questions it asks (build.ts then renders the documents): either the
 * committed selection (labelled-set.json, fresh-set.json) read back from this machine's files, which is the
 * default so that installing a package moves nothing, or a seeded draw over the machine's documents, to make
 * a new set on purpose (`run.ts --redraw`). Both give a Selection, so rendering and questions follow one path.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { seededRandom } from '../../../src/util/seeded-random.ts';
import { shuffle } from '../queries.ts';
import { FORMATS, type Format } from '../render.ts';
import { wordCount } from '../text.ts';
import type { DescribedDocument, DescribedKind } from './sources.ts';

/** Man pages of one family (gcloud_*, git-*, openssl's...) are near copies of each other: at most this many. */
const PER_FAMILY = 3;
/** The share of each kind's documents left out of the index: their questions are the unanswerable ones. */
const LEFT_OUT = 0.25;

export type Split = 'tuning' | 'held-out' | 'fresh';

export interface DescribedQuestion {
  question: string;
  kind: DescribedKind;
  split: Split;
  /** The document's path in the corpus; for an unanswerable question, where it would be (it is not indexed). */
  relevant: string;
  origin: string;
}

/** A set as kept in git: its documents by origin (the texts are the machine's), its questions and their split. */
export interface CommittedSet {
  fingerprint: string;
  /** `digest`: the document as the fingerprint saw it (absent in a file written before it was recorded). */
  documents: { path: string; origin: string; format: Format; words: number; digest?: string }[];
  answerable: DescribedQuestion[];
  unanswerable: DescribedQuestion[];
}

export interface SelectedDocument {
  document: DescribedDocument;
  path: string;
  format: Format;
}

export interface Selection {
  indexed: SelectedDocument[];
  answerable: DescribedQuestion[];
  unanswerable: DescribedQuestion[];
  /** Committed documents this machine lacks or describes otherwise, one line each (left out: allowMissing). */
  missing: string[];
  /** What was left out for them. */
  leftOut: { questions: number; documents: number };
  /** Origins of indexed documents read as committed (same origin and description) whose text differs: the fingerprint then differs. */
  changedTexts: string[];
}

/** How a sample is drawn (build.ts's recipes). */
export interface Draw {
  seed: number;
  /** Documents of each kind (indexed and left out together). */
  quotas: Record<DescribedKind, number>;
  /** A question's split from its place within its kind and role (0, 1, 2...). */
  split: (place: number) => Split;
}

/** The committed set cannot be built as committed on this machine: the message names each document, one a line. */
export class PinnedSetError extends Error {}

/** A document as the fingerprint sees it, so a committed set can tell which texts changed since. */
export function documentDigest(document: DescribedDocument): string {
  return createHash('sha256').update(JSON.stringify(document)).digest('hex').slice(0, 12);
}

/** A document's words, as the committed files record them. */
export function wordsOf(document: DescribedDocument): number {
  return document.sections.reduce((sum, section) => sum + wordCount(section.paragraphs.join(' ')), 0);
}

export function readCommittedSet(path: string): CommittedSet | undefined {
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as CommittedSet) : undefined;
}

/** The origins of every document a committed set uses, indexed or left out (its questions name them all). */
export function committedOrigins(path: string): ReadonlySet<string> {
  const committed = readCommittedSet(path);
  if (!committed) throw new Error(`${path} is missing: the fresh sample is drawn from the documents it does not use`);
  return new Set([...committed.answerable, ...committed.unanswerable].map((question) => question.origin));
}

/**
 * The committed selection on this machine's files: the same documents (by origin), paths, formats, questions
 * and splits, in the committed order. A document whose origin is gone, or whose description is no longer the
 * committed question, is reported; unless `allowMissing`, that stops the run (the figures would not compare).
 */
export function committedSelection(
  committed: CommittedSet,
  candidates: readonly DescribedDocument[],
  { committedPath, allowMissing }: { committedPath: string; allowMissing: boolean },
): Selection {
  const byOrigin = new Map<string, DescribedDocument>();
  for (const document of candidates) if (!byOrigin.has(document.origin)) byOrigin.set(document.origin, document);
  const entries = new Map(committed.documents.map((entry) => [entry.path, entry]));
  if (entries.size !== committed.answerable.length) {
    throw new Error(`${committedPath}: ${entries.size} documents for ${committed.answerable.length} answerable questions`);
  }
  const missing: string[] = [];
  /** This machine's document for a committed question, or undefined (and a line in `missing`). */
  const find = (question: DescribedQuestion) => {
    const document = byOrigin.get(question.origin);
    // sources.ts also drops a document that became too short, or code, or copies its description.
    if (!document) missing.push(`${question.relevant}: ${question.origin} is not on this machine (or no longer qualifies: sources.ts)`);
    else if (document.description !== question.question) {
      missing.push(`${question.relevant}: ${question.origin} is now described "${document.description}", committed "${question.question}"`);
    } else return document;
    return undefined;
  };
  const indexed: SelectedDocument[] = [];
  const answerable: DescribedQuestion[] = [];
  const changedTexts: string[] = [];
  for (const question of committed.answerable) {
    const entry = entries.get(question.relevant);
    if (entry?.origin !== question.origin) throw new Error(`${committedPath}: no document ${question.relevant} of ${question.origin}`);
    const document = find(question);
    if (!document) continue;
    answerable.push(question);
    indexed.push({ document, path: entry.path, format: entry.format });
    // A file written before digests were recorded can only tell a change of length.
    if (entry.digest ? entry.digest !== documentDigest(document) : entry.words !== wordsOf(document)) changedTexts.push(entry.origin);
  }
  const unanswerable = committed.unanswerable.filter((question) => find(question) !== undefined);
  if (missing.length > 0 && !allowMissing) {
    throw new PinnedSetError(
      [
        `${basename(committedPath)} names ${missing.length} document${missing.length === 1 ? '' : 's'} this machine cannot give as committed:`,
        ...missing.map((line) => `  ${line}`),
        'Run with --allow-missing to leave them and their questions out (the figures then cover fewer questions),',
        'or with --redraw --write-labelled-set to draw and commit a new set on purpose.',
      ].join('\n'),
    );
  }
  indexed.sort((a, b) => a.path.localeCompare(b.path));
  const leftOutQuestions = committed.answerable.length + committed.unanswerable.length - answerable.length - unanswerable.length;
  return {
    indexed,
    answerable,
    unanswerable,
    missing,
    leftOut: { questions: leftOutQuestions, documents: committed.answerable.length - answerable.length },
    changedTexts,
  };
}

/**
 * A seeded draw of `draw.quotas` per kind from `sources`, at most PER_FAMILY man pages of one family, formats in
 * turn; the first quarter of each kind is left out of the index and asks the unanswerable questions.
 */
export function drawnSelection(draw: Draw, sources: readonly DescribedDocument[]): Selection {
  const random = seededRandom(draw.seed);
  const answerable: DescribedQuestion[] = [];
  const unanswerable: DescribedQuestion[] = [];
  const indexed: SelectedDocument[] = [];
  let formatTurn = 0;
  for (const [kind, quota] of Object.entries(draw.quotas) as [DescribedKind, number][]) {
    const chosen = choose(
      random,
      sources.filter((document) => document.kind === kind),
      quota,
    );
    const leftOut = Math.round(chosen.length * LEFT_OUT);
    for (const [index, document] of chosen.entries()) {
      const format = FORMATS[formatTurn++ % FORMATS.length] as Format;
      const path = `${kind}/${document.id}.${format}`;
      const isLeftOut = index < leftOut;
      const split = draw.split(isLeftOut ? index : index - leftOut);
      const question = { question: document.description, kind, split, relevant: path, origin: document.origin };
      if (isLeftOut) unanswerable.push(question);
      else {
        answerable.push(question);
        indexed.push({ document, path, format });
      }
    }
  }
  indexed.sort((a, b) => a.path.localeCompare(b.path));
  return { indexed, answerable, unanswerable, missing: [], leftOut: { questions: 0, documents: 0 }, changedTexts: [] };
}

/** A seeded sample of `quota`, at most PER_FAMILY man pages of one family. */
function choose(random: () => number, candidates: readonly DescribedDocument[], quota: number): DescribedDocument[] {
  const families = new Map<string, number>();
  const chosen: DescribedDocument[] = [];
  for (const document of shuffle(random, candidates)) {
    if (chosen.length >= quota) break;
    const family = document.kind === 'man' ? (document.id.slice(4).split(/[-_.]/)[0] ?? '') : document.id;
    if ((families.get(family) ?? 0) >= PER_FAMILY) continue;
    families.set(family, (families.get(family) ?? 0) + 1);
    chosen.push(document);
  }
  return chosen;
}
