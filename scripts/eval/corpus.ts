/**
 * The evaluation set: a seeded selection of the documents sources.ts reads, written in the five formats
 * (about a fifth each), and the labelled queries made from them. Everything is derived from the text
 * on this machine and a seed, so the same machine always rebuilds the same set; the folder is named
 * after a fingerprint of its contents and written only when missing.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { seededRandom } from '../fixtures/seeded-random.ts';
import { type KnownItemQuery, knownItemQueries, shuffle, type UnanswerableQuestion, unanswerableQuestions } from './queries.ts';
import { FORMATS, type Format, renderDocument } from './render.ts';
import { readAllSources, type SourceDocument, type SourceKind } from './sources.ts';
import { wordCount } from './text.ts';

export type EvalSize = 'full' | 'small';

/** Documents of each kind: roughly how a person's folder of technical documents mixes them. */
const QUOTAS: Record<EvalSize, Record<SourceKind, number>> = {
  full: { manual: 210, nodejs: 80, readme: 70, packages: 28, licence: 12 },
  small: { manual: 30, nodejs: 12, readme: 10, packages: 5, licence: 3 },
};
/** The small set's documents are cut shorter, so that the test indexes them in seconds. */
const SMALL_MAX_WORDS = 450;
const UNANSWERABLE_COUNT: Record<EvalSize, number> = { full: Number.POSITIVE_INFINITY, small: 20 };
const SEED = 20_260_101;
/** Bump when render.ts changes, so that folders written by the old one are not reused. */
const RENDERING_VERSION = 1;

export const DEFAULT_CACHE = join(import.meta.dir, '.cache');

export interface CorpusFile {
  path: string;
  id: string;
  kind: SourceKind;
  format: Format;
  origin: string;
  title: string;
  words: number;
}

export interface EvalSet {
  size: EvalSize;
  /** The corpus folder: what the dataset indexes. */
  dir: string;
  /** Changes whenever a document, its format or a query changes. */
  fingerprint: string;
  /** Changes whenever a document or its format changes: names the corpus folder and its index. */
  corpusFingerprint: string;
  files: CorpusFile[];
  queries: KnownItemQuery[];
  unanswerable: UnanswerableQuestion[];
}

/** Builds (or finds, when already written) the evaluation set of `size` under `cacheRoot`. */
export async function buildEvalSet(size: EvalSize, cacheRoot = DEFAULT_CACHE): Promise<EvalSet> {
  const random = seededRandom(SEED);
  const sources = readAllSources();
  const selected = selectDocuments(sources, size, random);
  const formats = shuffle(random, selected).map((document, i) => ({ document, format: FORMATS[i % FORMATS.length] as Format }));
  formats.sort((a, b) => a.document.id.localeCompare(b.document.id));
  const corpus = formats.map(({ document, format }) => ({ document, format, path: `${document.kind}/${document.id}.${format}` }));

  const queries = knownItemQueries(corpus, sources, seededRandom, SEED);
  const { kept } = unanswerableQuestions(corpus);
  // As many technical as everyday ones when the set is cut.
  const half = UNANSWERABLE_COUNT[size] / 2;
  const unanswerable = [...kept.filter((q) => !q.technical).slice(0, half), ...kept.filter((q) => q.technical).slice(0, half)];
  const files: CorpusFile[] = corpus.map(({ document, format, path }) => ({
    path,
    id: document.id,
    kind: document.kind,
    format,
    origin: document.origin,
    title: document.title,
    words: document.sections.reduce((sum, section) => sum + wordCount(section.paragraphs.join(' ')), 0),
  }));
  const hash = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 12);
  const corpusFingerprint = hash({ RENDERING_VERSION, corpus: corpus.map(({ document, path }) => ({ document, path })) });
  const fingerprint = hash({ corpusFingerprint, queries, unanswerable });

  const dir = join(cacheRoot, `corpus-${size}-${corpusFingerprint}`);
  if (!existsSync(dir)) {
    // Written beside, then renamed: an interrupted build never leaves a folder that looks complete.
    const partial = `${dir}.partial`;
    rmSync(partial, { recursive: true, force: true });
    for (const { document, format, path } of corpus) {
      mkdirSync(dirname(join(partial, path)), { recursive: true });
      writeFileSync(join(partial, path), await renderDocument(document, format));
    }
    renameSync(partial, dir);
    removeStale(cacheRoot, `corpus-${size}-`, dir);
  }
  // Beside the corpus, for people reading the set (the queries change more often than the documents).
  writeFileSync(
    join(cacheRoot, `labelled-set-${size}.json`),
    `${JSON.stringify(labelledSet({ size, fingerprint, corpusFingerprint, files, queries, unanswerable }), null, 2)}\n`,
  );
  return { size, dir, fingerprint, corpusFingerprint, files, queries, unanswerable };
}

/** What is worth keeping in git: the queries with their documents' origins, not the documents. */
export function labelledSet(set: Omit<EvalSet, 'dir'>) {
  return {
    size: set.size,
    fingerprint: set.fingerprint,
    corpusFingerprint: set.corpusFingerprint,
    documents: set.files.map(({ path, origin, words }) => ({ path, origin, words })),
    queries: set.queries,
    unanswerable: set.unanswerable,
  };
}

/** Deletes the older folders named `prefix*` under `root` (earlier versions of the set), all but `keep`. */
export function removeStale(root: string, prefix: string, keep: string): void {
  for (const name of readdirSync(root)) {
    if (name.startsWith(prefix) && join(root, name) !== keep) rmSync(join(root, name), { recursive: true, force: true });
  }
}

export function readLabelledSet(path: string): ReturnType<typeof labelledSet> | undefined {
  return existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : undefined;
}

function selectDocuments(all: readonly SourceDocument[], size: EvalSize, random: () => number): SourceDocument[] {
  const selected: SourceDocument[] = [];
  for (const [kind, quota] of Object.entries(QUOTAS[size]) as [SourceKind, number][]) {
    const candidates = all.filter((document) => document.kind === kind).sort((a, b) => a.id.localeCompare(b.id));
    selected.push(...shuffle(random, candidates).slice(0, quota));
  }
  return size === 'small' ? selected.map(shorten) : selected;
}

function shorten(document: SourceDocument): SourceDocument {
  let left = SMALL_MAX_WORDS;
  const sections = document.sections
    .map((section) => {
      const paragraphs: string[] = [];
      for (const paragraph of section.paragraphs) {
        if (left <= 0) break;
        const kept = paragraph.split(' ').slice(0, left).join(' ');
        paragraphs.push(kept);
        left -= wordCount(kept);
      }
      return { ...section, paragraphs };
    })
    .filter((section) => section.paragraphs.length > 0);
  return { ...document, sections };
}
