/**
 * The described set (sources.ts): a seeded selection of documents whose questions were written apart
 * from them, a quarter of each kind left out of the index so that their questions are in-domain questions
 * the corpus cannot answer, and a fixed split of every question into a tuning half and a held-out half.
 * Same machine, same set: everything is derived from the files here and the seed; `labelled-set.json`
 * (kept in git) lets a run tell when the machine's documentation changed.
 *
 * The fresh sample (issue 23) is the same procedure with its own seed and quotas, drawn from the documents
 * the committed described set does not use (neither indexed nor left out): the held-out half was looked at
 * while tuning, so the fresh sample is the one nobody has seen. Its questions all have split `fresh`; it is
 * measured once and never tuned on; `fresh-set.json` (kept in git) is its record.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { seededRandom } from '../../../src/util/seeded-random.ts';
import { removeStale } from '../corpus.ts';
import { shuffle } from '../queries.ts';
import { FORMATS, type Format, renderDocument } from '../render.ts';
import type { SourceDocument } from '../sources.ts';
import { wordCount } from '../text.ts';
import { type DescribedDocument, type DescribedKind, readDescribedSources } from './sources.ts';

/** Man pages of one family (gcloud_*, git-*, openssl's...) are near copies of each other: at most this many. */
const PER_FAMILY = 3;
/** The share of each kind's documents left out of the index: their questions are the unanswerable ones. */
const LEFT_OUT = 0.25;
const RENDERING_VERSION = 1;

export type Split = 'tuning' | 'held-out' | 'fresh';
export type Sample = 'described' | 'fresh';
export const SAMPLES: readonly Sample[] = ['described', 'fresh'];

export const DESCRIBED_CACHE = join(import.meta.dir, '..', '.cache');
export const COMMITTED_DESCRIBED_SET = join(import.meta.dir, 'labelled-set.json');
export const COMMITTED_FRESH_SET = join(import.meta.dir, 'fresh-set.json');

/** What differs between the two samples; everything else (sources, rendering, formats, family limit, left-out share) is shared. */
interface Recipe {
  seed: number;
  /** Documents of each kind (indexed and left out together). */
  quotas: Record<DescribedKind, number>;
  /** Where its record is kept in git. */
  committed: string;
  /** Origins it must not draw: documents another sample uses. */
  excluded: () => ReadonlySet<string>;
  /** A question's split from its place within its kind and role (0, 1, 2...). */
  split: (place: number) => Split;
}

const RECIPES: Record<Sample, Recipe> = {
  described: {
    seed: 20_261_126,
    // Man pages are the most plentiful.
    quotas: { man: 170, info: 120, debian: 100 },
    committed: COMMITTED_DESCRIBED_SET,
    excluded: () => new Set(),
    // Alternating within each kind and each role: both halves get the same mix.
    split: (place) => (place % 2 === 0 ? 'tuning' : 'held-out'),
  },
  fresh: {
    seed: 20_261_127,
    // About the described set's size within what it leaves: every info node and README it does not use (16 and 2 here).
    quotas: { man: 240, info: Number.POSITIVE_INFINITY, debian: Number.POSITIVE_INFINITY },
    committed: COMMITTED_FRESH_SET,
    // The committed described set, not this machine's draw of it: its documents are the ones tuning has seen.
    excluded: () => committedOrigins(COMMITTED_DESCRIBED_SET),
    split: () => 'fresh',
  },
};

export interface DescribedQuestion {
  question: string;
  kind: DescribedKind;
  split: Split;
  /** The document's path in the corpus; for an unanswerable question, where it would be (it is not indexed). */
  relevant: string;
  origin: string;
}

export interface DescribedSet {
  sample: Sample;
  dir: string;
  fingerprint: string;
  files: { path: string; origin: string; words: number; format: Format }[];
  answerable: DescribedQuestion[];
  unanswerable: DescribedQuestion[];
}

/** Where `sample`'s record is kept in git (labelled-set.json, fresh-set.json). */
export function committedSetPath(sample: Sample): string {
  return RECIPES[sample].committed;
}

export async function buildDescribedSet(sample: Sample = 'described', cacheRoot = DESCRIBED_CACHE): Promise<DescribedSet> {
  const recipe = RECIPES[sample];
  const random = seededRandom(recipe.seed);
  const excluded = recipe.excluded();
  const sources = readDescribedSources().filter((document) => !excluded.has(document.origin));
  const answerable: DescribedQuestion[] = [];
  const unanswerable: DescribedQuestion[] = [];
  const indexed: { document: DescribedDocument; path: string; format: Format }[] = [];
  let formatTurn = 0;
  for (const [kind, quota] of Object.entries(recipe.quotas) as [DescribedKind, number][]) {
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
      const split = recipe.split(isLeftOut ? index : index - leftOut);
      const question = { question: document.description, kind, split, relevant: path, origin: document.origin };
      if (isLeftOut) unanswerable.push(question);
      else {
        answerable.push(question);
        indexed.push({ document, path, format });
      }
    }
  }
  indexed.sort((a, b) => a.path.localeCompare(b.path));
  const hash = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 12);
  const fingerprint = hash({ RENDERING_VERSION, indexed: indexed.map(({ document, path }) => ({ document, path })), unanswerable });
  const dir = join(cacheRoot, `${sample}-${fingerprint}`);
  if (!existsSync(dir)) {
    const partial = `${dir}.partial`;
    rmSync(partial, { recursive: true, force: true });
    for (const { document, path, format } of indexed) {
      mkdirSync(dirname(join(partial, path)), { recursive: true });
      // render.ts reads the title and sections only.
      writeFileSync(join(partial, path), await renderDocument(document as unknown as SourceDocument, format));
    }
    renameSync(partial, dir);
    removeStale(cacheRoot, `${sample}-`, dir);
  }
  const files = indexed.map(({ document, path, format }) => ({
    path,
    origin: document.origin,
    format,
    words: document.sections.reduce((sum, section) => sum + wordCount(section.paragraphs.join(' ')), 0),
  }));
  return { sample, dir, fingerprint, files, answerable, unanswerable };
}

/** What is kept in git: the questions, their split and their documents' origins (the documents are on the machine). */
export function describedLabelledSet(set: DescribedSet) {
  return { fingerprint: set.fingerprint, documents: set.files, answerable: set.answerable, unanswerable: set.unanswerable };
}

/** The origins of every document a committed set uses, indexed or left out (its questions name them all). */
function committedOrigins(path: string): ReadonlySet<string> {
  if (!existsSync(path)) throw new Error(`${path} is missing: the fresh sample is drawn from the documents it does not use`);
  const committed = JSON.parse(readFileSync(path, 'utf8')) as { answerable: DescribedQuestion[]; unanswerable: DescribedQuestion[] };
  return new Set([...committed.answerable, ...committed.unanswerable].map((question) => question.origin));
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
