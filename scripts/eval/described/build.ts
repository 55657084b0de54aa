/**
 * The described set (sources.ts): documents whose questions were written apart from them, a quarter of each
 * kind left out of the index so that their questions are in-domain questions the corpus cannot answer, and a
 * fixed split of every question into a tuning half and a held-out half.
 *
 * The fresh sample (issue 23) is the same procedure with its own seed and quotas, drawn from the documents
 * the committed described set does not use (neither indexed nor left out): the held-out half was looked at
 * while tuning, so the fresh sample is the one nobody has seen. Its questions all have split `fresh`; it is
 * measured once and never tuned on.
 *
 * Both are pinned: once `labelled-set.json` / `fresh-set.json` (kept in git) exist, every run builds exactly
 * the committed selection from this machine's files (selection.ts), so installing a package changes neither
 * set. The seeded draw is only made on purpose (`redraw`, with run.ts's --write-labelled-set to commit it) or
 * when nothing is committed yet. Either way the selection is rendered here, one path for both.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { removeStale } from '../corpus.ts';
import { type Format, renderDocument } from '../render.ts';
import type { SourceDocument } from '../sources.ts';
import {
  committedOrigins,
  committedSelection,
  type DescribedQuestion,
  type Draw,
  documentDigest,
  drawnSelection,
  readCommittedSet,
  type Selection,
  wordsOf,
} from './selection.ts';
import { type DescribedDocument, readDescribedCandidates, uniquelyDescribed } from './sources.ts';

export type { DescribedQuestion, Split } from './selection.ts';

const RENDERING_VERSION = 1;

export type Sample = 'described' | 'fresh';
export const SAMPLES: readonly Sample[] = ['described', 'fresh'];

export const DESCRIBED_CACHE = join(import.meta.dir, '..', '.cache');
export const COMMITTED_DESCRIBED_SET = join(import.meta.dir, 'labelled-set.json');
export const COMMITTED_FRESH_SET = join(import.meta.dir, 'fresh-set.json');

/** What differs between the two samples; everything else (sources, rendering, formats, family limit, left-out share) is shared. */
interface Recipe extends Draw {
  /** Where its record is kept in git. */
  committed: string;
  /** The committed set of another sample, whose documents (indexed or left out) a draw must not choose. */
  excludedFrom?: string;
}

const RECIPES: Record<Sample, Recipe> = {
  described: {
    seed: 20_261_126,
    // Man pages are the most plentiful.
    quotas: { man: 170, info: 120, debian: 100 },
    committed: COMMITTED_DESCRIBED_SET,
    // Alternating within each kind and each role: both halves get the same mix.
    split: (place) => (place % 2 === 0 ? 'tuning' : 'held-out'),
  },
  fresh: {
    seed: 20_261_127,
    // About the described set's size within what it leaves: every info node and README it does not use (16 and 2 here).
    quotas: { man: 240, info: Number.POSITIVE_INFINITY, debian: Number.POSITIVE_INFINITY },
    committed: COMMITTED_FRESH_SET,
    // The committed described set, not a draw of it on this machine: its documents are the ones tuning has seen.
    excludedFrom: COMMITTED_DESCRIBED_SET,
    split: () => 'fresh',
  },
};

export interface DescribedSet {
  sample: Sample;
  dir: string;
  fingerprint: string;
  files: { path: string; origin: string; words: number; format: Format; digest: string }[];
  answerable: DescribedQuestion[];
  unanswerable: DescribedQuestion[];
  /** Where the selection came from: a seeded draw, or the committed file (with what differs on this machine). */
  selection: { drawn: true } | PinnedSelection;
}

export interface PinnedSelection extends Pick<Selection, 'missing' | 'leftOut' | 'changedTexts'> {
  drawn: false;
  committedFingerprint: string;
  /** Documents it uses that another sample's committed set uses too (the fresh sample's, after the described set was redrawn). */
  overlapping: number;
}

export interface BuildOptions {
  /** Draw the seeded selection again instead of reading the committed one (the only way without a committed file). */
  redraw?: boolean;
  /** Leave out the committed documents this machine lacks or describes otherwise, and their questions, instead of stopping. */
  allowMissing?: boolean;
  cacheRoot?: string;
  /** The committed file to read (tests): by default the sample's own. */
  committedPath?: string;
  /** This machine's documents (tests): by default read from /usr/share (sources.ts). */
  documents?: readonly DescribedDocument[];
}

/** Where `sample`'s record is kept in git (labelled-set.json, fresh-set.json). */
export function committedSetPath(sample: Sample): string {
  return RECIPES[sample].committed;
}

export async function buildDescribedSet(sample: Sample = 'described', options: BuildOptions = {}): Promise<DescribedSet> {
  const recipe = RECIPES[sample];
  const committedPath = options.committedPath ?? recipe.committed;
  const committed = options.redraw ? undefined : readCommittedSet(committedPath);
  const documents = options.documents ?? readDescribedCandidates();
  // Another sample's committed documents: a draw must not choose them (it stops if that set is not there); a pinned set reports those it holds.
  const others =
    recipe.excludedFrom && (!committed || existsSync(recipe.excludedFrom)) ? committedOrigins(recipe.excludedFrom) : new Set<string>();
  let selection: Selection;
  if (committed) {
    selection = committedSelection(committed, documents, { committedPath, allowMissing: options.allowMissing ?? false });
  } else {
    selection = drawnSelection(
      recipe,
      uniquelyDescribed(documents).filter((document) => !others.has(document.origin)),
    );
  }
  const { indexed, answerable, unanswerable } = selection;
  const hash = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 12);
  const fingerprint = hash({ RENDERING_VERSION, indexed: indexed.map(({ document, path }) => ({ document, path })), unanswerable });
  const cacheRoot = options.cacheRoot ?? DESCRIBED_CACHE;
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
    words: wordsOf(document),
    digest: documentDigest(document),
  }));
  const { missing, leftOut, changedTexts } = selection;
  const overlapping = [...answerable, ...unanswerable].filter((question) => others.has(question.origin)).length;
  return {
    sample,
    dir,
    fingerprint,
    files,
    answerable,
    unanswerable,
    selection: committed
      ? { drawn: false, committedFingerprint: committed.fingerprint, missing, leftOut, changedTexts, overlapping }
      : { drawn: true },
  };
}

/** What is kept in git: the questions, their split and their documents' origins (the documents are on the machine). */
export function describedLabelledSet(set: DescribedSet) {
  return { fingerprint: set.fingerprint, documents: set.files, answerable: set.answerable, unanswerable: set.unanswerable };
}
